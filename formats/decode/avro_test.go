package decode

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/hamba/avro/v2"

	"github.com/tributary-io/tributary/formats/schema"
)

// allTypesAvro is the Avro twin of allTypes, without lvl and env (they take
// their defaults) and with zz, which allTypes lacks (it goes to _extra).
const allTypesAvro = `{"type":"record","name":"All","fields":[
 {"name":"id","type":"string"},
 {"name":"s","type":["null","string"]},
 {"name":"i32","type":["null","int"]},
 {"name":"i64","type":["null","long"]},
 {"name":"f","type":["null","float"]},
 {"name":"d","type":["null","double"]},
 {"name":"b","type":["null","boolean"]},
 {"name":"ts","type":["null",{"type":"long","logicalType":"timestamp-millis"}]},
 {"name":"tsu","type":["null",{"type":"long","logicalType":"timestamp-micros"}]},
 {"name":"day","type":["null",{"type":"int","logicalType":"date"}]},
 {"name":"raw","type":["null","bytes"]},
 {"name":"tags","type":["null",{"type":"array","items":["null","string"]}]},
 {"name":"attrs","type":["null",{"type":"map","values":["null","long"]}]},
 {"name":"ctx","type":["null",{"type":"record","name":"Ctx","fields":[
   {"name":"page","type":{"type":"record","name":"Page","fields":[{"name":"url","type":"string"},{"name":"title","type":["null","string"]}]}},
   {"name":"ip","type":["null","string"]},
   {"name":"hist","type":["null",{"type":"array","items":["null",{"type":"record","name":"H","fields":[{"name":"n","type":["null","int"]}]}]}]}
 ]}]},
 {"name":"zz","type":["null","string"]}
]}`

func u(branch string, v any) any { return map[string]any{branch: v} }

func allTypesAvroValues() []map[string]any {
	null := map[string]any{"id": "n", "s": nil, "i32": nil, "i64": nil, "f": nil, "d": nil, "b": nil, "ts": nil, "tsu": nil,
		"day": nil, "raw": nil, "tags": nil, "attrs": nil, "ctx": nil, "zz": nil}
	full := map[string]any{
		"id": "日本語 😀", "s": u("string", "x\"\n"), "i32": u("int", int32(-2147483648)), "i64": u("long", int64(9223372036854775807)),
		"f": u("float", float32(1.5)), "d": u("double", -1e300), "b": u("boolean", true),
		"ts":    u("long.timestamp-millis", time.UnixMilli(-1).UTC()),
		"tsu":   u("long.timestamp-micros", time.UnixMicro(1714564800000001).UTC()),
		"day":   u("int.date", time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)),
		"raw":   u("bytes", []byte{0, 1, 2, 255}),
		"tags":  u("array", []any{u("string", "x"), nil, u("string", "")}),
		"attrs": u("map", map[string]any{"n": nil, "k": u("long", int64(-1))}),
		"ctx": u("Ctx", map[string]any{
			"page": map[string]any{"url": "/p", "title": nil},
			"ip":   u("string", "::1"),
			"hist": u("array", []any{u("H", map[string]any{"n": u("int", int32(1))}), nil}),
		}),
		"zz": u("string", "kept"),
	}
	empty := map[string]any{"id": "e", "s": nil, "i32": nil, "i64": u("long", int64(-9223372036854775808)), "f": nil, "d": nil, "b": u("boolean", false),
		"ts": nil, "tsu": nil, "day": nil, "raw": u("bytes", []byte{}), "tags": u("array", []any{}), "attrs": u("map", map[string]any{}),
		"ctx": nil, "zz": nil}
	return []map[string]any{null, full, empty}
}

var allTypesAvroWant = []string{
	`{"_extra":null,"attrs":null,"b":null,"ctx":null,"d":null,"day":null,"env":"prod","f":null,"i32":null,"i64":null,"id":"n","lvl":3,"raw":null,"s":null,"tags":null,"ts":null,"tsu":null}`,
	`{"_extra":"{\"zz\":\"kept\"}","attrs":[{"key":"k","value":-1},{"key":"n","value":null}],"b":true,"ctx":{"hist":[{"n":1},null],"ip":"::1","page":{"title":null,"url":"/p"}},"d":-1e+300,"day":"1969-12-31","env":"prod","f":1.5,"i32":-2147483648,"i64":9223372036854775807,"id":"日本語 😀","lvl":3,"raw":"AAEC/w==","s":"x\"\n","tags":["x",null,""],"ts":"1969-12-31 23:59:59.999","tsu":"2024-05-01 12:00:00.000001"}`,
	`{"_extra":null,"attrs":[],"b":false,"ctx":null,"d":null,"day":null,"env":"prod","f":null,"i32":null,"i64":-9223372036854775808,"id":"e","lvl":3,"raw":"","s":null,"tags":[],"ts":null,"tsu":null}`,
}

