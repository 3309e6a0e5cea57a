package tail

import (
	"bytes"
	"encoding/json"
	"testing"
)

// A combined line either fails to parse or becomes a valid JSON object.
func FuzzParseCombined(f *testing.F) {
	f.Add([]byte(combinedLine))
	f.Add([]byte(`::1 - - [01/Jan/2026:00:00:00 +0100] "-" 400 0 "-" "-"`))
	f.Add([]byte(`1.1.1.1 - - [01/Jan/2026:00:00:00 +0000] "GET /a\"b HTTP/2.0" 301 5 "-" "curl \"x\\"`))
	f.Add([]byte(`1.1.1.1 - - [01/Jan/2026:00:00:00 +0000] "`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, line []byte) {
		a, err := parseCombined(line)
		if err != nil {
			return
		}
		var obj map[string]any
		if err := json.Unmarshal(a.json(), &obj); err != nil {
			t.Fatalf("%q parsed into invalid JSON %s: %v", line, a.json(), err)
		}
	})
}

// Fed in any pieces, the splitter's lines are the input's lines: offsets
// contiguous, data equal to the bytes between them (cut to max).
func FuzzSplitter(f *testing.F) {
	f.Add([]byte("a\nbb\r\nccc"), uint8(2), uint8(3))
	f.Add([]byte("\n\n\n"), uint8(1), uint8(1))
	f.Add(bytes.Repeat([]byte("x"), 300), uint8(7), uint8(16))
	f.Fuzz(func(t *testing.T, in []byte, piece, max uint8) {
		m := int(max%32) + 1
		step := int(piece%16) + 1
		s := newSplitter(m, 0)
		var next int64
		check := func(l *line) bool {
			if l.offset != next || l.next <= l.offset || l.next > int64(len(in)) {
				t.Fatalf("line at %d-%d after %d (input of %d)", l.offset, l.next, next, len(in))
			}
			raw := in[l.offset:l.next]
			ended := bytes.HasSuffix(raw, []byte("\n")) // else flushed at the end
			raw = bytes.TrimSuffix(raw, []byte("\n"))
			want := raw
			if len(want) > m {
				want = want[:m]
			} else if ended {
				want = bytes.TrimSuffix(want, []byte("\r"))
			}
			if l.cut != (len(raw) > m) || !bytes.Equal(l.data, want) {
				t.Fatalf("line %q (cut %v), want %q from %q", l.data, l.cut, want, raw)
			}
			next = l.next
			return true
		}
		for i := 0; i < len(in); i += step {
			chunk := in[i:min(i+step, len(in))]
			if n := s.feed(chunk, check); n != len(chunk) {
				t.Fatalf("consumed %d of %d", n, len(chunk))
			}
		}
		s.flush(check)
		if next != int64(len(in)) {
			t.Fatalf("lines end at %d of %d", next, len(in))
		}
	})
}
