package tail

import (
	"fmt"
	"strings"
	"testing"
)

// feedAll feeds chunks, as separate reads, and returns the lines as
// "offset-next:data" (with "!" for a cut line).
func feedAll(max int, chunks ...string) ([]string, *splitter) {
	s := newSplitter(max, 0)
	var out []string
	for _, c := range chunks {
		b := []byte(c)
		for len(b) > 0 {
			n := s.feed(b, func(l *line) bool {
				cut := ""
				if l.cut {
					cut = "!"
				}
				out = append(out, fmt.Sprintf("%d-%d:%s%s", l.offset, l.next, cut, l.data))
				return true
			})
			b = b[n:]
		}
	}
	return out, s
}

func TestSplitter(t *testing.T) {
	for _, c := range []struct {
		name    string
		max     int
		chunks  []string
		want    []string
		partial bool
	}{
		{"lines", 100, []string{"a\nbb\n"}, []string{"0-2:a", "2-5:bb"}, false},
		{"partial waits", 100, []string{"a\nb"}, []string{"0-2:a"}, true},
		{"partial completed by the next read", 100, []string{"a\nb", "c\n"}, []string{"0-2:a", "2-5:bc"}, false},
		{"crlf", 100, []string{"a\r\nb\n"}, []string{"0-3:a", "3-5:b"}, false},
		{"empty lines", 100, []string{"\n\n"}, []string{"0-1:", "1-2:"}, false},
		{"cut", 4, []string{"abcdefgh\nxy\n"}, []string{"0-9:!abcd", "9-12:xy"}, false},
		{"cut across reads", 4, []string{"ab", "cdef", "gh\nxy\n"}, []string{"0-9:!abcd", "9-12:xy"}, false},
		{"exactly max", 4, []string{"abcd\n"}, []string{"0-5:abcd"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, s := feedAll(c.max, c.chunks...)
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("lines %q, want %q", got, c.want)
			}
			if s.partial() != c.partial {
				t.Errorf("partial = %v", s.partial())
			}
		})
	}
}

// A full batch stops the splitter after the line that filled it; the
// caller feeds the rest again.
func TestSplitterStops(t *testing.T) {
	s := newSplitter(100, 10)
	var got []string
	n := s.feed([]byte("a\nb\nc\n"), func(l *line) bool {
		got = append(got, string(l.data))
		return len(got) < 2
	})
	if n != 4 || strings.Join(got, ",") != "a,b" || s.start != 14 || s.pos != 14 {
		t.Fatalf("consumed %d, lines %q, start %d pos %d", n, got, s.start, s.pos)
	}
}

func TestSplitterFlush(t *testing.T) {
	s := newSplitter(100, 0)
	s.feed([]byte("a\nlast"), func(*line) bool { return true })
	var got *line
	s.flush(func(l *line) bool { c := *l; c.data = []byte(string(l.data)); got = &c; return true })
	if got == nil || string(got.data) != "last" || got.offset != 2 || got.next != 6 || s.partial() {
		t.Fatalf("flush: %+v", got)
	}
}
