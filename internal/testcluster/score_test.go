package testcluster

import (
	"fmt"
	"strings"
	"testing"
)

// history is a producer that attempted name-0 .. name-(n-1) and was told
// the positions in acked ("value": {partition, offset}).
func history(name string, n int, acked map[string]Ack) *History {
	h := &History{Name: name, Acked: acked, Failed: map[string]string{}}
	for i := range n {
		v := fmt.Sprintf("%s-%d", name, i)
		h.Attempted = append(h.Attempted, v)
		if _, ok := acked[v]; !ok {
			h.Failed[v] = "timed out"
		}
	}
	return h
}

func values(as []Anomaly) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Value)
	}
	return out
}

func TestEvaluate(t *testing.T) {
	// Two producers on partitions 0 and 1. Unless a case says otherwise,
	// a-0..a-2 are acked at 0@0..0@2, b-0..b-1 at 1@0..1@1, and b-2 is
	// indeterminate.
	acks := func() (map[string]Ack, map[string]Ack) {
		return map[string]Ack{"a-0": {0, 0}, "a-1": {0, 1}, "a-2": {0, 2}},
			map[string]Ack{"b-0": {1, 0}, "b-1": {1, 1}}
	}
	clean := []Read{{0, 0, "a-0"}, {0, 1, "a-1"}, {0, 2, "a-2"}, {1, 0, "b-0"}, {1, 1, "b-1"}}
	for _, tc := range []struct {
		name  string
		reads []Read
		edit  func(a, b map[string]Ack)
		// want, by kind, the anomalous values in order
		lost, dup, unexpected, order, misplaced []string
		indeterminateRead                       int
	}{
		{name: "perfect", reads: clean},
		{
			name:  "reads in any order are sorted by position first",
			reads: []Read{{1, 1, "b-1"}, {0, 2, "a-2"}, {0, 0, "a-0"}, {1, 0, "b-0"}, {0, 1, "a-1"}},
		},
		{
			name:              "an indeterminate value read is no anomaly",
			reads:             append(append([]Read(nil), clean...), Read{1, 2, "b-2"}),
			indeterminateRead: 1,
		},
		{
			name:  "acked, never read",
			reads: []Read{{0, 0, "a-0"}, {0, 1, "a-2"}, {1, 0, "b-0"}, {1, 1, "b-1"}},
			edit:  func(a, b map[string]Ack) { a["a-2"] = Ack{0, 1} },
			lost:  []string{"a-1"},
		},
		{
			name:  "read twice, apart: duplicated and out of order",
			reads: append(append([]Read(nil), clean...), Read{0, 3, "a-1"}),
			dup:   []string{"a-1"},
			order: []string{"a-1"},
		},
		{
			name:  "read twice in different partitions: duplicated only",
			reads: append(append([]Read(nil), clean...), Read{1, 2, "a-0"}),
			dup:   []string{"a-0"},
		},
		{
			name:       "never attempted",
			reads:      append(append([]Read(nil), clean...), Read{1, 2, "c-0"}, Read{1, 3, "junk"}),
			unexpected: []string{"c-0", "junk"},
		},
		{
			name:  "swapped within a partition",
			reads: []Read{{0, 0, "a-0"}, {0, 1, "a-2"}, {0, 2, "a-1"}, {1, 0, "b-0"}, {1, 1, "b-1"}},
			edit:  func(a, b map[string]Ack) { a["a-1"], a["a-2"] = Ack{0, 2}, Ack{0, 1} },
			order: []string{"a-1"},
		},
		{
			name:  "interleaved producers in one partition keep their own order",
			reads: []Read{{0, 0, "a-0"}, {0, 1, "b-0"}, {0, 2, "a-1"}, {0, 3, "b-1"}, {0, 4, "a-2"}},
			edit: func(a, b map[string]Ack) {
				a["a-1"], a["a-2"], b["b-0"], b["b-1"] = Ack{0, 2}, Ack{0, 4}, Ack{0, 1}, Ack{0, 3}
			},
		},
		{
			name:  "gaps in sequence numbers are in order",
			reads: []Read{{0, 0, "a-0"}, {0, 1, "a-2"}, {1, 0, "b-0"}, {1, 1, "b-1"}},
			edit:  func(a, b map[string]Ack) { delete(a, "a-1"); a["a-2"] = Ack{0, 1} },
		},
		{
			name:      "read elsewhere than acknowledged",
			reads:     []Read{{0, 0, "a-0"}, {0, 1, "a-1"}, {0, 5, "a-2"}, {1, 0, "b-0"}, {1, 1, "b-1"}},
			misplaced: []string{"a-2"},
		},
		{
			name:       "everything at once",
			reads:      []Read{{0, 0, "a-0"}, {0, 1, "a-2"}, {0, 2, "a-0"}, {1, 0, "b-1"}, {1, 1, "b-0"}, {1, 2, "x-9"}},
			edit:       func(a, b map[string]Ack) { b["b-0"], b["b-1"] = Ack{1, 1}, Ack{1, 0} },
			lost:       []string{"a-1"},
			dup:        []string{"a-0"},
			unexpected: []string{"x-9"},
			order:      []string{"a-0", "b-0"},
			misplaced:  []string{"a-2"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := acks()
			if tc.edit != nil {
				tc.edit(a, b)
			}
			s := Evaluate(tc.reads, history("a", 3, a), history("b", 3, b))
			for _, k := range []struct {
				kind      string
				got, want []string
			}{
				{"lost", values(s.Lost), tc.lost}, {"duplicated", values(s.Duplicated), tc.dup},
				{"unexpected", values(s.Unexpected), tc.unexpected}, {"out of order", values(s.OutOfOrder), tc.order},
				{"misplaced", values(s.Misplaced), tc.misplaced},
			} {
				if fmt.Sprint(k.got) != fmt.Sprint(k.want) {
					t.Errorf("%s: %v, want %v (%s)", k.kind, k.got, k.want, s)
				}
			}
			if s.Attempted != 6 || s.Read != len(tc.reads) || s.Acknowledged != len(a)+len(b) ||
				s.Indeterminate != 6-s.Acknowledged || s.IndeterminateRead != tc.indeterminateRead {
				t.Errorf("counts: %s", s)
			}
			want := len(tc.lost)+len(tc.dup)+len(tc.unexpected)+len(tc.order)+len(tc.misplaced) == 0
			if s.Ok() != want {
				t.Errorf("Ok() = %v, want %v", s.Ok(), want)
			}
		})
	}
}

