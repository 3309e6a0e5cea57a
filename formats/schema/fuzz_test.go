package schema

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzParse: any input is a schema or an error, never a panic, and a schema
// survives Marshal and Parse.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"every_type.yaml", "promoted.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(ActivityYAML())
	f.Add([]byte("name: t\nfields:\n  - {name: a, type: 'map<string,list<struct>>', fields: [{name: b, type: 'list<int32>', default: [1]}]}\n"))
	f.Add([]byte("name: t\nfields: [{name: a, type: timestamp(us), default: 1}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			return
		}
		if _, err := s.Arrow(); err != nil {
			t.Fatalf("parsed, but no Arrow schema: %v", err)
		}
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
	})
}

// FuzzInfer: any sample is inferred or refused, never a panic, and what is
// inferred is a valid schema.
func FuzzInfer(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":{"c":[1,2.5,"x"]},"t":"2024-01-01T00:00:00Z"}`), []byte(`{"a":"s","b":"flat"}`))
	f.Add([]byte(`{"l":[[{"x":null}]],"A":1,"a":2}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		s, err := Infer([][]byte{a, b})
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Arrow(); err != nil {
			t.Fatal(err)
		}
	})
}
