package schema

import (
	"errors"
	"strings"
	"testing"
)

// fieldsSchema parses a schema from the YAML of its fields.
func fieldsSchema(t *testing.T, version int, fields string) *Schema {
	t.Helper()
	s, err := Parse([]byte("name: t\nversion: " + string(rune('0'+version)) + "\nfields:\n" + fields))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCheck(t *testing.T) {
	const base = "  - {name: id, type: string}\n  - {name: n, type: int32, nullable: true}\n"
	for _, tc := range []struct {
		name     string
		old, new string
		// want, per mode: "" compatible, else substrings of the error,
		// separated by "|".
		backward, forward, full string
	}{
		{"same", base, base, "", "", ""},
		{"reordered, new docs", base,
			"  - {name: n, type: int32, nullable: true, doc: count}\n  - {name: id, type: string, doc: the id}\n", "", "", ""},
		{"add nullable", base, base + "  - {name: x, type: string, nullable: true}\n", "", "", ""},
		{"add defaulted", base, base + "  - {name: x, type: int64, default: 0}\n", "", "", ""},
		{"add required", base, base + "  - {name: x, type: string}\n",
			"x: added as required without a default: data written with the old schema has no value for it (breaks backward", "", "x: added as required"},
		{"remove nullable", base, "  - {name: id, type: string}\n", "", "", ""},
		{"remove required", base, "  - {name: n, type: int32, nullable: true}\n",
			"", "id: removed, but it was required without a default: readers of the old schema need it (breaks forward", "id: removed"},
		{"remove defaulted", "  - {name: id, type: string, default: none}\n" + base[len("  - {name: id, type: string}\n"):],
			"  - {name: n, type: int32, nullable: true}\n", "", "", ""},
		{"int32 to int64", base, "  - {name: id, type: string}\n  - {name: n, type: int64, nullable: true}\n",
			"", "n: type changed from int32 to int64: readers of the old schema cannot narrow it back", "n: type changed from int32 to int64"},
		{"int64 to int32", "  - {name: n, type: int64}\n", "  - {name: n, type: int32}\n",
			"n: type changed from int64 to int32, which does not widen it (breaks backward", "", "n: type changed"},
		{"int32 to double", "  - {name: n, type: int32}\n", "  - {name: n, type: double}\n", "", "n: type changed from int32 to double", "n: type"},
		{"int64 to double", "  - {name: n, type: int64}\n", "  - {name: n, type: double}\n", "n: type changed from int64 to double", "n: type", "n: type"},
		{"int32 to float", "  - {name: n, type: int32}\n", "  - {name: n, type: float}\n", "n: type changed from int32 to float", "n: type", "n: type"},
		{"float to double", "  - {name: n, type: float}\n", "  - {name: n, type: double}\n", "", "n: type changed from float to double", "n: type"},
		{"ms to us", "  - {name: t, type: timestamp(ms)}\n", "  - {name: t, type: timestamp(us)}\n", "", "t: type changed from timestamp(ms) to timestamp(us)", "t: type"},
		{"us to ms", "  - {name: t, type: timestamp(us)}\n", "  - {name: t, type: timestamp(ms)}\n", "t: type changed from timestamp(us) to timestamp(ms)", "", "t: type"},
		{"int to string", "  - {name: p, type: int64}\n", "  - {name: p, type: string}\n", "p: type changed from int64 to string", "p: type", "p: type"},
		{"string to bytes", "  - {name: p, type: string}\n", "  - {name: p, type: bytes}\n", "p: type", "p: type", "p: type"},
		{"date to timestamp", "  - {name: p, type: date}\n", "  - {name: p, type: timestamp}\n", "p: type", "p: type", "p: type"},
		{"scalar to struct", "  - {name: p, type: string}\n", "  - name: p\n    type: struct\n    fields: [{name: a, type: string, nullable: true}]\n",
			"p: type changed from string to struct", "p: type changed from string to struct", "p: type"},
		{"tighten nullability", base, "  - {name: id, type: string}\n  - {name: n, type: int32}\n",
			"n: made required (it was nullable): data written with the old schema may hold nulls (breaks backward", "", "n: made required"},
		{"tighten nullability with a default", base, "  - {name: id, type: string}\n  - {name: n, type: int32, default: 0}\n",
			"n: made required", "", "n: made required"},
		{"loosen nullability", base, "  - {name: id, type: string, nullable: true}\n  - {name: n, type: int32, nullable: true}\n",
			"", "id: made nullable (it was required): readers of the old schema take no nulls", "id: made nullable"},
		{"list element widens", "  - {name: l, type: 'list<int32>'}\n", "  - {name: l, type: 'list<int64>'}\n", "", "l[]: type changed from int32 to int64", "l[]"},
		{"list element changes", "  - {name: l, type: 'list<int32>'}\n", "  - {name: l, type: 'list<string>'}\n", "l[]: type changed from int32 to string", "l[]", "l[]"},
		{"map value changes", "  - {name: m, type: 'map<float>'}\n", "  - {name: m, type: 'map<bool>'}\n", "m{}: type changed from float to bool", "m{}", "m{}"},
		{"list to map", "  - {name: m, type: 'list<float>'}\n", "  - {name: m, type: 'map<float>'}\n", "m: type changed from list<float> to map<float>", "m: type", "m: type"},
		{"nested struct add required",
			"  - name: c\n    type: struct\n    fields:\n      - name: page\n        type: struct\n        fields: [{name: url, type: string}]\n",
			"  - name: c\n    type: struct\n    fields:\n      - name: page\n        type: struct\n        fields: [{name: url, type: string}, {name: title, type: string}]\n",
			"c.page.title: added as required", "", "c.page.title"},
		{"nested struct add nullable",
			"  - name: c\n    type: struct\n    fields: [{name: a, type: string}]\n",
			"  - name: c\n    type: struct\n    fields: [{name: a, type: string}, {name: b, type: int64, nullable: true}]\n", "", "", ""},
		{"struct in list",
			"  - name: items\n    type: list<struct>\n    fields: [{name: sku, type: string}, {name: qty, type: int32}]\n",
			"  - name: items\n    type: list<struct>\n    fields: [{name: sku, type: bytes}]\n",
			"items[].sku: type changed from string to bytes", "items[].qty: removed|items[].sku: type", "items[].sku|items[].qty"},
		{"every problem listed", base,
			"  - {name: id, type: int64}\n  - {name: n, type: int32}\n  - {name: x, type: string}\n",
			"id: type changed from string to int64|n: made required|x: added as required", "id: type", "id: type|n: made required|x: added"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old, new := fieldsSchema(t, 1, tc.old), fieldsSchema(t, 2, tc.new)
			for _, m := range []struct {
				mode Mode
				want string
			}{{Backward, tc.backward}, {Forward, tc.forward}, {Full, tc.full}} {
				err := Check(old, new, m.mode)
				if m.want == "" {
					if err != nil {
						t.Errorf("%s: %v", m.mode, err)
					}
					continue
				}
				var ie *IncompatibleError
				if !errors.As(err, &ie) {
					t.Errorf("%s: %v, want an *IncompatibleError", m.mode, err)
					continue
				}
				for _, w := range strings.Split(m.want, "|") {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: error\n%v\ndoes not say %q", m.mode, err, w)
					}
				}
			}
		})
	}
}

