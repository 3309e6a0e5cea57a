package schema

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// describeFields prints fields as "name type" lines, "?" after a nullable
// type, nested struct members indented.
func describeFields(fs []Field, indent string) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(indent + f.Name + " " + f.Type.String())
		if f.Nullable {
			b.WriteString("?")
		}
		b.WriteString("\n")
		t := f.Type
		for t.Elem != nil {
			t = *t.Elem
		}
		b.WriteString(describeFields(t.Fields, indent+"  "))
	}
	return b.String()
}

func inferred(t *testing.T, opts InferOptions, samples ...string) *Schema {
	t.Helper()
	in := make([][]byte, len(samples))
	for i, s := range samples {
		in[i] = []byte(s)
	}
	s, err := InferWith(in, opts)
	if err != nil {
		t.Fatal(err)
	}
	// Whatever inference makes prints as YAML that parses back to itself.
	roundTrip(t, s)
	if _, err := s.Arrow(); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestInfer(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []string
		want    string
	}{
		{"int", []string{`{"a":1}`, `{"a":-9223372036854775808}`}, "a int64\n"},
		{"int then double", []string{`{"a":1}`, `{"a":2.5}`}, "a double\n"},
		{"beyond int64", []string{`{"a":1}`, `{"a":18446744073709551616}`}, "a double\n"},
		{"exponent", []string{`{"a":1e3}`}, "a double\n"},
		{"number then string", []string{`{"a":1}`, `{"a":2.5}`, `{"a":"x"}`}, "a string\n"},
		{"bool", []string{`{"a":true}`, `{"a":false}`}, "a bool\n"},
		{"bool and number", []string{`{"a":true}`, `{"a":1}`}, "a string\n"},
		{"bool and string", []string{`{"a":"yes"}`, `{"a":false}`}, "a string\n"},
		{"only null", []string{`{"a":null}`, `{"a":null}`}, "a string?\n"},
		{"null widens nothing", []string{`{"a":null}`, `{"a":3}`}, "a int64?\n"},
		{"absent is nullable", []string{`{"a":1,"b":"x"}`, `{"a":2}`}, "a int64\nb string?\n"},
		{"document order", []string{`{"z":1,"a":2,"m":3}`, `{"b":1,"a":2}`}, "z int64?\na int64\nm int64?\nb int64?\n"},
		{"timestamp ms", []string{`{"t":"2024-05-01T10:00:00.123Z"}`, `{"t":"2024-05-01T10:00:00+02:00"}`}, "t timestamp(ms)\n"},
		{"timestamp us", []string{`{"t":"2024-05-01T10:00:00.123Z"}`, `{"t":"2024-05-01T10:00:00.123456Z"}`}, "t timestamp(us)\n"},
		{"timestamp and text", []string{`{"t":"2024-05-01T10:00:00Z"}`, `{"t":"soon"}`}, "t string\n"},
		{"date", []string{`{"d":"2024-05-01"}`, `{"d":"2024-02-29"}`}, "d date\n"},
		{"date and timestamp", []string{`{"d":"2024-05-01"}`, `{"d":"2024-05-01T10:00:00Z"}`}, "d string\n"},
		{"not quite a date", []string{`{"d":"2024-13-01"}`}, "d string\n"},
		{"nested object", []string{`{"c":{"p":{"url":"u"}}}`, `{"c":{"p":{"url":"v","n":1}}}`, `{}`},
			"c struct?\n  p struct\n    url string\n    n int64?\n"},
		{"empty object", []string{`{"o":{}}`, `{"o":{}}`}, "o string\n"},
		{"list", []string{`{"l":[1,2]}`, `{"l":[2.5]}`, `{"l":[]}`}, "l list<double>\n"},
		{"empty lists", []string{`{"l":[]}`, `{"l":[]}`}, "l list<string>\n"},
		{"list with nulls", []string{`{"l":[null,1]}`}, "l list<int64>\n"},
		{"list of lists", []string{`{"l":[[1],[2,"x"]]}`}, "l list<list<string>>\n"},
		{"list of objects", []string{`{"l":[{"a":1},{"a":2,"b":true}]}`}, "l list<struct>\n  a int64\n  b bool?\n"},
		{"sometimes object, sometimes string", []string{`{"a":1,"b":{"c":1}}`, `{"a":2,"b":"flat"}`}, "a int64\n_extra string?\n"},
		{"sometimes list, sometimes number", []string{`{"b":[1]}`, `{"b":1}`}, "_extra string?\n"},
		{"list of objects and strings", []string{`{"a":1,"b":[{"c":1},"x"]}`}, "a int64\n_extra string?\n"},
		{"object and list", []string{`{"b":{"c":1}}`, `{"b":[1]}`}, "_extra string?\n"},
		{"unstable nested member", []string{`{"c":{"x":1,"y":{}}}`, `{"c":{"x":2,"y":3}}`}, "c struct\n  x int64\n  _extra string?\n"},
		{"only unstable members", []string{`{"c":{"y":{}}}`, `{"c":{"y":3}}`}, "c string\n"},
		{"bad names", []string{`{"ok":1,"a-b":1,"1x":2,"$p":3,"":4}`}, "ok int64\n_extra string?\n"},
		{"case clash", []string{`{"id":1,"ID":2}`}, "id int64\n_extra string?\n"},
		{"literal _extra", []string{`{"a":1,"_extra":{"x":1}}`}, "a int64\n_extra string?\n"},
		{"duplicate key", []string{`{"a":1,"a":"x"}`}, "a string\n"},
		{"unicode", []string{`{"name":"Zoë 🎉","n":-0.0}`}, "name string\nn double\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := inferred(t, InferOptions{}, tc.samples...)
			if got := describeFields(s.Fields, ""); got != tc.want {
				t.Errorf("got\n%swant\n%s", got, tc.want)
			}
		})
	}
}

