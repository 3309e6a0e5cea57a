package parquet

import (
	"math"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// kv is one map entry of the test rows; maps keep their order in Parquet.
type kv struct {
	K string
	V any
}

// allTypes is an Arrow schema with every type formats/schema maps to, as
// schema.Type.Arrow builds them, nested in lists, maps and structs.
var allTypes = arrow.NewSchema([]arrow.Field{
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "s_req", Type: arrow.BinaryTypes.String},
	{Name: "i32", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "i64", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "f32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "f64", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "b", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "ts_ms", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "ts_us", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "bin", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "l_s", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "l_i64", Type: arrow.ListOf(arrow.PrimitiveTypes.Int64), Nullable: true},
	{Name: "m_s", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.BinaryTypes.String), Nullable: true},
	{Name: "m_f64", Type: arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Float64), Nullable: true},
	{Name: "st", Type: arrow.StructOf(
		arrow.Field{Name: "url", Type: arrow.BinaryTypes.String, Nullable: true},
		arrow.Field{Name: "n", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
		arrow.Field{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, Nullable: true},
		arrow.Field{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
		arrow.Field{Name: "inner", Type: arrow.StructOf(
			arrow.Field{Name: "ok", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
		), Nullable: true},
	), Nullable: true},
}, nil)

// allRows are the round-trip rows of allTypes: nulls, empty lists and maps,
// unicode, extreme and negative numbers.
func allRows() []map[string]any {
	long := strings.Repeat("ẞ€😀", 3000)
	return []map[string]any{
		{ // everything set, ordinary values
			"s": "hello", "s_req": "a", "i32": int32(42), "i64": int64(1) << 40, "f32": float32(1.5), "f64": 3.25,
			"b": true, "ts_ms": int64(1700000000123), "ts_us": int64(1700000000123456), "d": int32(19675),
			"bin": []byte{0, 1, 2, 0xff}, "l_s": []any{"x", "y"}, "l_i64": []any{int64(1), int64(-2)},
			"m_s": []kv{{"k1", "v1"}, {"k2", "v2"}}, "m_f64": []kv{{"pi", 3.14159}},
			"st": map[string]any{"url": "https://example.com/a?b=c", "n": int32(7), "at": int64(1700000000000),
				"tags": []any{"t"}, "inner": map[string]any{"ok": false}},
		},
		{ // every nullable field null
			"s_req": "",
		},
		{ // empty strings, lists, maps and structs of nulls
			"s": "", "s_req": "empty", "bin": []byte{}, "l_s": []any{}, "l_i64": []any{}, "m_s": []kv{}, "m_f64": []kv{},
			"st": map[string]any{"tags": []any{}, "inner": map[string]any{}},
		},
		{ // extremes and negatives
			"s": "unicode: 日本語 ✓ Ünïcödé \u0000 nul", "s_req": long,
			"i32": int32(math.MinInt32), "i64": int64(math.MinInt64), "f32": float32(-math.MaxFloat32), "f64": -math.SmallestNonzeroFloat64,
			"b": false, "ts_ms": int64(-1), "ts_us": int64(-62135596800000000), "d": int32(-719162),
			"bin": []byte(long), "l_s": []any{nil, "", "ü"}, "l_i64": []any{int64(math.MaxInt64), nil, int64(math.MinInt64)},
			"m_s": []kv{{"", "empty key"}, {"null value", nil}, {"ключ", "значение"}}, "m_f64": []kv{{"inf", math.Inf(1)}, {"-inf", math.Inf(-1)}, {"max", math.MaxFloat64}},
			"st": map[string]any{"url": "", "n": int32(-1), "at": int64(253402300799999), "tags": []any{nil}},
		},
		{ // the other extremes
			"s_req": "max", "i32": int32(math.MaxInt32), "i64": int64(math.MaxInt64), "f32": float32(math.SmallestNonzeroFloat32), "f64": math.MaxFloat64,
			"ts_ms": int64(253402300799999), "ts_us": int64(0), "d": int32(2932896),
			"l_s": []any{strings.Repeat("long ", 1000)}, "m_s": []kv{{"a", ""}},
			"st": map[string]any{"inner": map[string]any{"ok": true}},
		},
	}
}

// buildRecord builds one record batch of schema from rows, given as allRows
// gives them.
func buildRecord(mem memory.Allocator, schema *arrow.Schema, rows []map[string]any) arrow.Record {
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	for _, row := range rows {
		for i, f := range schema.Fields() {
			appendValue(b.Field(i), f.Type, row[f.Name])
		}
	}
	return b.NewRecord()
}

func appendValue(b array.Builder, dt arrow.DataType, v any) {
	if v == nil {
		b.AppendNull()
		return
	}
	switch b := b.(type) {
	case *array.StringBuilder:
		b.Append(v.(string))
	case *array.Int32Builder:
		b.Append(v.(int32))
	case *array.Int64Builder:
		b.Append(v.(int64))
	case *array.Float32Builder:
		b.Append(v.(float32))
	case *array.Float64Builder:
		b.Append(v.(float64))
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.TimestampBuilder:
		b.Append(arrow.Timestamp(v.(int64)))
	case *array.Date32Builder:
		b.Append(arrow.Date32(v.(int32)))
	case *array.BinaryBuilder:
		b.Append(v.([]byte))
	case *array.MapBuilder: // before ListBuilder: a MapBuilder is one
		b.Append(true)
		mt := dt.(*arrow.MapType)
		for _, e := range v.([]kv) {
			appendValue(b.KeyBuilder(), mt.KeyType(), e.K)
			appendValue(b.ItemBuilder(), mt.ItemType(), e.V)
		}
	case *array.ListBuilder:
		b.Append(true)
		et := dt.(*arrow.ListType).Elem()
		for _, e := range v.([]any) {
			appendValue(b.ValueBuilder(), et, e)
		}
	case *array.StructBuilder:
		b.Append(true)
		m := v.(map[string]any)
		for i, f := range dt.(*arrow.StructType).Fields() {
			appendValue(b.FieldBuilder(i), f.Type, m[f.Name])
		}
	default:
		panic("appendValue: no case for " + dt.String())
	}
}