func TestCheckError(t *testing.T) {
	old := fieldsSchema(t, 1, "  - {name: a, type: int64}\n")
	new := fieldsSchema(t, 2, "  - {name: a, type: string}\n  - {name: b, type: string}\n")
	err := Check(old, new, Full)
	var ie *IncompatibleError
	if !errors.As(err, &ie) {
		t.Fatal(err)
	}
	if ie.Mode != Full || len(ie.Problems) != 3 {
		t.Fatalf("%+v", ie)
	}
	if p := ie.Problems[0]; p.Path != "a" || p.Direction != Backward {
		t.Errorf("first problem %+v", p)
	}
	if !strings.HasPrefix(err.Error(), "formats/schema: t v2 is not full compatible with t v1:\n\ta: ") {
		t.Errorf("message: %q", err)
	}
	if err := Check(nil, new, Full); err == nil {
		t.Error("nil schema accepted")
	}
	if err := Check(old, new, Mode(9)); err == nil || !strings.Contains(err.Error(), "unknown mode") {
		t.Errorf("unknown mode: %v", err)
	}
}

func TestCheckActivityEvolution(t *testing.T) {
	a := Activity()
	if err := Check(a, Activity(), Full); err != nil {
		t.Fatal(err)
	}
	// A version that also keeps the screen size: compatible both ways.
	b := Activity()
	ctx := &b.Fields[indexOf(t, b, "context")]
	ctx.Type.Fields = append(ctx.Type.Fields, Field{Name: "screen", Nullable: true, Doc: "Screen size.",
		Type: Type{Kind: Struct, Fields: []Field{{Name: "width", Type: Type{Kind: Int32}}, {Name: "height", Type: Type{Kind: Int32}}}}})
	b.Version = 2
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := Check(a, b, Full); err != nil {
		t.Error(err)
	}
	// Making userId required stops the loader, naming the field.
	b.Fields[indexOf(t, b, "userId")].Nullable = false
	if err := Check(a, b, Backward); err == nil || !strings.Contains(err.Error(), "userId: made required") {
		t.Errorf("%v", err)
	}
}

func indexOf(t *testing.T, s *Schema, name string) int {
	for i, f := range s.Fields {
		if f.Name == name {
			return i
		}
	}
	t.Fatalf("no field %s", name)
	return -1
}

func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"backward": Backward, "FORWARD": Forward, " full ": Full} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %v, %v", in, got, err)
		}
		if got, _ := ParseMode(want.String()); got != want {
			t.Errorf("%v does not round trip", want)
		}
	}
	if _, err := ParseMode("none"); err == nil {
		t.Error("ParseMode(none) succeeded")
	}
}