func TestInferExtraDoc(t *testing.T) {
	s := inferred(t, InferOptions{}, `{"b":{"c":1},"a-b":1}`, `{"b":"flat"}`)
	f, _ := s.Field(Extra)
	for _, want := range []string{"b (an object in some records, not in others)", "a-b (not a valid column name)"} {
		if !strings.Contains(f.Doc, want) {
			t.Errorf("_extra doc %q does not say %q", f.Doc, want)
		}
	}
}

func TestInferDeepNesting(t *testing.T) {
	const depth = 200
	deep := strings.Repeat(`{"a":`, depth) + "1" + strings.Repeat("}", depth)
	s := inferred(t, InferOptions{}, deep, `{"a":{"b":true}}`)
	// Structs down to MaxDepth (32), then one string of JSON text for the rest.
	levels, f := 0, s.Fields[0]
	for f.Type.Kind == Struct {
		levels++
		f = f.Type.Fields[0]
	}
	if levels != 32 || f.Type.Kind != String {
		t.Errorf("%d levels of struct, then %s; want 32 then string", levels, f.Type)
	}

	s = inferred(t, InferOptions{MaxDepth: 3}, `{"l":[[[[1]]]],"o":{"p":{"q":{"r":1}}}}`)
	if got, want := describeFields(s.Fields, ""), "l list<list<list<string>>>\no struct\n  p struct\n    q struct\n      r int64\n"; got != want {
		t.Errorf("got\n%swant\n%s", got, want)
	}

	// Deeper than encoding/json allows: an error, not a crash.
	tooDeep := strings.Repeat("[", 10002) + strings.Repeat("]", 10002)
	if _, err := Infer([][]byte{[]byte(`{"a":` + tooDeep + `}`)}); err == nil {
		t.Error("10,002 levels inferred without error")
	}
}