// recordingTB catches what Check reports.
type recordingTB struct {
	testing.TB
	errs []string
}

func (r *recordingTB) Helper() {}
func (r *recordingTB) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestScoreCheck(t *testing.T) {
	h := history("a", 30, map[string]Ack{})
	for i := range 30 {
		h.Acked[fmt.Sprintf("a-%d", i)] = Ack{0, int64(i)}
	}
	// a-0..a-14 read, a-15..a-29 lost; and one unexpected value.
	var reads []Read
	for i := range 15 {
		reads = append(reads, Read{0, int64(i), fmt.Sprintf("a-%d", i)})
	}
	reads = append(reads, Read{0, 15, "z-1"})

	rec := &recordingTB{TB: t}
	Evaluate(reads, h).Check(rec, 30)
	if len(rec.errs) != 1 {
		t.Fatalf("Check reported %d errors, want 1: %q", len(rec.errs), rec.errs)
	}
	msg := rec.errs[0]
	for _, want := range []string{
		"lost 15,", "unexpected 1,",
		"lost (15):\n  a-15 acknowledged at 0@15, never read\n",
		"  a-24 acknowledged at 0@24, never read\n  ...\n", // the 10th example, then an ellipsis
		"unexpected (1):\n  z-1 read at 0@15, never attempted",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("Check's report lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "a-25") {
		t.Errorf("Check's report shows more than 10 examples:\n%s", msg)
	}

	rec = &recordingTB{TB: t}
	Evaluate(reads[:15], history("a", 15, map[string]Ack{"a-3": {0, 3}})).Check(rec, 1)
	if len(rec.errs) != 0 {
		t.Errorf("Check of a clean run: %q", rec.errs)
	}

	// A clean run that acknowledged too little, or nothing, fails.
	for _, tc := range []struct {
		acked, min int
		want       string
	}{
		{1, 2, "1 records acknowledged, want at least 2"},
		{0, 1, "0 records acknowledged, want at least 1"},
	} {
		acks := map[string]Ack{}
		for i := range tc.acked {
			acks[fmt.Sprintf("a-%d", i)] = Ack{0, int64(i)}
		}
		rec = &recordingTB{TB: t}
		Evaluate(reads[:tc.acked], history("a", 15, acks)).Check(rec, tc.min)
		if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], tc.want) {
			t.Errorf("Check(%d) of a run with %d acknowledged: %q, want one error with %q", tc.min, tc.acked, rec.errs, tc.want)
		}
	}
}

func TestParseValue(t *testing.T) {
	for _, tc := range []struct {
		v    string
		name string
		seq  int64
		ok   bool
	}{
		{"w1-0", "w1", 0, true},
		{"w-1-17", "w-1", 17, true},
		{"w1-", "", 0, false},
		{"w1--3", "w1-", 3, true},
		{"w1-+3", "", 0, false},
		{"w1-03", "", 0, false},
		{"w1-x", "", 0, false},
		{"nodash", "", 0, false},
	} {
		name, seq, ok := parseValue(tc.v)
		if name != tc.name || seq != tc.seq || ok != tc.ok {
			t.Errorf("parseValue(%q) = %q, %d, %v; want %q, %d, %v", tc.v, name, seq, ok, tc.name, tc.seq, tc.ok)
		}
	}
}
