package iceberg

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/tributary-io/tributary/formats/parquet"
)

// Field ids in the data files (docs/iceberg.md, "Field ids"). Iceberg
// readers resolve a Parquet file's columns by the field_id of its schema
// elements; a file without them is read through the table's name mapping,
// which Spark, Flink and pyiceberg apply but IcebergGenerics and other
// readers do not. So every file the loader and the maintenance jobs write
// carries the ids, as Arrow field metadata (parquet.FieldIDKey) that both
// Parquet engines write into the schema, nested fields included.

// AliasesKey is the Arrow field metadata key of a field's former names,
// comma-separated (formats/schema writes it from a field's aliases, Avro's
// and the YAML schema's): a column of the table with one of these names,
// and none with the field's own, is renamed, keeping its id.
const AliasesKey = "aliases"

// aliases are the former names f's metadata lists.
func aliases(f arrow.Field) []string {
	i := f.Metadata.FindKey(AliasesKey)
	if i < 0 {
		return nil
	}
	var out []string
	for _, a := range strings.Split(f.Metadata.Values()[i], ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// arrowFieldID is the Parquet field id f carries, 0 without one (the
// Parquet reader gives -1 to a column that has none).
func arrowFieldID(f arrow.Field) int {
	i := f.Metadata.FindKey(parquet.FieldIDKey)
	if i < 0 {
		return 0
	}
	id, err := strconv.Atoi(f.Metadata.Values()[i])
	if err != nil || id <= 0 {
		return 0
	}
	return id
}

// WithFieldIDs is a with every field, nested ones included, given the id
// that s (a table schema) has for it, matched by name: the schema to write
// a table's data files with. A field s does not have gets none.
func WithFieldIDs(a *arrow.Schema, s *Schema) *arrow.Schema {
	return stampIDs(a, mapFields(s.Fields), false)
}

// withMappedIDs is a with the ids of mapping (a table's name mapping, which
// knows a renamed column by its former names too) on the fields that carry
// none: a file written before the ids, rewritten by a compaction or an
// overwrite, gets them. Ids the file has are kept.
func withMappedIDs(a *arrow.Schema, mapping []mapped) *arrow.Schema {
	return stampIDs(a, mapping, true)
}

func stampIDs(a *arrow.Schema, mapping []mapped, keep bool) *arrow.Schema {
	fields := make([]arrow.Field, len(a.Fields()))
	for i, f := range a.Fields() {
		fields[i] = stampField(f, mapping, keep)
	}
	md := a.Metadata()
	return arrow.NewSchema(fields, &md)
}

func stampField(f arrow.Field, mapping []mapped, keep bool) arrow.Field {
	return stampAs(f, f.Name, mapping, keep)
}

// stampAs is stampField for a field that the mapping names name: a list's
// element is "element" whatever Arrow calls it ("item").
func stampAs(f arrow.Field, name string, mapping []mapped, keep bool) arrow.Field {
	var m *mapped
	id := 0
	if keep {
		id = arrowFieldID(f)
	}
	for i := range mapping {
		if id > 0 && mapping[i].ID == id || id == 0 && slices.Contains(mapping[i].Names, name) {
			m = &mapping[i]
			break
		}
	}
	var children []mapped
	if m != nil {
		id, children = m.ID, m.Fields
	}
	f.Type = stampType(f.Type, children, keep)
	f.Metadata = setFieldID(f.Metadata, id)
	return f
}

func stampType(dt arrow.DataType, children []mapped, keep bool) arrow.DataType {
	switch t := dt.(type) {
	case *arrow.StructType:
		fs := make([]arrow.Field, t.NumFields())
		for i, f := range t.Fields() {
			fs[i] = stampField(f, children, keep)
		}
		return arrow.StructOf(fs...)
	case *arrow.MapType:
		k := stampField(t.KeyField(), children, keep)
		v := stampField(t.ItemField(), children, keep)
		m := arrow.MapOfWithMetadata(k.Type, k.Metadata, v.Type, v.Metadata)
		m.SetItemNullable(v.Nullable)
		m.KeysSorted = t.KeysSorted
		return m
	case *arrow.ListType:
		e := stampAs(t.ElemField(), "element", children, keep)
		return arrow.ListOfField(e)
	}
	return dt
}

// setFieldID is md with its field id set to id, or removed for 0.
func setFieldID(md arrow.Metadata, id int) arrow.Metadata {
	var keys, values []string
	for i, k := range md.Keys() {
		if k != parquet.FieldIDKey {
			keys, values = append(keys, k), append(values, md.Values()[i])
		}
	}
	if id > 0 {
		keys, values = append(keys, parquet.FieldIDKey), append(values, strconv.Itoa(id))
	}
	if len(keys) == 0 {
		return arrow.Metadata{}
	}
	return arrow.NewMetadata(keys, values)
}

// ErrFieldIDsChanged says files were written with field ids the table no
// longer gives their columns: its schema changed between the plan that
// chose the ids and the commit (another writer added a column first). The
// files must be written again with the table's ids (the loader does).
var ErrFieldIDsChanged = fmt.Errorf("%w: the table's schema changed since the files were written", ErrIncompatible)

// checkIDs says whether the ids a's fields carry are the ones the table
// schema fs gives them (matched by name): files written with the ids of a
// schema planned before another committer evolved the table differently
// would read as the wrong columns.
func checkIDs(a []arrow.Field, fs []Field, at string) error {
	for _, f := range a {
		var tf *Field
		for i := range fs {
			if fs[i].Name == f.Name {
				tf = &fs[i]
				break
			}
		}
		if tf == nil {
			continue
		}
		if id := arrowFieldID(f); id > 0 && id != tf.ID {
			return fmt.Errorf("%w: column %s%s was written with field id %d, the table's is %d",
				ErrFieldIDsChanged, at, f.Name, id, tf.ID)
		}
		if err := checkTypeIDs(f.Type, tf.Type, at+f.Name); err != nil {
			return err
		}
	}
	return nil
}

func checkTypeIDs(dt arrow.DataType, t Type, at string) error {
	check := func(f arrow.Field, want int, name string) error {
		if id := arrowFieldID(f); id > 0 && id != want {
			return fmt.Errorf("%w: %s.%s was written with field id %d, the table's is %d",
				ErrFieldIDsChanged, at, name, id, want)
		}
		return nil
	}
	switch a := dt.(type) {
	case *arrow.StructType:
		if t.Struct != nil {
			return checkIDs(a.Fields(), t.Struct.Fields, at+".")
		}
	case *arrow.MapType:
		if t.Map != nil {
			if err := check(a.KeyField(), t.Map.KeyID, "key"); err != nil {
				return err
			}
			if err := check(a.ItemField(), t.Map.ValueID, "value"); err != nil {
				return err
			}
			if err := checkTypeIDs(a.KeyType(), t.Map.Key, at+".key"); err != nil {
				return err
			}
			return checkTypeIDs(a.ItemType(), t.Map.Value, at+".value")
		}
	case *arrow.ListType:
		if t.List != nil {
			if err := check(a.ElemField(), t.List.ElementID, "element"); err != nil {
				return err
			}
			return checkTypeIDs(a.Elem(), t.List.Element, at+".element")
		}
	}
	return nil
}

// nameMapping is the table's name mapping for schema s: every field by its
// current name and, from the mapping the table had (prev, its JSON), the
// names it had before, so that files written before a rename, without
// field ids, still read as the renamed column. A name two ids would share
// at one level is an error: Iceberg's readers refuse such a mapping
// (NameMappingParser: "Multiple entries with same key"), and which column
// a file's column is would be a guess.
func nameMapping(s *Schema, prev string) (string, error) {
	var old []mapped
	_ = json.Unmarshal([]byte(prev), &old) // none readable: the current names
	names := map[int][]string{}
	var collect func([]mapped)
	collect = func(ms []mapped) {
		for _, m := range ms {
			names[m.ID] = append(names[m.ID], m.Names...)
			collect(m.Fields)
		}
	}
	collect(old)
	cur := mapFields(s.Fields)
	var merge func([]mapped) error
	merge = func(ms []mapped) error {
		owner := map[string]int{}
		for i := range ms {
			for _, n := range names[ms[i].ID] {
				if !slices.Contains(ms[i].Names, n) {
					ms[i].Names = append(ms[i].Names, n)
				}
			}
			for _, n := range ms[i].Names {
				if id, ok := owner[n]; ok && id != ms[i].ID {
					return fmt.Errorf("%w: the name mapping would give the name %s to field ids %d and %d (a column took a renamed column's former name)",
						ErrIncompatible, n, id, ms[i].ID)
				}
				owner[n] = ms[i].ID
			}
			if err := merge(ms[i].Fields); err != nil {
				return err
			}
		}
		return nil
	}
	if err := merge(cur); err != nil {
		return "", err
	}
	b, _ := json.Marshal(cur)
	return string(b), nil
}

// parseMapping reads a table's name mapping; without one, its current
// schema's.
func parseMapping(md *Metadata) []mapped {
	var ms []mapped
	if err := json.Unmarshal([]byte(md.Properties["schema.name-mapping.default"]), &ms); err == nil && len(ms) > 0 {
		return ms
	}
	if s := md.CurrentSchema(); s != nil {
		return mapFields(s.Fields)
	}
	return nil
}
