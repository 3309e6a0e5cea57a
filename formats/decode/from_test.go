package decode

import (
	"os"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/formats/schema"
)

// promoted is a schema with typed columns filled from paths elsewhere in
// the record (schema.Field.From), as "extends: activity" schemas promote
// properties and traits.
func promoted() *schema.Schema {
	return &schema.Schema{Name: "promoted", Fields: []schema.Field{
		req("id", typ(schema.String)),
		opt("properties", typ(schema.String)),
		{Name: "revenue", Type: typ(schema.Double), Nullable: true, From: "properties.revenue"},
		{Name: "qty", Type: typ(schema.Int32), Default: 1, From: "properties.cart.qty"},
		{Name: "plan", Type: typ(schema.String), Nullable: true, From: "traits.plan"},
		{Name: "seen", Type: schema.Type{Kind: schema.Timestamp, Unit: schema.Millis}, Nullable: true, From: "properties.seen"},
		{Name: "tags", Type: listOf(typ(schema.String)), Nullable: true, From: "properties.tags"},
		{Name: "same", Type: typ(schema.String), Nullable: true, From: "same"},
		opt("_extra", typ(schema.String)),
	}}
}

func TestJSONFrom(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"promoted, source kept as JSON text",
			`{"id":"a","properties":{"revenue":12.5,"cart":{"qty":3},"seen":"2024-05-01T00:00:00Z","tags":["x"]},"traits":{"plan":"pro"},"same":"s"}`,
			`{"_extra":"{\"traits\":{\"plan\":\"pro\"}}","id":"a","plan":"pro","properties":"{\"revenue\":12.5,\"cart\":{\"qty\":3},\"seen\":\"2024-05-01T00:00:00Z\",\"tags\":[\"x\"]}","qty":3,"revenue":12.5,"same":"s","seen":"2024-05-01 00:00:00","tags":["x"]}`},
		{"missing paths take defaults or null", `{"id":"a"}`,
			`{"_extra":null,"id":"a","plan":null,"properties":null,"qty":1,"revenue":null,"same":null,"seen":null,"tags":null}`},
		{"a path through a non-object is missing", `{"id":"a","properties":"text","traits":[1]}`,
			`{"_extra":"{\"traits\":[1]}","id":"a","plan":null,"properties":"text","qty":1,"revenue":null,"same":null,"seen":null,"tags":null}`},
		{"explicit nulls", `{"id":"a","properties":{"revenue":null,"cart":{"qty":null}}}`,
			`{"_extra":null,"id":"a","plan":null,"properties":"{\"revenue\":null,\"cart\":{\"qty\":null}}","qty":1,"revenue":null,"same":null,"seen":null,"tags":null}`},
		{"a key of the promoted column's own name is not its source", `{"id":"a","revenue":99,"properties":{}}`,
			`{"_extra":"{\"revenue\":99}","id":"a","plan":null,"properties":"{}","qty":1,"revenue":null,"same":null,"seen":null,"tags":null}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, mem := newTestJSON(t, promoted())
			defer mem.AssertSize(t, 0)
			defer d.Release()
			if errs := d.Decode(recs(c.in)); len(errs) != 0 {
				t.Fatalf("errors: %v", errs)
			}
			rec := d.Flush()
			defer rec.Release()
			if got := rowsJSON(t, rec); len(got) != 1 || got[0] != c.want {
				t.Errorf("got\n%s\nwant\n%s", got[0], c.want)
			}
		})
	}
}

func TestJSONFromErrors(t *testing.T) {
	cases := []struct{ in, path, reason string }{
		{`{"id":"a","properties":{"revenue":"12"}}`, "properties.revenue", "type mismatch: want double"},
		{`{"id":"a","properties":{"cart":{"qty":1e10}}}`, "properties.cart.qty", "out of range for int32"},
		{`{"id":"a","properties":{"tags":["x",1]}}`, "properties.tags[1]", "type mismatch: want string"},
		{`{"id":"a","properties":{"seen":"yesterday"}}`, "properties.seen", "invalid RFC 3339 timestamp"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			d, mem := newTestJSON(t, promoted())
			defer mem.AssertSize(t, 0)
			defer d.Release()
			errs := d.Decode(recs(c.in, `{"id":"ok"}`))
			if len(errs) != 1 || errs[0].Path != c.path || !strings.HasPrefix(errs[0].Reason, c.reason) {
				t.Fatalf("errors %v, want one at %s: %s", errs, c.path, c.reason)
			}
			rec := d.Flush()
			defer rec.Release()
			if rec.NumRows() != 1 {
				t.Errorf("%d rows, want the good record's only", rec.NumRows())
			}
		})
	}
}

// TestJSONFromSchemaFile decodes with the promoted columns of a schema
// file extending the activity schema.
func TestJSONFromSchemaFile(t *testing.T) {
	src, err := os.ReadFile("../schema/testdata/promoted.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	d, mem := newTestJSON(t, s)
	defer mem.AssertSize(t, 0)
	defer d.Release()
	in := string(ActivityEvent(nil, 7))
	in = strings.Replace(in, `"properties":{`, `"properties":{"orderId":"o-1",`, 1)
	if errs := d.Decode(recs(in)); len(errs) != 0 {
		t.Fatal(errs)
	}
	rec := d.Flush()
	defer rec.Release()
	row := rowsJSON(t, rec)[0]
	if !strings.Contains(row, `"order_id":"o-1"`) || !strings.Contains(row, `"revenue":`) || strings.Contains(row, `"revenue":null`) {
		t.Errorf("promoted columns not filled: %s", row)
	}
}

func TestAvroFrom(t *testing.T) {
	w := `{"type":"record","name":"E","fields":[
		{"name":"id","type":"string"},
		{"name":"properties","type":["null",{"type":"record","name":"P","fields":[
			{"name":"revenue","type":["null","double"]},
			{"name":"cart","type":{"type":"map","values":"int"}}]}]},
		{"name":"revenue","type":"double"}]}`
	s := &schema.Schema{Name: "promoted", Fields: []schema.Field{
		req("id", typ(schema.String)),
		{Name: "revenue", Type: typ(schema.Double), Nullable: true, From: "properties.revenue"},
		{Name: "qty", Type: typ(schema.Int32), Default: 1, From: "properties.cart.qty"},
		opt("_extra", typ(schema.String)),
	}}
	d, err := NewAvro(s, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	b := encodeAvro(t, w, []map[string]any{
		{"id": "a", "properties": u("P", map[string]any{"revenue": u("double", 12.5), "cart": map[string]any{"qty": 3}}), "revenue": 99.0},
		{"id": "b", "properties": nil, "revenue": 1.0},
		{"id": "c", "properties": u("P", map[string]any{"revenue": nil, "cart": map[string]any{}}), "revenue": 2.0},
	})
	var in []Record
	for i, v := range b {
		in = append(in, Record{Offset: int64(i), Value: v})
	}
	if errs := d.Decode(in); len(errs) != 0 {
		t.Fatal(errs)
	}
	rec := d.Flush()
	defer rec.Release()
	want := []string{
		`{"_extra":"{\"properties\":{\"cart\":{\"qty\":3},\"revenue\":12.5},\"revenue\":99}","id":"a","qty":3,"revenue":12.5}`,
		`{"_extra":"{\"revenue\":1}","id":"b","qty":1,"revenue":null}`,
		`{"_extra":"{\"properties\":{\"cart\":{},\"revenue\":null},\"revenue\":2}","id":"c","qty":1,"revenue":null}`,
	}
	got := rowsJSON(t, rec)
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			t.Errorf("row %d:\n got %v\nwant %s", i, got, want[i])
		}
	}
}

// TestJSONNullRuns decodes records one per batch and all in one batch:
// the rows must be the same, however nulls are batched (see appendNull).
func TestJSONNullRuns(t *testing.T) {
	in := []string{
		`{"id":"1"}`,
		`{"id":"2","ctx":{"page":{"url":"u"}},"s":"x"}`,
		`{"id":"3","ctx":null,"tags":null}`,
		`{"id":"4","ctx":{"page":{"url":"v","title":"t"},"hist":[{"n":1},null,{}]},"zz":1}`,
		`{"id":"5"}`,
		`{"id":"6","ctx":{"page":{"url":"w"},"ip":"::1"},"attrs":{"a":1,"b":null},"tags":["a",null]}`,
		`{"id":"7","i64":1,"f":null}`,
		`{"id":"8"}`,
	}
	var want []string
	one, mem1 := newTestJSON(t, allTypes())
	defer mem1.AssertSize(t, 0)
	defer one.Release()
	for _, r := range in {
		if errs := one.Decode(recs(r)); len(errs) != 0 {
			t.Fatal(errs)
		}
		rec := one.Flush()
		want = append(want, rowsJSON(t, rec)...)
		rec.Release()
	}
	all, mem2 := newTestJSON(t, allTypes())
	defer mem2.AssertSize(t, 0)
	defer all.Release()
	for range 2 { // twice: what one batch leaves pending must not leak into the next
		if errs := all.Decode(recs(in...)); len(errs) != 0 {
			t.Fatal(errs)
		}
		rec := all.Flush()
		if err := validateRecord(rec); err != nil {
			t.Fatal(err)
		}
		got := rowsJSON(t, rec)
		rec.Release()
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("in one batch:\n%s\none per batch:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
}
