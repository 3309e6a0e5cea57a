package parquet

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	pgo "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding"
)

// The Parquet schema of an Arrow schema, as parquet-go nodes, written as
// pqarrow writes it: the same column order, repetitions and logical types
// (STRING, INT(32|64), TIMESTAMP(MILLIS|MICROS, isAdjustedToUTC), DATE,
// three-level LIST with list/element, MAP with key_value/key/value), so
// that the engine does not change what readers see.

// pnode is an Arrow field compiled for writing: its place in the Parquet
// schema and the levels of its values.
type pnode struct {
	name     string
	kind     pkind
	nullable bool
	// rep is, for a list or map, the repetition level of its entries.
	rep int
	// col is a leaf's column index; first and last the range of leaves
	// below a group (struct, list, map).
	col, first, last int
	dict             bool
	children         []*pnode // struct fields; list: element; map: key, value
}

type pkind uint8

const (
	pString pkind = iota
	pBinary
	pBool
	pInt32
	pInt64
	pFloat32
	pFloat64
	pDate32
	pTimestamp
	pStruct
	pList
	pMap
)

// pgoSchema compiles schema into its parquet-go schema and the pnodes of
// its top-level fields. dict says whether a leaf, named by its dotted
// Parquet path, is dictionary-encoded.
func pgoSchema(schema *arrow.Schema, dict func(path string, k pkind) bool) (*pgo.Schema, []*pnode, error) {
	c := &schemaCompiler{dict: dict}
	root := &orderedGroup{}
	var nodes []*pnode
	for _, f := range schema.Fields() {
		pn, node, err := c.field(f.Name, f.Name, f.Type, f.Nullable, fieldID(f.Metadata), 0)
		if err != nil {
			return nil, nil, err
		}
		nodes = append(nodes, pn)
		root.add(f.Name, node)
	}
	if c.col == 0 {
		return nil, nil, fmt.Errorf("schema without columns")
	}
	return pgo.NewSchema("schema", root), nodes, nil
}

type schemaCompiler struct {
	dict func(string, pkind) bool
	col  int
}

// field compiles one field at path, below rep repeated ancestors; id is its
// Parquet field id (0: none).
func (c *schemaCompiler) field(name, path string, dt arrow.DataType, nullable bool, id, rep int) (*pnode, pgo.Node, error) {
	pn := &pnode{name: name, nullable: nullable, first: c.col}
	var node pgo.Node
	leaf := func(k pkind, n pgo.Node) {
		pn.kind, pn.col = k, c.col
		c.col++
		if k != pBool && c.dict(path, k) {
			pn.dict = true
			n = pgo.Encoded(n, &pgo.RLEDictionary)
		}
		node = n
	}
	switch dt := dt.(type) {
	case *arrow.StringType:
		leaf(pString, pgo.String())
	case *arrow.BinaryType:
		leaf(pBinary, pgo.Leaf(pgo.ByteArrayType))
	case *arrow.BooleanType:
		leaf(pBool, pgo.Leaf(pgo.BooleanType))
	case *arrow.Int32Type:
		leaf(pInt32, pgo.Int(32))
	case *arrow.Int64Type:
		leaf(pInt64, pgo.Int(64))
	case *arrow.Float32Type:
		leaf(pFloat32, pgo.Leaf(pgo.FloatType))
	case *arrow.Float64Type:
		leaf(pFloat64, pgo.Leaf(pgo.DoubleType))
	case *arrow.Date32Type:
		leaf(pDate32, pgo.Date())
	case *arrow.TimestampType:
		var unit pgo.TimeUnit
		switch dt.Unit {
		case arrow.Millisecond:
			unit = pgo.Millisecond
		case arrow.Microsecond:
			unit = pgo.Microsecond
		case arrow.Nanosecond:
			unit = pgo.Nanosecond
		default:
			return nil, nil, fmt.Errorf("%s: timestamp in seconds has no Parquet type", path)
		}
		// As pqarrow: a time zone means an instant (UTC-adjusted).
		leaf(pTimestamp, pgo.TimestampAdjusted(unit, dt.TimeZone != ""))
	case *arrow.StructType:
		if dt.NumFields() == 0 {
			return nil, nil, fmt.Errorf("%s: a struct without fields has no Parquet type", path)
		}
		pn.kind = pStruct
		g := &orderedGroup{}
		for _, f := range dt.Fields() {
			cn, n, err := c.field(f.Name, path+"."+f.Name, f.Type, f.Nullable, fieldID(f.Metadata), rep)
			if err != nil {
				return nil, nil, err
			}
			pn.children = append(pn.children, cn)
			g.add(f.Name, n)
		}
		node = g
	case *arrow.MapType: // before ListType's case: a map is a list
		pn.kind, pn.rep = pMap, rep+1
		k, kn, err := c.field("key", path+".key_value.key", dt.KeyType(), false, fieldID(dt.KeyField().Metadata), rep+1)
		if err != nil {
			return nil, nil, err
		}
		v, vn, err := c.field("value", path+".key_value.value", dt.ItemType(), dt.ItemField().Nullable, fieldID(dt.ItemField().Metadata), rep+1)
		if err != nil {
			return nil, nil, err
		}
		pn.children = []*pnode{k, v}
		node = pgo.Map(kn, vn)
	case *arrow.ListType:
		pn.kind, pn.rep = pList, rep+1
		e, en, err := c.field("element", path+".list.element", dt.Elem(), dt.ElemField().Nullable, fieldID(dt.ElemField().Metadata), rep+1)
		if err != nil {
			return nil, nil, err
		}
		pn.children = []*pnode{e}
		node = pgo.List(en)
	default:
		return nil, nil, fmt.Errorf("%s: no Parquet type for Arrow %s", path, dt)
	}
	pn.last = c.col
	if nullable {
		node = pgo.Optional(node)
	} else {
		node = pgo.Required(node)
	}
	if id > 0 {
		node = pgo.FieldID(node, id)
	}
	return pn, node, nil
}

