package schema

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
)

func TestParseEveryType(t *testing.T) {
	s, err := ParseFile(filepath.Join("testdata", "every_type.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "every_type" || s.Version != 7 || !strings.HasPrefix(s.Doc, "A schema that uses every type.\nIts doc") {
		t.Errorf("header: %q v%d %q", s.Name, s.Version, s.Doc)
	}
	wantTypes := map[string]string{
		"s": "string", "i32": "int32", "i64": "int64", "f": "float", "d": "double", "b": "bool",
		"ts_ms": "timestamp(ms)", "ts_us": "timestamp(us)", "day": "date", "raw": "bytes", "blob": "string",
		"tags": "list<string>", "counts": "map<int64>", "matrix": "list<list<double>>",
		"items": "list<struct>", "by_id": "map<struct>", "ctx": "struct", "price": "double",
	}
	if len(s.Fields) != len(wantTypes) {
		t.Errorf("%d fields, want %d", len(s.Fields), len(wantTypes))
	}
	for name, want := range wantTypes {
		f, ok := s.Field(name)
		if !ok {
			t.Errorf("no field %s", name)
			continue
		}
		if got := f.Type.String(); got != want {
			t.Errorf("%s: type %s, want %s", name, got, want)
		}
	}
	wantDefaults := map[string]any{
		"s":      "2024-01-01", // an unquoted date stays text for a string field
		"i32":    int64(math.MinInt32),
		"i64":    int64(math.MaxInt64),
		"f":      1.5,
		"d":      3.0,
		"b":      false,
		"ts_ms":  "2024-01-01T00:00:00Z",
		"ts_us":  int64(1700000000000000),
		"day":    "2024-02-29",
		"raw":    "aGVsbG8=",
		"blob":   `{"a":1.25,"b":[1,"two",null]}`,
		"tags":   []any{"a", "ü", ""},
		"counts": map[string]any{"x": int64(1), "y": int64(-2)},
		"ctx":    map[string]any{"page": map[string]any{"url": "https://example.com/"}},
		"matrix": nil,
	}
	for name, want := range wantDefaults {
		f, _ := s.Field(name)
		if !reflect.DeepEqual(f.Default, want) {
			t.Errorf("%s: default %#v, want %#v", name, f.Default, want)
		}
	}
	items, _ := s.Field("items")
	if qty := items.Type.Elem.Fields[1]; qty.Default != int64(1) || qty.Nullable {
		t.Errorf("items[].qty: %+v", qty)
	}
	price, _ := s.Field("price")
	if price.From != "properties.price" {
		t.Errorf("price.From = %q", price.From)
	}
	ctx, _ := s.Field("ctx")
	if doc := ctx.Type.Fields[0].Type.Fields[0].Doc; doc != "URL: full." {
		t.Errorf("ctx.page.url doc %q", doc)
	}

	as, err := s.Arrow()
	if err != nil {
		t.Fatal(err)
	}
	wantArrow := map[string]string{
		"ts_ms":  "timestamp[ms, tz=UTC]",
		"ts_us":  "timestamp[us, tz=UTC]",
		"day":    "date32",
		"blob":   "utf8",
		"counts": "map<utf8, int64, items_nullable>",
		"items":  "list<item: struct<sku: utf8, qty: int32>, nullable>",
	}
	for name, want := range wantArrow {
		fs, _ := as.FieldsByName(name)
		if len(fs) != 1 || fs[0].Type.String() != want {
			t.Errorf("arrow %s: %v, want %s", name, fs, want)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	for _, name := range []string{"every_type.yaml", "promoted.yaml"} {
		t.Run(name, func(t *testing.T) {
			s, err := ParseFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			roundTrip(t, s)
		})
	}
	t.Run("activity", func(t *testing.T) { roundTrip(t, Activity()) })
}

// roundTrip checks that Parse(Marshal(s)) is s, and that marshalling again
// gives the same text.
func roundTrip(t *testing.T, s *Schema) {
	t.Helper()
	text, err := Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(text)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if !reflect.DeepEqual(s, back) {
		t.Fatalf("round trip changed the schema:\n%s", text)
	}
	again, err := Marshal(back)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(text) {
		t.Errorf("Marshal is not stable:\n%s\n---\n%s", text, again)
	}
}

func TestParseExtends(t *testing.T) {
	s, err := ParseFile(filepath.Join("testdata", "promoted.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	base := Activity()
	if len(s.Fields) != len(base.Fields)+2 {
		t.Fatalf("%d fields, want %d", len(s.Fields), len(base.Fields)+2)
	}
	if !reflect.DeepEqual(s.Fields[:len(base.Fields)], base.Fields) {
		t.Error("the activity fields do not come first, unchanged")
	}
	rev, _ := s.Field("revenue")
	if rev.From != "properties.revenue" || rev.Type.Kind != Double {
		t.Errorf("revenue: %+v", rev)
	}
	if err := Check(base, s, Full); err != nil {
		t.Errorf("promoting nullable properties should be fully compatible: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	const head = "name: t\nfields:\n"
	for _, tc := range []struct {
		name string
		yaml string
		want []string // each must appear in the error
	}{
		{"not yaml", "name: [", []string{"yaml"}},
		{"not a mapping", "- a\n- b\n", []string{"a schema must be a mapping"}},
		{"empty", "", []string{"empty document"}},
		{"no name", "fields:\n  - {name: a, type: string}\n", []string{"name is missing"}},
		{"no fields", "name: t\n", []string{"fields are missing"}},
		{"empty fields", "name: t\nfields: []\n", []string{"fields are empty"}},
		{"bad version", "name: t\nversion: two\nfields:\n  - {name: a, type: string}\n", []string{"line 2: version must be a whole number"}},
		{"negative version", "name: t\nversion: -1\nfields:\n  - {name: a, type: string}\n", []string{"version must be a whole number >= 0"}},
		{"unknown top key", "name: t\nfeilds: []\n", []string{`unknown key "feilds"`}},
		{"unknown extends", "name: t\nextends: segment\n", []string{`extends "segment"`}},
		{"unknown field key", head + "  - name: a\n    type: string\n    nulable: true\n", []string{"line 5: a: unknown key \"nulable\""}},
		{"missing name", head + "  - type: string\n", []string{"fields[0]: name is missing"}},
		{"missing type", head + "  - name: a\n", []string{"a: type is missing"}},
		{"bad name", head + "  - {name: 1a, type: string}\n  - {name: a-b, type: string}\n", []string{"1a: invalid name", "a-b: invalid name"}},
		{"duplicate", head + "  - {name: a, type: string}\n  - {name: A, type: int64}\n", []string{"line 4: A: declared twice (also on line 3"}},
		{"unknown type", head + "  - {name: a, type: strng}\n", []string{`a: unknown type "strng"`}},
		{"bare list", head + "  - {name: a, type: list}\n", []string{"needs an element type"}},
		{"bad element", head + "  - {name: a, type: list<nope>}\n", []string{`a: type "list<nope>": unknown type "nope"`}},
		{"map key", head + "  - {name: a, type: 'map<int64,string>'}\n", []string{"map keys are strings"}},
		{"bad unit", head + "  - {name: a, type: timestamp(ns)}\n", []string{"timestamp(ms) or timestamp(us)"}},
		{"struct without fields", head + "  - {name: a, type: struct}\n", []string{"a: type struct needs fields"}},
		{"list of struct without fields", head + "  - {name: a, type: list<struct>}\n", []string{"a: type list<struct> needs fields"}},
		{"fields on a scalar", head + "  - name: a\n    type: string\n    fields:\n      - {name: b, type: string}\n", []string{"a: fields given, but type string holds no struct"}},
		{"nested errors", head + "  - name: ctx\n    type: struct\n    fields:\n      - name: page\n        type: struct\n        fields:\n          - {name: url, type: strin}\n          - {name: url, type: string}\n",
			[]string{"line 9: ctx.page.url: unknown type", "line 10: ctx.page.url: declared twice"}},
		{"nullable not bool", head + "  - {name: a, type: string, nullable: maybe}\n", []string{"nullable must be true or false"}},
		{"null default, required", head + "  - {name: a, type: string, default: null}\n", []string{"a: default is null, but the field is not nullable"}},
		{"int default", head + "  - {name: a, type: int64, default: 1.5}\n", []string{"a: default: 1.5 is not a whole number"}},
		{"int32 range", head + "  - {name: a, type: int32, default: 2147483648}\n", []string{"out of range for int32"}},
		{"float range", head + "  - {name: a, type: float, default: 1e300}\n", []string{"out of range for float"}},
		{"infinity", head + "  - {name: a, type: double, default: .inf}\n", []string{"cannot be written as JSON"}},
		{"string default", head + "  - {name: a, type: string, default: 12}\n", []string{"12 is not a string"}},
		{"bool default", head + "  - {name: a, type: bool, default: yes}\n", []string{`"yes" is not true or false`}},
		{"timestamp default", head + "  - {name: a, type: timestamp, default: yesterday}\n", []string{"not an RFC 3339 timestamp"}},
		{"date default", head + "  - {name: a, type: date, default: 2023-02-29}\n", []string{"not a date"}},
		{"bytes default", head + "  - {name: a, type: bytes, default: '%%%'}\n", []string{"not base64"}},
		{"list default", head + "  - {name: a, type: 'list<int32>', default: [1, x]}\n", []string{`a[1]: default: "x" is not a whole number`}},
		{"map default", head + "  - {name: a, type: 'map<bool>', default: {k: 1}}\n", []string{"a{k}: default: 1 is not true or false"}},
		{"struct default unknown", head + "  - name: a\n    type: struct\n    default: {x: 1}\n    fields:\n      - {name: b, type: int64, nullable: true}\n", []string{"a: default: no such field x"}},
		{"struct default missing", head + "  - name: a\n    type: struct\n    default: {}\n    fields:\n      - {name: b, type: int64}\n", []string{"a.b: default: missing"}},
		{"from nested", head + "  - name: a\n    type: struct\n    fields:\n      - {name: b, type: int64, from: x.y}\n", []string{"a.b: from is allowed on top-level fields only"}},
		{"from empty part", head + "  - {name: a, type: int64, from: 'properties..x'}\n", []string{"empty part"}},
		{"extra not a string", head + "  - {name: _extra, type: int64, nullable: true}\n", []string{"_extra keeps undeclared keys as JSON text and must be a string"}},
		{"extends clash", "name: t\nextends: activity\nfields:\n  - {name: userid, type: string}\n", []string{"userid: declared twice"}},
		{"alias bomb", head + "  - name: a\n    type: 'list<list<list<list<list<int32>>>>>'\n    default: [&e [&d [&c [&b [&a [1,1,1,1,1,1,1,1,1,1], *a,*a,*a,*a,*a,*a,*a,*a,*a], *b,*b,*b,*b,*b,*b,*b,*b,*b], *c,*c,*c,*c,*c,*c,*c,*c,*c], *d,*d,*d,*d,*d,*d,*d,*d,*d], *e,*e,*e,*e,*e,*e,*e,*e,*e]\n",
			[]string{"a: default: more than 10000 values"}},
		{"every error at once", head + "  - {name: a, type: nope}\n  - {name: b}\n  - {name: c, type: int32, default: x}\n",
			[]string{"a: unknown type", "b: type is missing", "c: default"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse([]byte(tc.yaml))
			if err == nil {
				t.Fatalf("parsed: %+v", s)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not say %q", err, w)
				}
			}
		})
	}
}

func TestValidateBuiltInCode(t *testing.T) {
	good := &Schema{Name: "x", Fields: []Field{
		{Name: "a", Type: Type{Kind: Timestamp, Unit: Micros}},
		{Name: "b", Type: Type{Kind: List, Elem: &Type{Kind: Int64}}, Default: []any{1, int64(2)}},
	}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		s    *Schema
		want string
	}{
		{&Schema{Fields: []Field{{Name: "a", Type: Type{Kind: String}}}}, "name is empty"},
		{&Schema{Name: "x"}, "no fields"},
		{&Schema{Name: "x", Fields: []Field{{Name: "a", Type: Type{Kind: Timestamp}}}}, `a: timestamp unit ""`},
		{&Schema{Name: "x", Fields: []Field{{Name: "a", Type: Type{Kind: List}}}}, "a: list without an element type"},
		{&Schema{Name: "x", Fields: []Field{{Name: "a", Type: Type{Kind: Struct}}}}, "a: struct without fields"},
		{&Schema{Name: "x", Fields: []Field{{Name: "a", Type: Type{Kind: String, Elem: &Type{Kind: String}}}}}, "a: type string has an element type"},
		{&Schema{Name: "x", Fields: []Field{{Name: "a", Type: Type{Kind: "decimal"}}}}, `a: unknown type "decimal"`},
		{&Schema{Name: "x", Fields: []Field{{Name: "a", Type: Type{Kind: Int32}, Default: "1"}}}, `a: default: "1" is not a whole number`},
	} {
		err := tc.s.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.s, err, tc.want)
		}
	}
}

func TestParseType(t *testing.T) {
	for in, want := range map[string]string{
		"string":                    "string",
		" timestamp ":               "timestamp(ms)",
		"timestamp( us )":           "timestamp(us)",
		"map<string,int32>":         "map<int32>",
		"map< string , list<date>>": "map<list<date>>",
		"list<map<string,bytes>>":   "list<map<bytes>>",
		"list<list<struct>>":        "list<list<struct>>",
		"map<map<string, bool>>":    "map<map<bool>>",
	} {
		got, err := ParseType(in)
		if err != nil || got.String() != want {
			t.Errorf("ParseType(%q) = %v, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"", "list<>", "list<string", "map<int32,string>", "timestamp(s)", "struct<a>", "int"} {
		if _, err := ParseType(in); err == nil {
			t.Errorf("ParseType(%q) succeeded", in)
		}
	}
}

func TestActivity(t *testing.T) {
	s := Activity()
	for _, path := range [][]string{
		{"type"}, {"event"}, {"messageId"}, {"anonymousId"}, {"userId"}, {"timestamp"}, {"sentAt"}, {"receivedAt"},
		{"context", "page", "url"}, {"context", "page", "path"}, {"context", "page", "referrer"}, {"context", "page", "title"}, {"context", "page", "search"},
		{"context", "userAgent"}, {"context", "browser", "name"}, {"context", "os", "version"}, {"context", "device", "type"},
		{"context", "ip"}, {"context", "locale"},
		{"context", "campaign", "name"}, {"context", "campaign", "source"}, {"context", "campaign", "medium"}, {"context", "campaign", "term"}, {"context", "campaign", "content"},
		{"context", "library", "name"}, {"context", "library", "version"},
		{"properties"}, {"traits"},
	} {
		f, ok := lookup(s.Fields, path)
		if !ok {
			t.Errorf("no field %s", Path(path...))
			continue
		}
		if f.Doc == "" {
			t.Errorf("%s has no doc", Path(path...))
		}
	}
	var undocumented []string
	walk(s.Fields, nil, func(path []string, f Field) {
		if f.Doc == "" {
			undocumented = append(undocumented, Path(path...))
		}
	})
	if len(undocumented) > 0 {
		t.Errorf("fields without doc: %v", undocumented)
	}
	for name, kind := range map[string]Kind{"properties": String, "traits": String, "timestamp": Timestamp, "type": String} {
		if f, _ := s.Field(name); f.Type.Kind != kind {
			t.Errorf("%s: %s, want %s", name, f.Type.Kind, kind)
		}
	}
	as, err := s.Arrow()
	if err != nil {
		t.Fatal(err)
	}
	ts, _ := as.FieldsByName("timestamp")
	if want := (&arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}); !arrow.TypeEqual(ts[0].Type, want) || ts[0].Nullable {
		t.Errorf("timestamp: %v", ts[0])
	}
	ctx, _ := as.FieldsByName("context")
	st := ctx[0].Type.(*arrow.StructType)
	page, _ := st.FieldByName("page")
	if page.Type.(*arrow.StructType).NumFields() != 5 {
		t.Errorf("context.page: %v", page.Type)
	}
	if doc, _ := ts[0].Metadata.GetValue("doc"); doc == "" {
		t.Error("timestamp: no doc in the Arrow metadata")
	}
	// Each call is a copy.
	s.Fields[0].Name = "changed"
	if Activity().Fields[0].Name != "type" {
		t.Error("Activity() shares its fields")
	}
	// The embedded text parses to the same thing.
	if _, err := Parse(ActivityYAML()); err != nil {
		t.Error(err)
	}
	if b, _ := os.ReadFile("activity.yaml"); string(b) != string(ActivityYAML()) {
		t.Error("ActivityYAML is not activity.yaml")
	}
}

func lookup(fs []Field, path []string) (Field, bool) {
	for _, f := range fs {
		if f.Name != path[0] {
			continue
		}
		if len(path) == 1 {
			return f, true
		}
		return lookup(f.Type.Fields, path[1:])
	}
	return Field{}, false
}

func walk(fs []Field, parent []string, fn func([]string, Field)) {
	for _, f := range fs {
		path := append(append([]string(nil), parent...), f.Name)
		fn(path, f)
		t := f.Type
		for t.Elem != nil {
			t = *t.Elem
		}
		walk(t.Fields, path, fn)
	}
}
