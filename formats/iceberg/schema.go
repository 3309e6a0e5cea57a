package iceberg

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/apache/arrow/go/v15/arrow"
)

// Schema is an Iceberg schema: a struct whose fields carry ids that stay the
// same for the life of the table, whatever their names do.
type Schema struct {
	ID     int     `json:"schema-id"`
	Type   string  `json:"type"` // always "struct"
	Fields []Field `json:"fields"`
}

// Field is a field of a struct. Type is a primitive's name ("long",
// "timestamptz", "decimal(9,2)"), or a *StructType, *ListType or *MapType.
type Field struct {
	ID       int    `json:"id"`
	Name     string `json:"name"`
	Required bool   `json:"required"`
	Type     Type   `json:"type"`
	Doc      string `json:"doc,omitempty"`
}

// Type is an Iceberg type as it is written in JSON.
type Type struct {
	Primitive string
	Struct    *StructType
	List      *ListType
	Map       *MapType
}

// StructType, ListType and MapType are Iceberg's nested types.
type StructType struct {
	Type   string  `json:"type"` // "struct"
	Fields []Field `json:"fields"`
}

type ListType struct {
	Type            string `json:"type"` // "list"
	ElementID       int    `json:"element-id"`
	Element         Type   `json:"element"`
	ElementRequired bool   `json:"element-required"`
}

type MapType struct {
	Type          string `json:"type"` // "map"
	KeyID         int    `json:"key-id"`
	Key           Type   `json:"key"`
	ValueID       int    `json:"value-id"`
	Value         Type   `json:"value"`
	ValueRequired bool   `json:"value-required"`
}

func (t Type) MarshalJSON() ([]byte, error) {
	switch {
	case t.Struct != nil:
		return json.Marshal(t.Struct)
	case t.List != nil:
		return json.Marshal(t.List)
	case t.Map != nil:
		return json.Marshal(t.Map)
	}
	return json.Marshal(t.Primitive)
}

func (t *Type) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &t.Primitive)
	}
	var probe struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	switch probe.Type {
	case "struct":
		t.Struct = &StructType{}
		return json.Unmarshal(b, t.Struct)
	case "list":
		t.List = &ListType{}
		return json.Unmarshal(b, t.List)
	case "map":
		t.Map = &MapType{}
		return json.Unmarshal(b, t.Map)
	}
	return fmt.Errorf("formats/iceberg: unknown type %s", b)
}

func (t Type) String() string {
	b, _ := t.MarshalJSON()
	return string(b)
}