// FieldIDKey is the Arrow field metadata key of a Parquet field id, as
// pqarrow writes and reads it: Iceberg readers resolve a file's columns by
// these ids (docs/iceberg.md, "Field ids").
const FieldIDKey = "PARQUET:field_id"

// fieldID is the field id md carries, 0 without one.
func fieldID(md arrow.Metadata) int {
	i := md.FindKey(FieldIDKey)
	if i < 0 {
		return 0
	}
	id, err := strconv.Atoi(md.Values()[i])
	if err != nil || id <= 0 {
		return 0
	}
	return id
}

// orderedGroup is a group node that keeps its fields in the order given:
// parquet-go's Group is a map and sorts them by name, which would reorder
// the columns against the Arrow schema stored in the footer.
type orderedGroup struct {
	fields []pgo.Field
}

type groupField struct {
	pgo.Node
	name string
}

func (f *groupField) Name() string                      { return f.name }
func (f *groupField) Value(reflect.Value) reflect.Value { return reflect.Value{} }
func (g *orderedGroup) add(name string, n pgo.Node) {
	g.fields = append(g.fields, &groupField{n, name})
}
func (g *orderedGroup) ID() int                     { return 0 }
func (g *orderedGroup) Type() pgo.Type              { return pgo.Group{}.Type() }
func (g *orderedGroup) Optional() bool              { return false }
func (g *orderedGroup) Repeated() bool              { return false }
func (g *orderedGroup) Required() bool              { return true }
func (g *orderedGroup) Leaf() bool                  { return false }
func (g *orderedGroup) Fields() []pgo.Field         { return g.fields }
func (g *orderedGroup) Encoding() encoding.Encoding { return nil }
func (g *orderedGroup) Compression() compress.Codec { return nil }
func (g *orderedGroup) GoType() reflect.Type        { return g.group().GoType() }
func (g *orderedGroup) String() string {
	names := make([]string, len(g.fields))
	for i, f := range g.fields {
		names[i] = f.Name()
	}
	return "group {" + strings.Join(names, ", ") + "}"
}

// group is g as parquet-go's Group, for what does not depend on order.
func (g *orderedGroup) group() pgo.Group {
	m := make(pgo.Group, len(g.fields))
	for _, f := range g.fields {
		m[f.Name()] = f
	}
	return m
}
