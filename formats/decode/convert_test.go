package decode

import (
	"testing"
	"time"
)

func TestParseTimestamp(t *testing.T) {
	for _, c := range []struct {
		in     string
		ms, us int64
		ok     bool
	}{
		{"1970-01-01T00:00:00Z", 0, 0, true},
		{"1969-12-31T23:59:59.9999999Z", -1, -1, true},
		{"2024-02-29T12:00:00.5+02:00", 1709200800500, 1709200800500000, true},
		{"0001-01-01T00:00:00Z", -62135596800000, -62135596800000000, true},
		{"9999-12-31T23:59:59.999999-23:59", 253402387139999, 253402387139999999, true},
		{"2023-02-29T00:00:00Z", 0, 0, false},
		{"2024-01-01T24:00:00Z", 0, 0, false},
		{"2024-01-01 00:00:00Z", 0, 0, false},
		{"2024-01-01T00:00:00", 0, 0, false},
		{"2024-01-01T00:00:00.Z", 0, 0, false},
	} {
		ms, ok := parseTimestamp(c.in, false)
		us, _ := parseTimestamp(c.in, true)
		if ok != c.ok || ok && (ms != c.ms || us != c.us) {
			t.Errorf("%s: got %d %d %v, want %d %d %v", c.in, ms, us, ok, c.ms, c.us, c.ok)
		}
	}
}

// FuzzRFC3339 checks that the fast path agrees with time.Parse.
func FuzzRFC3339(f *testing.F) {
	for _, s := range []string{"2024-05-01T12:00:00.123Z", "1969-12-31T23:59:59.999999999-07:30", "2000-02-29T00:00:00+00:00", "0000-01-01T00:00:00Z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		us, ok := fastRFC3339(s)
		if !ok {
			return
		}
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatalf("%q: fast path accepted what time.Parse rejects: %v", s, err)
		}
		if tm.UnixMicro() != us {
			t.Fatalf("%q: fast %d, time.Parse %d", s, us, tm.UnixMicro())
		}
	})
}

func TestFloorDiv(t *testing.T) {
	for _, c := range [][3]int64{{-1, 1000, -1}, {-1000, 1000, -1}, {-1001, 1000, -2}, {999, 1000, 0}} {
		if got := floorDiv(c[0], c[1]); got != c[2] {
			t.Errorf("floorDiv(%d, %d) = %d", c[0], c[1], got)
		}
	}
}