// Field returns the top-level field called name.
func (s *Schema) Field(name string) (Field, bool) {
	for _, f := range s.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// fieldByID returns the top-level field of id (none for id <= 0).
func (s *Schema) fieldByID(id int) (Field, bool) {
	for _, f := range s.Fields {
		if id > 0 && f.ID == id {
			return f, true
		}
	}
	return Field{}, false
}

// ErrIncompatible says a new schema cannot evolve the table's: a column
// changed to a type its old values cannot be read as.
var ErrIncompatible = errors.New("formats/iceberg: incompatible schema change")

// Evolve is the table schema for data written with the Arrow schema a,
// given the table's current schema prev (nil for a new table) and the
// highest column id the table ever used. Columns are matched by name, or
// by a former name a field's aliases list (AliasesKey: the column is
// renamed, keeping its id); ids a's fields carry must be the ones the
// result gives them (checkIDs). A
// column keeps its id and a type may widen (int to long, float to double, a
// decimal's precision); a new column gets the next id and is optional (old
// files do not have it); a column the data no longer has stays in the
// table, read as null from the new files. Every column is optional, so that
// a later schema may leave any of them out. changed says whether the
// result differs from prev.
func Evolve(a *arrow.Schema, prev *Schema, lastID int) (next *Schema, newLastID int, changed bool, err error) {
	return evolve(a, prev, lastID, nil)
}

// EvolveTable is Evolve on the table md (nil for a new one), knowing the
// names its columns had before (its name mapping): a new column may not
// take a renamed column's former name, since files written before the
// field ids read that name as the renamed column (the mapping would name
// two ids alike, which Iceberg's readers refuse), and an alias may name a
// column by any name it had.
func EvolveTable(a *arrow.Schema, md *Metadata) (next *Schema, newLastID int, changed bool, err error) {
	if md == nil {
		return evolve(a, nil, 0, nil)
	}
	return evolve(a, md.CurrentSchema(), md.LastColumnID, parseMapping(md))
}

func evolve(a *arrow.Schema, prev *Schema, lastID int, mapping []mapped) (next *Schema, newLastID int, changed bool, err error) {
	e := &evolver{last: lastID}
	var old []Field
	if prev != nil {
		old = prev.Fields
	}
	fields, err := e.structFields(a.Fields(), old, "", mapping)
	if err != nil {
		return nil, 0, false, err
	}
	if err := checkIDs(a.Fields(), fields, ""); err != nil {
		return nil, 0, false, err
	}
	next = &Schema{Type: "struct", Fields: fields}
	if prev == nil {
		return next, e.last, true, nil
	}
	next.ID = prev.ID
	a1, _ := json.Marshal(prev.Fields)
	a2, _ := json.Marshal(next.Fields)
	if string(a1) != string(a2) {
		next.ID = prev.ID + 1
		changed = true
	}
	return next, e.last, changed, nil
}

type evolver struct{ last int }

func (e *evolver) id() int { e.last++; return e.last }

// structFields evolves the fields of one struct level (the table's top
// level for at ""): old are the table's, mapping the name mapping's
// entries of that level (the names each id had).
func (e *evolver) structFields(fs []arrow.Field, old []Field, at string, mapping []mapped) ([]Field, error) {
	byName := map[string]Field{}
	byID := map[int]Field{}
	for _, f := range old {
		byName[f.Name] = f
		byID[f.ID] = f
	}
	// formerly is the id a name belonged to before a rename, for the
	// names that are no current column's.
	formerly := map[string]int{}
	for _, m := range mapping {
		for _, n := range m.Names {
			if _, ok := byName[n]; !ok {
				formerly[n] = m.ID
			}
		}
	}
	named := map[string]bool{}
	aliasOf := map[string]string{}
	for _, f := range fs {
		named[f.Name] = true
	}
	// An ambiguous rename is refused rather than resolved by field order
	// or by name: which column's id a field takes decides what its old
	// files read as, for good.
	for _, f := range fs {
		for _, a := range aliases(f) {
			if named[a] {
				return nil, fmt.Errorf("%w: ambiguous rename: field %s%s lists %s in its aliases, but the data has a field %s%s too (a swap of names, or an alias of a field still there: give the fields new names)",
					ErrIncompatible, at, f.Name, a, at, a)
			}
			if other, ok := aliasOf[a]; ok {
				return nil, fmt.Errorf("%w: ambiguous rename: fields %s%s and %s%s both list %s in their aliases (only one field can take its column)",
					ErrIncompatible, at, other, at, f.Name, a)
			}
			aliasOf[a] = f.Name
		}
	}
	out := make([]Field, 0, len(fs)+len(old))
	seen := map[string]bool{}
	for _, f := range fs {
		seen[f.Name] = true
		var prev *Field
		if p, ok := byName[f.Name]; ok {
			prev = &p
		} else {
			// A rename: the column of a former name keeps its id. The name
			// may be the column's current one or any it had before.
			for _, a := range aliases(f) {
				p, ok := byName[a]
				if !ok {
					p, ok = byID[formerly[a]]
				}
				if ok && !named[p.Name] && !seen[p.Name] {
					prev, seen[p.Name] = &p, true
					break
				}
			}
		}
		id := 0
		var prevType *Type
		if prev != nil {
			id, prevType = prev.ID, &prev.Type
		} else {
			if was, ok := formerly[f.Name]; ok {
				now := "a dropped column"
				if p, ok := byID[was]; ok {
					now = p.Name
				}
				return nil, fmt.Errorf("%w: column %s%s was renamed to %s (field id %d): files written before the field ids read %s as that column; list %s in the aliases of %s to write that column, or give the new field another name",
					ErrIncompatible, at, f.Name, at+now, was, f.Name, f.Name, at+now)
			}
			id = e.id()
		}
		var children []mapped
		for _, m := range mapping {
			if m.ID == id {
				children = m.Fields
			}
		}
		t, err := e.typ(f.Type, prevType, at+f.Name, children)
		if err != nil {
			return nil, err
		}
		out = append(out, Field{ID: id, Name: f.Name, Type: t})
	}
	for _, f := range old { // kept: old files still have them
		if !seen[f.Name] {
			out = append(out, f)
		}
	}
	return out, nil
}

// typ evolves one type; mapping is the name mapping's entries below it.
func (e *evolver) typ(a arrow.DataType, prev *Type, at string, mapping []mapped) (Type, error) {
	below := func(id int) []mapped {
		for _, m := range mapping {
			if m.ID == id {
				return m.Fields
			}
		}
		return nil
	}
	switch a := a.(type) {
	case *arrow.StructType:
		var old []Field
		if prev != nil {
			if prev.Struct == nil {
				return Type{}, fmt.Errorf("%w: column %s was %s and is now a struct", ErrIncompatible, at, prev)
			}
			old = prev.Struct.Fields
		}
		fs, err := e.structFields(a.Fields(), old, at+".", mapping)
		if err != nil {
			return Type{}, err
		}
		return Type{Struct: &StructType{Type: "struct", Fields: fs}}, nil
	case *arrow.ListType:
		l := &ListType{Type: "list"}
		var prevElem *Type
		if prev != nil {
			if prev.List == nil {
				return Type{}, fmt.Errorf("%w: column %s was %s and is now a list", ErrIncompatible, at, prev)
			}
			l.ElementID, prevElem = prev.List.ElementID, &prev.List.Element
		} else {
			l.ElementID = e.id()
		}
		el, err := e.typ(a.Elem(), prevElem, at+".element", below(l.ElementID))
		if err != nil {
			return Type{}, err
		}
		l.Element = el
		return Type{List: l}, nil
	case *arrow.MapType:
		m := &MapType{Type: "map"}
		var pk, pv *Type
		if prev != nil {
			if prev.Map == nil {
				return Type{}, fmt.Errorf("%w: column %s was %s and is now a map", ErrIncompatible, at, prev)
			}
			m.KeyID, m.ValueID, pk, pv = prev.Map.KeyID, prev.Map.ValueID, &prev.Map.Key, &prev.Map.Value
		} else {
			m.KeyID, m.ValueID = e.id(), e.id()
		}
		k, err := e.typ(a.KeyType(), pk, at+".key", below(m.KeyID))
		if err != nil {
			return Type{}, err
		}
		v, err := e.typ(a.ItemType(), pv, at+".value", below(m.ValueID))
		if err != nil {
			return Type{}, err
		}
		m.Key, m.Value = k, v
		return Type{Map: m}, nil
	case *arrow.DictionaryType:
		return e.typ(a.ValueType, prev, at, mapping)
	}
	p, err := primitive(a)
	if err != nil {
		return Type{}, fmt.Errorf("column %s: %w", at, err)
	}
	if prev == nil || prev.Primitive == p {
		return Type{Primitive: p}, nil
	}
	if prev.Primitive == "" {
		return Type{}, fmt.Errorf("%w: column %s was %s and is now %s", ErrIncompatible, at, prev, p)
	}
	switch {
	case widens(p, prev.Primitive):
		// Data narrower than the table (int into long): the table keeps its
		// type, readers widen the file's values.
		return *prev, nil
	case widens(prev.Primitive, p):
		return Type{Primitive: p}, nil
	}
	return Type{}, fmt.Errorf("%w: column %s was %s and is now %s", ErrIncompatible, at, prev.Primitive, p)
}

// widens says whether values of type from can be read as type to, the
// promotions Iceberg allows.
func widens(from, to string) bool {
	switch {
	case from == "int" && to == "long", from == "float" && to == "double":
		return true
	}
	var p1, s1, p2, s2 int
	if n, _ := fmt.Sscanf(from, "decimal(%d,%d)", &p1, &s1); n == 2 {
		if n, _ := fmt.Sscanf(to, "decimal(%d,%d)", &p2, &s2); n == 2 {
			return s1 == s2 && p2 >= p1
		}
	}
	return false
}

func primitive(a arrow.DataType) (string, error) {
	switch a.ID() {
	case arrow.BOOL:
		return "boolean", nil
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.UINT8, arrow.UINT16:
		return "int", nil
	case arrow.INT64, arrow.UINT32:
		return "long", nil
	case arrow.FLOAT16, arrow.FLOAT32:
		return "float", nil
	case arrow.FLOAT64:
		return "double", nil
	case arrow.STRING, arrow.LARGE_STRING:
		return "string", nil
	case arrow.BINARY, arrow.LARGE_BINARY:
		return "binary", nil
	case arrow.DATE32:
		return "date", nil
	case arrow.TIMESTAMP:
		if a.(*arrow.TimestampType).TimeZone != "" {
			return "timestamptz", nil
		}
		return "timestamp", nil
	case arrow.DECIMAL128:
		d := a.(*arrow.Decimal128Type)
		return fmt.Sprintf("decimal(%d, %d)", d.Precision, d.Scale), nil
	case arrow.FIXED_SIZE_BINARY:
		return fmt.Sprintf("fixed[%d]", a.(*arrow.FixedSizeBinaryType).ByteWidth), nil
	}
	return "", fmt.Errorf("formats/iceberg: no Iceberg type for Arrow %s", a)
}

// NameMapping is the table's schema.name-mapping.default: it tells readers
// which column of a Parquet file without field ids is which field.
func (s *Schema) NameMapping() string {
	b, _ := json.Marshal(mapFields(s.Fields))
	return string(b)
}

type mapped struct {
	ID     int      `json:"field-id"`
	Names  []string `json:"names"`
	Fields []mapped `json:"fields,omitempty"`
}

func mapFields(fs []Field) []mapped {
	out := make([]mapped, 0, len(fs))
	for _, f := range fs {
		out = append(out, mapped{ID: f.ID, Names: []string{f.Name}, Fields: mapNested(f.Type)})
	}
	return out
}

func mapNested(t Type) []mapped {
	switch {
	case t.Struct != nil:
		return mapFields(t.Struct.Fields)
	case t.List != nil:
		return []mapped{{ID: t.List.ElementID, Names: []string{"element"}, Fields: mapNested(t.List.Element)}}
	case t.Map != nil:
		return []mapped{{ID: t.Map.KeyID, Names: []string{"key"}, Fields: mapNested(t.Map.Key)},
			{ID: t.Map.ValueID, Names: []string{"value"}, Fields: mapNested(t.Map.Value)}}
	}
	return nil
}
