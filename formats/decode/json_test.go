package decode

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/tributary-io/tributary/formats/schema"
)

func typ(k schema.Kind) schema.Type { return schema.Type{Kind: k} }
func listOf(t schema.Type) schema.Type {
	return schema.Type{Kind: schema.List, Elem: &t}
}
func mapOf(t schema.Type) schema.Type {
	return schema.Type{Kind: schema.Map, Elem: &t}
}
func structOf(fs ...schema.Field) schema.Type {
	return schema.Type{Kind: schema.Struct, Fields: fs}
}
func opt(name string, t schema.Type) schema.Field {
	return schema.Field{Name: name, Type: t, Nullable: true}
}
func req(name string, t schema.Type) schema.Field {
	return schema.Field{Name: name, Type: t}
}

// allTypes has a field of every type, nested ones included.
func allTypes() *schema.Schema {
	return &schema.Schema{Name: "all", Version: 1, Fields: []schema.Field{
		req("id", typ(schema.String)),
		opt("s", typ(schema.String)),
		opt("i32", typ(schema.Int32)),
		opt("i64", typ(schema.Int64)),
		opt("f", typ(schema.Float)),
		opt("d", typ(schema.Double)),
		opt("b", typ(schema.Bool)),
		opt("ts", schema.Type{Kind: schema.Timestamp, Unit: schema.Millis}),
		opt("tsu", schema.Type{Kind: schema.Timestamp, Unit: schema.Micros}),
		opt("day", typ(schema.Date)),
		opt("raw", typ(schema.Bytes)),
		opt("tags", listOf(typ(schema.String))),
		opt("attrs", mapOf(typ(schema.Int64))),
		opt("ctx", structOf(
			req("page", structOf(req("url", typ(schema.String)), opt("title", typ(schema.String)))),
			opt("ip", typ(schema.String)),
			opt("hist", listOf(structOf(opt("n", typ(schema.Int32))))),
		)),
		{Name: "lvl", Type: typ(schema.Int32), Default: 3},
		{Name: "env", Type: typ(schema.String), Nullable: true, Default: "prod"},
		opt("_extra", typ(schema.String)),
	}}
}

func newTestJSON(t testing.TB, s *schema.Schema) (*JSON, *memory.CheckedAllocator) {
	t.Helper()
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	d, err := NewJSON(s, mem)
	if err != nil {
		t.Fatal(err)
	}
	return d, mem
}

func recs(values ...string) []Record {
	out := make([]Record, len(values))
	for i, v := range values {
		out[i] = Record{Topic: "t", Partition: 1, Offset: int64(i), Value: []byte(v)}
		if v == "<nil>" {
			out[i].Value = nil
		}
	}
	return out
}

func rowsJSON(t testing.TB, rec arrow.Record) []string {
	t.Helper()
	var buf bytes.Buffer
	if err := array.RecordToJSON(rec, &buf); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(buf.String()), "\n")
}

