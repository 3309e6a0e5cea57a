package compat

import (
	"errors"
	"strings"
	"testing"
)

func rec(fields string) Schema {
	return Schema{Text: `{"type":"record","name":"E","namespace":"t","fields":[` + fields + `]}`}
}

func TestAvro(t *testing.T) {
	t.Parallel()
	v1 := rec(`{"name":"a","type":"int"}`)
	cases := []struct {
		name          string
		old, new      Schema
		backward, fwd bool
	}{
		{"field added with default", v1, rec(`{"name":"a","type":"int"},{"name":"b","type":"string","default":"x"}`), true, true},
		{"field added without default", v1, rec(`{"name":"a","type":"int"},{"name":"b","type":"string"}`), false, true},
		{"field removed", rec(`{"name":"a","type":"int"},{"name":"b","type":"string"}`), v1, true, false},
		{"int to long", v1, rec(`{"name":"a","type":"long"}`), true, false},
		{"long to double", rec(`{"name":"a","type":"long"}`), rec(`{"name":"a","type":"double"}`), true, false},
		{"int to string", v1, rec(`{"name":"a","type":"string"}`), false, false},
		{"string to bytes", rec(`{"name":"a","type":"string"}`), rec(`{"name":"a","type":"bytes"}`), true, true},
		{"made nullable", v1, rec(`{"name":"a","type":["null","int"]}`), true, false},
		{"enum symbol added", rec(`{"name":"a","type":{"type":"enum","name":"S","symbols":["X","Y"]}}`),
			rec(`{"name":"a","type":{"type":"enum","name":"S","symbols":["X","Y","Z"]}}`), true, false},
		{"record renamed", v1, Schema{Text: `{"type":"record","name":"F","namespace":"t","fields":[{"name":"a","type":"int"}]}`}, false, false},
	}
	for _, c := range cases {
		for _, lv := range []struct {
			l    Level
			want bool
		}{{Backward, c.backward}, {Forward, c.fwd}, {Full, c.backward && c.fwd}, {None, true}} {
			msgs, err := Check(lv.l, c.new, []Schema{c.old})
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, lv.l, err)
			}
			if (len(msgs) == 0) != lv.want {
				t.Errorf("%s at %s: compatible=%v, want %v (%v)", c.name, lv.l, len(msgs) == 0, lv.want, msgs)
			}
		}
	}
}

func TestTransitive(t *testing.T) {
	t.Parallel()
	// v1 has b without default; v2 drops it; v3 adds it back without a
	// default: v3 reads v2's data? no (b missing, no default). Use a
	// chain where only the oldest disagrees: v1 a:int, v2 a:long, v3 a:int.
	v1 := rec(`{"name":"a","type":"long"}`)
	v2 := rec(`{"name":"a","type":"long"},{"name":"b","type":"int","default":0}`)
	v3 := rec(`{"name":"a","type":"long"},{"name":"b","type":"int"}`) // b without default: cannot read v1
	msgs, _ := Check(Backward, v3, []Schema{v1, v2})
	if len(msgs) != 0 {
		t.Fatalf("BACKWARD against v2 only: %v", msgs)
	}
	msgs, _ = Check(BackwardTransitive, v3, []Schema{v1, v2})
	if len(msgs) != 1 || !strings.HasPrefix(msgs[0], "BACKWARD:") {
		t.Fatalf("BACKWARD_TRANSITIVE: %v, want one message about v1", msgs)
	}
}