func encodeAvro(t testing.TB, sch string, vals []map[string]any) [][]byte {
	t.Helper()
	s := avro.MustParse(sch)
	var out [][]byte
	for _, v := range vals {
		b, err := avro.Marshal(s, v)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func TestAvroValues(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d, err := NewAvro(allTypes(), allTypesAvro, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	var in []Record
	for i, b := range encodeAvro(t, allTypesAvro, allTypesAvroValues()) {
		in = append(in, Record{Offset: int64(i), Value: b})
	}
	if errs := d.Decode(in); errs != nil {
		t.Fatal(errs)
	}
	rec := d.Flush()
	defer rec.Release()
	if err := validateRecord(rec); err != nil {
		t.Fatal(err)
	}
	for i, row := range rowsJSON(t, rec) {
		if row != allTypesAvroWant[i] {
			t.Errorf("row %d:\ngot  %s\nwant %s", i, row, allTypesAvroWant[i])
		}
	}
}

func TestConfluentAvro(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "7.avsc"), []byte(allTypesAvro), 0o644); err != nil {
		t.Fatal(err)
	}
	// Schema 8 is a narrower writer: the decoder fills in what it lacks.
	narrow := `{"type":"record","name":"All","fields":[{"name":"id","type":"string"},{"name":"lvl","type":"long"}]}`
	if err := os.WriteFile(filepath.Join(dir, "8.avsc"), []byte(narrow), 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := AvroSchemaDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	defer mem.AssertSize(t, 0)
	d, err := NewConfluentAvro(allTypes(), files, mem)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	frame := func(id uint32, body []byte) []byte {
		return append(binary.BigEndian.AppendUint32([]byte{0}, id), body...)
	}
	full := encodeAvro(t, allTypesAvro, allTypesAvroValues())[1]
	small := encodeAvro(t, narrow, []map[string]any{{"id": "s", "lvl": int64(5)}, {"id": "s", "lvl": int64(1 << 40)}})
	in := []Record{
		{Offset: 0, Value: frame(7, full)},
		{Offset: 1, Value: frame(8, small[0])},
		{Offset: 2, Value: frame(9, small[0])},
		{Offset: 3, Value: full},
		{Offset: 4, Value: []byte{0, 0, 0}},
		{Offset: 5, Value: frame(8, small[1])},
		{Offset: 6, Value: frame(7, full[:len(full)-3])},
		{Offset: 7, Value: append(frame(8, small[0]), 0)},
	}
	errs := d.Decode(in)
	want := map[int64]string{2: "unknown Avro schema id 9", 3: "not Confluent Avro framing", 4: "not Confluent Avro framing",
		5: "lvl: out of range for int32", 6: "invalid Avro", 7: "bytes left after the record"}
	if len(errs) != len(want) {
		t.Fatalf("errors: %v", errs)
	}
	for _, e := range errs {
		got := e.Reason
		if e.Path != "" {
			got = e.Path + ": " + e.Reason
		}
		if !strings.Contains(got, want[e.Offset]) {
			t.Errorf("offset %d: got %q, want %q", e.Offset, got, want[e.Offset])
		}
	}
	rec := d.Flush()
	defer rec.Release()
	rows := rowsJSON(t, rec)
	if len(rows) != 2 || rows[0] != allTypesAvroWant[1] ||
		rows[1] != `{"_extra":null,"attrs":null,"b":null,"ctx":null,"d":null,"day":null,"env":"prod","f":null,"i32":null,"i64":null,"id":"s","lvl":5,"raw":null,"s":null,"tags":null,"ts":null,"tsu":null}` {
		t.Errorf("rows:\n%s", strings.Join(rows, "\n"))
	}
}

func TestAvroRequired(t *testing.T) {
	// id is a nullable union in this writer; null must fail the record,
	// not the batch, and leave no partial row.
	w := `{"type":"record","name":"R","fields":[{"name":"tags","type":{"type":"array","items":"string"}},{"name":"id","type":["null","string"]}]}`
	d, err := NewAvro(allTypes(), w, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	b := encodeAvro(t, w, []map[string]any{{"tags": []any{"a"}, "id": nil}, {"tags": []any{"b"}, "id": u("string", "x")}})
	errs := d.Decode([]Record{{Offset: 0, Value: b[0]}, {Offset: 1, Value: b[1]}})
	if len(errs) != 1 || errs[0].Path != "id" || errs[0].Reason != "null for a required field" {
		t.Fatalf("errors: %v", errs)
	}
	rec := d.Flush()
	defer rec.Release()
	if err := validateRecord(rec); err != nil {
		t.Fatal(err)
	}
	if got := rowsJSON(t, rec); len(got) != 1 || !strings.Contains(got[0], `"tags":["b"]`) {
		t.Fatalf("rows: %v", got)
	}
}

// FuzzAvro: any bytes are a row or an error, never a panic or a hang.
func FuzzAvro(f *testing.F) {
	for _, b := range encodeAvro(f, allTypesAvro, allTypesAvroValues()) {
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Add([]byte{0x02, 0x01, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Add([]byte{})
	d, err := NewAvro(allTypes(), allTypesAvro, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		errs := d.Decode([]Record{{Value: b}})
		rec := d.Flush()
		if rec == nil {
			if len(errs) != 1 {
				t.Fatalf("no row and %d errors", len(errs))
			}
			return
		}
		defer rec.Release()
		if rec.NumRows() != 1 || len(errs) != 0 {
			t.Fatalf("%d rows, %d errors", rec.NumRows(), len(errs))
		}
		if err := validateRecord(rec); err != nil {
			t.Fatal(err)
		}
	})
}

func TestAvroHugeBlockCount(t *testing.T) {
	w := `{"type":"record","name":"R","fields":[{"name":"n","type":{"type":"array","items":"null"}}]}`
	s := &schema.Schema{Name: "r", Fields: []schema.Field{opt("n", listOf(typ(schema.String)))}}
	d, err := NewAvro(s, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	for _, body := range [][]byte{
		binary.AppendUvarint(nil, 1<<63),           // 2⁶² items of null, no bytes each
		binary.AppendUvarint(nil, 1<<64-1),         // the most negative count
		append(binary.AppendUvarint(nil, 4), 0),    // two nulls, then the end: fine
		append(binary.AppendUvarint(nil, 3), 2, 0), // count -2 with a byte size, then 2 nulls
	} {
		d.Decode([]Record{{Value: body}})
	}
	rec := d.Flush()
	defer rec.Release()
	if got := rowsJSON(t, rec); len(got) != 2 || got[0] != `{"n":[null,null]}` {
		t.Fatalf("rows: %v", got)
	}
}