func TestJSONValues(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"minimal", `{"id":"a"}`,
			`{"_extra":null,"attrs":null,"b":null,"ctx":null,"d":null,"day":null,"env":"prod","f":null,"i32":null,"i64":null,"id":"a","lvl":3,"raw":null,"s":null,"tags":null,"ts":null,"tsu":null}`},
		{"explicit nulls", `{"id":"a","s":null,"i32":null,"tags":null,"attrs":null,"ctx":null,"lvl":null,"env":null}`,
			`{"_extra":null,"attrs":null,"b":null,"ctx":null,"d":null,"day":null,"env":null,"f":null,"i32":null,"i64":null,"id":"a","lvl":3,"raw":null,"s":null,"tags":null,"ts":null,"tsu":null}`},
		{"every type", `{"id":"a","s":"x","i32":-2147483648,"i64":9223372036854775807,"f":1.5,"d":-1e300,"b":true,
			"ts":"2024-05-01T12:00:00.123+02:00","tsu":"1969-12-31T23:59:59.999999Z","day":"1970-01-02","raw":"AAEC/w==",
			"tags":["x",null,""],"attrs":{"k":-1,"n":null},"lvl":7,"env":"dev",
			"ctx":{"page":{"url":"/p"},"ip":"::1","hist":[{"n":1},{},null]}}`,
			`{"_extra":null,"attrs":[{"key":"k","value":-1},{"key":"n","value":null}],"b":true,"ctx":{"hist":[{"n":1},{"n":null},null],"ip":"::1","page":{"title":null,"url":"/p"}},"d":-1e+300,"day":"1970-01-02","env":"dev","f":1.5,"i32":-2147483648,"i64":9223372036854775807,"id":"a","lvl":7,"raw":"AAEC/w==","s":"x","tags":["x",null,""],"ts":"2024-05-01 10:00:00.123","tsu":"1969-12-31 23:59:59.999999"}`},
		{"empty list and map", `{"id":"a","tags":[],"attrs":{}}`,
			`{"_extra":null,"attrs":[],"b":null,"ctx":null,"d":null,"day":null,"env":"prod","f":null,"i32":null,"i64":null,"id":"a","lvl":3,"raw":null,"s":null,"tags":[],"ts":null,"tsu":null}`},
		{"epoch numbers and integral floats", `{"id":"a","ts":-1,"tsu":1714564800000000,"day":-1,"i64":-9223372036854775808,"i32":1e3,"lvl":2.0}`,
			`{"_extra":null,"attrs":null,"b":null,"ctx":null,"d":null,"day":"1969-12-31","env":"prod","f":null,"i32":1000,"i64":-9223372036854775808,"id":"a","lvl":2,"raw":null,"s":null,"tags":null,"ts":"1969-12-31 23:59:59.999","tsu":"2024-05-01 12:00:00","day2":null}`},
		{"unicode", `{"id":"日本語 \ud83d\ude00 \u00e9","s":"\"q\"\\\n"}`,
			`{"_extra":null,"attrs":null,"b":null,"ctx":null,"d":null,"day":null,"env":"prod","f":null,"i32":null,"i64":null,"id":"日本語 😀 é","lvl":3,"raw":null,"s":"\"q\"\\\n","tags":null,"ts":null,"tsu":null}`},
		{"objects into strings, unknown keys kept", `{"id":"a","s":{"b":[1,2],"a":"x"},"zz":1,"_extra":"no","ctx":{"page":{"url":"u"},"deep":{}}}`,
			`{"_extra":"{\"zz\":1,\"_extra\":\"no\"}","attrs":null,"b":null,"ctx":{"hist":null,"ip":null,"page":{"title":null,"url":"u"}},"d":null,"day":null,"env":"prod","f":null,"i32":null,"i64":null,"id":"a","lvl":3,"raw":null,"s":"{\"b\":[1,2],\"a\":\"x\"}","tags":null,"ts":null,"tsu":null}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, mem := newTestJSON(t, allTypes())
			defer mem.AssertSize(t, 0)
			defer d.Release()
			if errs := d.Decode(recs(c.in)); len(errs) != 0 {
				t.Fatalf("errors: %v", errs)
			}
			rec := d.Flush()
			defer rec.Release()
			got := rowsJSON(t, rec)
			want := strings.Replace(c.want, `,"day2":null`, "", 1)
			if len(got) != 1 || got[0] != want {
				t.Errorf("got\n%s\nwant\n%s", got[0], want)
			}
		})
	}
}

func TestJSONErrors(t *testing.T) {
	cases := []struct{ in, path, reason string }{
		{`<nil>`, "", "empty value"},
		{`{"id":"a"`, "", "invalid JSON"},
		{`[1]`, "", "not a JSON object: array"},
		{`{"id":"a"} x`, "", "invalid JSON"},
		{`{}`, "id", "missing required field"},
		{`{"id":null}`, "id", "null for a required field"},
		{`{"id":1}`, "id", "type mismatch: want string, got number"},
		{`{"id":"a","i32":2147483648}`, "i32", "out of range for int32"},
		{`{"id":"a","i64":9223372036854775808}`, "i64", "not an integer within int64"},
		{`{"id":"a","i64":1.5}`, "i64", "not an integer"},
		{`{"id":"a","i64":"1"}`, "i64", "type mismatch"},
		{`{"id":"a","f":1e39}`, "f", "out of range for float"},
		{`{"id":"a","d":NaN}`, "d", "not a finite number"},
		{`{"id":"a","b":1}`, "b", "type mismatch: want bool"},
		{`{"id":"a","ts":"yesterday"}`, "ts", "invalid RFC 3339 timestamp"},
		{`{"id":"a","ts":true}`, "ts", "type mismatch"},
		{`{"id":"a","day":"2024-13-01"}`, "day", "invalid date"},
		{`{"id":"a","raw":"!!"}`, "raw", "invalid base64"},
		{`{"id":"a","tags":["x",1]}`, "tags[1]", "type mismatch"},
		{`{"id":"a","tags":{}}`, "tags", "type mismatch: want list, got object"},
		{`{"id":"a","attrs":{"k":"v"}}`, "attrs[k]", "type mismatch"},
		{`{"id":"a","ctx":{}}`, "ctx.page", "missing required field"},
		{`{"id":"a","ctx":{"page":{"url":5}}}`, "ctx.page.url", "type mismatch"},
		{`{"id":"a","ctx":{"page":{"url":"u"},"hist":[{"n":1},{"n":"x"}]}}`, "ctx.hist[1].n", "type mismatch"},
		{`{"id":"a","ctx":"x"}`, "ctx", "type mismatch: want struct, got string"},
	}
	d, mem := newTestJSON(t, allTypes())
	defer mem.AssertSize(t, 0)
	defer d.Release()
	var in []string
	// Interleave good records: a bad one must leave no partial row behind.
	for _, c := range cases {
		in = append(in, c.in, `{"id":"ok","tags":["t"],"attrs":{"a":1},"ctx":{"page":{"url":"u"},"hist":[{"n":1}]}}`)
	}
	errs := d.Decode(recs(in...))
	if len(errs) != len(cases) {
		t.Fatalf("got %d errors, want %d: %v", len(errs), len(cases), errs)
	}
	for i, c := range cases {
		e := errs[i]
		if e.Offset != int64(2*i) || e.Partition != 1 || e.Path != c.path || !strings.Contains(e.Reason, c.reason) {
			t.Errorf("%s: got %v (path %q), want path %q reason %q", c.in, e, e.Path, c.path, c.reason)
		}
	}
	rec := d.Flush()
	defer rec.Release()
	if rec.NumRows() != int64(len(cases)) {
		t.Fatalf("rows = %d, want %d", rec.NumRows(), len(cases))
	}
	want := `{"_extra":null,"attrs":[{"key":"a","value":1}],"b":null,"ctx":{"hist":[{"n":1}],"ip":null,"page":{"title":null,"url":"u"}},"d":null,"day":null,"env":"prod","f":null,"i32":null,"i64":null,"id":"ok","lvl":3,"raw":null,"s":null,"tags":["t"],"ts":null,"tsu":null}`
	for i, row := range rowsJSON(t, rec) {
		if row != want {
			t.Fatalf("row %d = %s", i, row)
		}
	}
	if err := validateRecord(rec); err != nil {
		t.Fatal(err)
	}
	if d.Flush() != nil {
		t.Fatal("second Flush returned a batch")
	}
}

func TestJSONInvalidUTF8(t *testing.T) {
	d, mem := newTestJSON(t, allTypes())
	defer mem.AssertSize(t, 0)
	defer d.Release()
	if errs := d.Decode(recs("{\"id\":\"a\xffb\",\"attrs\":{\"\xfe\":1}}")); errs != nil {
		t.Fatal(errs)
	}
	rec := d.Flush()
	defer rec.Release()
	if got := rec.Column(0).(*array.String).Value(0); got != "a\uFFFDb" {
		t.Errorf("id = %q", got)
	}
	if err := validateRecord(rec); err != nil {
		t.Fatal(err)
	}
}

func TestJSONLongErrorShortened(t *testing.T) {
	d, _ := newTestJSON(t, allTypes())
	defer d.Release()
	errs := d.Decode(recs(`{"id":"a","s":x` + strings.Repeat("y", 1<<20) + `}`))
	if len(errs) != 1 || len(errs[0].Reason) > maxReason+len("…") {
		t.Fatalf("errors: %d, reason of %d bytes", len(errs), len(errs[0].Reason))
	}
}

func TestJSONBadDefault(t *testing.T) {
	s := &schema.Schema{Name: "x", Fields: []schema.Field{{Name: "n", Type: typ(schema.Int32), Default: "three"}}}
	if _, err := NewJSON(s, nil); err == nil || !strings.Contains(err.Error(), "field n: default") {
		t.Fatalf("err = %v", err)
	}
}

func TestJSONRequiredExtra(t *testing.T) {
	s := &schema.Schema{Name: "x", Fields: []schema.Field{req("a", typ(schema.Int64)), req("_extra", typ(schema.String))}}
	d, mem := newTestJSON(t, s)
	defer mem.AssertSize(t, 0)
	defer d.Release()
	if errs := d.Decode(recs(`{"a":1}`, `{"a":2,"b":"\u0001"}`)); errs != nil {
		t.Fatal(errs)
	}
	rec := d.Flush()
	defer rec.Release()
	got := strings.Join(rowsJSON(t, rec), "\n")
	want := `{"_extra":"{}","a":1}` + "\n" + `{"_extra":"{\"b\":\"\\u0001\"}","a":2}`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// FuzzJSON: any input is a row or an error, never a panic, and the batch
// stays valid.
func FuzzJSON(f *testing.F) {
	for _, s := range []string{
		`{"id":"a"}`, `{"id":"a","tags":["x",null],"attrs":{"k":1},"ctx":{"page":{"url":"u"},"hist":[{"n":1}]}}`,
		`{"id":"a","ts":"2024-05-01T12:00:00","day":"2024-01-01","raw":"AA=="}`, `{"id":"a","ts":1e300}`,
		`{`, `[`, `"`, `{"id":"\ud800"}`, `{"id":"a","i64":-9223372036854775809}`, `nan`, `{"id":"a","d":-Inf}`,
		strings.Repeat("[", 1000), `{"id":"a","zz":{"y":[1,{"q":null}]}}`,
	} {
		f.Add([]byte(s))
	}
	d, err := NewJSON(allTypes(), nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		errs := d.Decode([]Record{{Value: b}, {Value: []byte(`{"id":"ok"}`)}})
		rec := d.Flush()
		defer rec.Release()
		if int(rec.NumRows())+len(errs) != 2 {
			t.Fatalf("rows %d + errors %d != 2", rec.NumRows(), len(errs))
		}
		if err := validateRecord(rec); err != nil {
			t.Fatal(err)
		}
	})
}

// validateRecord checks that every column has the record's length and that
// the arrays that can check their offsets and UTF-8 do.
func validateRecord(rec arrow.Record) error {
	if rec == nil {
		return nil
	}
	for i, col := range rec.Columns() {
		if int64(col.Len()) != rec.NumRows() {
			return fmt.Errorf("column %d has %d rows, the record %d", i, col.Len(), rec.NumRows())
		}
		if v, ok := col.(interface{ ValidateFull() error }); ok {
			if err := v.ValidateFull(); err != nil {
				return fmt.Errorf("column %d: %w", i, err)
			}
		}
	}
	// Read every value back (Arrow's JSON reader is no check: it reads
	// integers through float64, and its writer refuses NaN, which Avro
	// may carry).
	for _, col := range rec.Columns() {
		for i := 0; i < col.Len(); i++ {
			_ = col.GetOneForMarshal(i)
			_ = col.ValueStr(i)
		}
	}
	return nil
}

// With CoerceStrings, numbers and booleans go into string columns as their
// JSON text, which is what a schema widened to string by inference needs.
func TestJSONCoerceStrings(t *testing.T) {
	d, mem := newTestJSON(t, allTypes())
	defer mem.AssertSize(t, 0)
	defer d.Release()
	in := `{"id":1234567890123,"s":true,"env":-1.5e-7}`
	if errs := d.Decode(recs(in)); len(errs) != 1 {
		t.Fatalf("strict decoder: errors %v, want the type mismatch on id", errs)
	}
	d.CoerceStrings(true)
	if errs := d.Decode(recs(in)); len(errs) != 0 {
		t.Fatalf("coercing decoder: errors %v", errs)
	}
	rec := d.Flush()
	defer rec.Release()
	got := rowsJSON(t, rec)
	want := `{"_extra":null,"attrs":null,"b":null,"ctx":null,"d":null,"day":null,"env":"-1.5e-7","f":null,"i32":null,"i64":null,"id":"1234567890123","lvl":3,"raw":null,"s":"true","tags":null,"ts":null,"tsu":null}`
	if len(got) != 1 || got[0] != want {
		t.Fatalf("got %v\nwant %s", got, want)
	}
}
