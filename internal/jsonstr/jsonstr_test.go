package jsonstr

import (
	"encoding/json"
	"testing"
)

// Append writes what encoding/json writes for a string, except that it
// leaves <, > and & alone (as json.Encoder with SetEscapeHTML(false)).
func FuzzAppendMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{"", "plain", "quote\" back\\slash", "\n\r\t\x00\x1f", "héllo ✓", "bad \xff\xfe utf8", "\xe2\x82"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Append(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("Append(%q) = %s: not JSON: %v", s, got, err)
		}
		var want string
		b, _ := json.Marshal(s)
		json.Unmarshal(b, &want)
		if back != want {
			t.Fatalf("Append(%q) reads back %q, encoding/json's %q", s, back, want)
		}
		if string(Append(nil, []byte(s))) != string(got) {
			t.Fatalf("string and []byte differ for %q", s)
		}
	})
}