func TestInferManyKeys(t *testing.T) {
	// 10,000 distinct keys at the top level beside two stable ones: the
	// stable ones stay columns, the rest go to _extra.
	var samples []string
	for i := 0; i < 1000; i++ {
		var b strings.Builder
		fmt.Fprintf(&b, `{"type":"track","n":%d`, i)
		for j := 0; j < 10; j++ {
			fmt.Fprintf(&b, `,"k%d":%d`, i*10+j, j)
		}
		b.WriteString("}")
		samples = append(samples, b.String())
	}
	s := inferred(t, InferOptions{}, samples...)
	if got, want := describeFields(s.Fields, ""), "type string\nn int64\n_extra string?\n"; got != want {
		t.Errorf("top level:\ngot\n%swant\n%s", got, want)
	}
	if f, _ := s.Field(Extra); !strings.Contains(f.Doc, "and 9990 more") {
		t.Errorf("_extra doc: %q", f.Doc)
	}

	// The same keys one level down, all integers: a map.
	nested := make([]string, len(samples))
	for i, smp := range samples {
		nested[i] = `{"id":` + fmt.Sprint(i) + `,"counts":{` + smp[strings.Index(smp, `"k`):] + "}"
	}
	s = inferred(t, InferOptions{}, nested...)
	if got, want := describeFields(s.Fields, ""), "id int64\ncounts map<int64>\n"; got != want {
		t.Errorf("nested:\ngot\n%swant\n%s", got, want)
	}

	// Values of a dictionary that do not agree: the keys present
	// everywhere stay, the rest go to _extra of that level.
	s = inferred(t, InferOptions{MaxKeys: 3},
		`{"d":{"always":1,"a":1,"b":{"x":1}}}`,
		`{"d":{"always":2,"c":"s","e":[1]}}`)
	if got, want := describeFields(s.Fields, ""), "d struct\n  always int64\n  _extra string?\n"; got != want {
		t.Errorf("mixed dictionary:\ngot\n%swant\n%s", got, want)
	}

	// At the limit a level is still a record.
	s = inferred(t, InferOptions{MaxKeys: 3}, `{"a":1,"b":2}`, `{"c":3}`)
	if got, want := describeFields(s.Fields, ""), "a int64?\nb int64?\nc int64?\n"; got != want {
		t.Errorf("at the limit:\ngot\n%swant\n%s", got, want)
	}
}

func TestInferActivityLike(t *testing.T) {
	s := inferred(t, InferOptions{Name: "web"},
		`{"type":"track","event":"Click","messageId":"m1","timestamp":"2024-05-01T10:00:00.123Z","context":{"page":{"url":"https://x/","title":"X"},"ip":"1.2.3.0"},"properties":{"price":9.5,"sku":"a"}}`,
		`{"type":"page","messageId":"m2","userId":"u","timestamp":"2024-05-01T10:00:01Z","context":{"page":{"url":"https://x/y"},"locale":"fr"},"properties":{"price":10}}`,
	)
	want := `type string
event string?
messageId string
timestamp timestamp(ms)
context struct
  page struct
    url string
    title string?
  ip string?
  locale string?
properties struct
  price double
  sku string?
userId string?
`
	if got := describeFields(s.Fields, ""); got != want {
		t.Errorf("got\n%swant\n%s", got, want)
	}
	if s.Name != "web" {
		t.Errorf("name %q", s.Name)
	}
	text, err := Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "doc: 'Inferred: present in 1 of 2.'") {
		t.Errorf("the YAML does not say what inference saw:\n%s", text)
	}
}

func TestInferBadSamples(t *testing.T) {
	for _, tc := range []struct {
		samples []string
		want    string
	}{
		{nil, "no samples"},
		{[]string{`{"a":1}`, `[1]`}, "sample 1: not a JSON object"},
		{[]string{`"x"`}, "sample 0: not a JSON object"},
		{[]string{`{"a":`}, "sample 0:"},
		{[]string{`{"a":1}{"a":2}`}, "sample 0: more than one JSON value"},
		{[]string{``}, "sample 0:"},
	} {
		in := make([][]byte, len(tc.samples))
		for i, s := range tc.samples {
			in[i] = []byte(s)
		}
		_, err := Infer(in)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Infer(%q) = %v, want %q", tc.samples, err, tc.want)
		}
	}
}

func TestInferIsDeterministic(t *testing.T) {
	samples := [][]byte{[]byte(`{"b":{"y":1,"x":[1.5]},"a":"s"}`), []byte(`{"c":true,"b":{"z":null}}`)}
	first, err := Infer(samples)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		again, _ := Infer(samples)
		if !reflect.DeepEqual(first, again) {
			t.Fatal("two inferences from the same samples differ")
		}
	}
}