func TestJSON(t *testing.T) {
	t.Parallel()
	base := Schema{Type: JSON, Text: `{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]}`}
	closedBase := Schema{Type: JSON, Text: `{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}`}
	partial := Schema{Type: JSON, Text: `{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":{"type":"string"}}`}
	pattern := Schema{Type: JSON, Text: `{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"patternProperties":{"^s_":{"type":"string"}},"additionalProperties":false}`}
	twoProps := Schema{Type: JSON, Text: `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a"]}`}
	cases := []struct {
		name          string
		old           Schema
		new           string
		backward, fwd bool
		difference    string // Confluent's name in the backward message, if any
	}{
		// Confluent's STRICT rules: a property added to an open content
		// model is incompatible (an old document may carry it with any
		// value), removed from one compatible.
		{"optional property added to open", base, `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a"]}`, false, true, "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"},
		{"required property added to open", base, `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a","b"]}`, false, true, "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"},
		{"required property with default added to open", base, `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string","default":""}},"required":["a","b"]}`, false, true, "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL"},
		{"empty schema added to open", base, `{"type":"object","properties":{"a":{"type":"integer"},"b":{}},"required":["a"]}`, true, true, ""},
		{"optional property added to closed", closedBase, `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false}`, true, false, ""},
		{"required property added to closed", closedBase, `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a","b"],"additionalProperties":false}`, false, false, "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"},
		{"required property with default added to closed", closedBase, `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string","default":""}},"required":["a","b"],"additionalProperties":false}`, true, false, ""},
		{"property removed from closed", Schema{Type: JSON, Text: `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false}`}, closedBase.Text, false, true, "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"},
		{"property added covered by additionalProperties", partial, `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string","maxLength":3}},"required":["a"],"additionalProperties":{"type":"string"}}`, true, true, ""},
		{"property added not covered by additionalProperties", partial, `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a"],"additionalProperties":{"type":"string"}}`, false, false, "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
		{"property added covered by patternProperties", pattern, `{"type":"object","properties":{"a":{"type":"integer"},"s_b":{"type":"string"}},"required":["a"],"patternProperties":{"^s_":{"type":"string"}},"additionalProperties":false}`, true, true, ""},
		{"property added not covered by patternProperties", pattern, `{"type":"object","properties":{"a":{"type":"integer"},"s_b":{"type":"boolean"}},"required":["a"],"patternProperties":{"^s_":{"type":"string"}},"additionalProperties":false}`, false, false, "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
		{"closed, a property added", base, `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false}`, false, true, "ADDITIONAL_PROPERTIES_REMOVED"},
		{"required attribute added", twoProps, `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a","b"]}`, false, true, "REQUIRED_ATTRIBUTE_ADDED"},
		{"required attribute with default added", twoProps, `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string","default":""}},"required":["a","b"]}`, true, true, ""},
		{"additionalProperties narrowed", base, partial.Text, false, true, "ADDITIONAL_PROPERTIES_NARROWED"},
		{"additionalProperties false to true", closedBase, `{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":true}`, true, false, ""},
		{"integer widened to number", base, `{"type":"object","properties":{"a":{"type":"number"}},"required":["a"]}`, true, false, ""},
		{"type changed", base, `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, false, false, ""},
		{"closed", base, `{"type":"object","properties":{"a":{"type":"integer"}},"required":["a"],"additionalProperties":false}`, false, true, "ADDITIONAL_PROPERTIES_REMOVED"},
	}
	for _, c := range cases {
		n := Schema{Type: JSON, Text: c.new}
		b, _ := Check(Backward, n, []Schema{c.old})
		f, _ := Check(Forward, n, []Schema{c.old})
		if (len(b) == 0) != c.backward || (len(f) == 0) != c.fwd {
			t.Errorf("%s: backward %v forward %v, want %v %v", c.name, b, f, c.backward, c.fwd)
		}
		if c.difference != "" && !strings.Contains(strings.Join(b, "\n"), c.difference) {
			t.Errorf("%s: backward %v does not name %s", c.name, b, c.difference)
		}
	}
}

func TestCanonical(t *testing.T) {
	t.Parallel()
	a, err := Canonical(Schema{Text: "{ \"type\": \"string\" }"})
	if err != nil || a != `{"type":"string"}` {
		t.Fatalf("%q %v", a, err)
	}
	if _, err := Canonical(Schema{Text: `{"type":"record","name":"x"}`}); err == nil {
		t.Fatal("a record without fields parsed")
	}
	if _, err := Canonical(Schema{Type: "PROTOBUF", Text: "syntax"}); err == nil {
		t.Fatal("protobuf accepted")
	}
}

// deepJSON nests n levels of properties, each required, the innermost an
// integer or a string.
func deepJSON(n int, leaf string) Schema {
	var b strings.Builder
	for range n {
		b.WriteString(`{"type":"object","required":["p"],"properties":{"p":`)
	}
	b.WriteString(`{"type":"` + leaf + `"}`)
	for range n {
		b.WriteString(`}}`)
	}
	return Schema{Type: JSON, Text: b.String()}
}

// deepAvro nests n records, each holding the next in field f.
func deepAvro(n int) Schema {
	var b strings.Builder
	for i := range n {
		b.WriteString(`{"type":"record","name":"R` + strings.Repeat("x", i%3) + `","namespace":"n` + strings.Repeat("a", i) + `","fields":[{"name":"f","type":`)
	}
	b.WriteString(`"int"`)
	for range n {
		b.WriteString(`}]}`)
	}
	return Schema{Text: b.String()}
}

// A schema a stranger nests 2000 deep is refused before it is parsed
// (it cost the JSON check 378 MB); 64 levels still work, and their
// incompatibility is reported at its path.
func TestDeepSchemas(t *testing.T) {
	t.Parallel()
	for _, s := range []Schema{deepJSON(2000, "integer"), deepAvro(2000)} {
		if _, err := Canonical(s); !errors.Is(err, ErrTooDeep) {
			t.Fatalf("%s nested 2000 deep: %v, want ErrTooDeep", s.typ(), err)
		}
		if _, err := Check(Full, s, []Schema{s}); !errors.Is(err, ErrTooDeep) {
			t.Fatalf("check of %s nested 2000 deep: %v, want ErrTooDeep", s.typ(), err)
		}
	}
	if _, err := Canonical(deepAvro(64)); err != nil {
		t.Fatalf("Avro nested 64 deep: %v", err)
	}
	msgs, err := Check(Backward, deepJSON(64, "string"), []Schema{deepJSON(64, "integer")})
	if err != nil || len(msgs) != 1 || !strings.Contains(msgs[0], strings.Repeat("/properties/p", 64)+": type integer") {
		t.Fatalf("64 deep: %v %v", msgs, err)
	}
}

// TestReferences: named Avro types and JSON $refs are resolved through the
// references given, so the checks see what they name.
func TestReferences(t *testing.T) {
	t.Parallel()
	addr := Ref{Name: "t.Addr", Text: `{"type":"record","name":"Addr","namespace":"t","fields":[{"name":"city","type":"string"}]}`}
	p := func(fields string) Schema {
		return Schema{Text: `{"type":"record","name":"P","namespace":"t","fields":[{"name":"home","type":"t.Addr"}` + fields + `]}`, Refs: []Ref{addr}}
	}
	if _, err := Canonical(Schema{Text: p("").Text}); err == nil {
		t.Fatal("an unknown named type parsed without its reference")
	}
	if _, err := Canonical(p("")); err != nil {
		t.Fatal(err)
	}
	if msgs, _ := Check(Backward, p(`,{"name":"n","type":"int"}`), []Schema{p("")}); len(msgs) == 0 {
		t.Fatal("a field without default added behind a reference: compatible")
	}
	money := Ref{Name: "money.json", Text: `{"definitions":{"M":{"type":"object"}},"$ref":"#/definitions/M"}`}
	js := func(total string) Schema {
		return Schema{Type: JSON, Text: `{"type":"object","properties":{"total":` + total + `}}`, Refs: []Ref{money}}
	}
	if msgs, _ := Check(Backward, js(`{"$ref":"money.json"}`), []Schema{js(`{"type":"string"}`)}); len(msgs) == 0 {
		t.Fatal("string to a $ref to an object (through a local pointer): compatible")
	}
	if msgs, _ := Check(Backward, js(`{"$ref":"money.json"}`), []Schema{js(`{"type":"object"}`)}); len(msgs) != 0 {
		t.Fatalf("object to a $ref to an object: %v", msgs)
	}
	// A recursive schema expands to a bound and terminates.
	rec := Schema{Type: JSON, Text: `{"type":"object","properties":{"next":{"$ref":"#"}}}`}
	if msgs, err := Check(Full, rec, []Schema{rec}); err != nil || len(msgs) != 0 {
		t.Fatalf("recursive schema against itself: %v %v", msgs, err)
	}
}

func TestNormalize(t *testing.T) {
	t.Parallel()
	a, err := Normalize(Schema{Text: `{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"type":"string","name":"b"}]}`})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Normalize(Schema{Text: `{"fields":[{"type":"int","name":"a"},{"name":"b","type":"string"}],"name":"R","type":"record"}`})
	if a != b {
		t.Fatalf("key order differs after normalize:\n%s\n%s", a, b)
	}
	p1, err := Normalize(Schema{Type: Protobuf, Text: "syntax = \"proto3\";\n// c\nmessage M { string a = 1; }"})
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := Normalize(Schema{Type: Protobuf, Text: `syntax="proto3"; message M {string a=1;}`})
	if p1 != p2 {
		t.Fatal("protobuf layout differs after normalize")
	}
	if again, _ := Normalize(Schema{Type: Protobuf, Text: p1}); again != p1 {
		t.Fatal("normalize of a normalized protobuf schema changed it")
	}
}
