package txncheck

import (
	"testing"
	"time"
)

// TestCheckLive: the live consumer's reads are checked with the final
// read. A value read before its transaction's commit was requested is an
// uncommitted read (the broker's LSO let it through early) even when the
// transaction committed and the final read is clean; an aborted value
// only the live consumer saw is an aborted read; a value the live
// consumer read at another offset than the final read is a duplicate.
func TestCheckLive(t *testing.T) {
	t0 := time.Now()
	txns := []Txn{
		{ID: "c1", Values: []string{"a", "b"}, Outcome: Committed},
		{ID: "a1", Values: []string{"x"}, Outcome: Aborted},
		{ID: "c2", Values: []string{"c"}, Outcome: Committed},
	}
	requested := map[string]time.Time{"c1": t0, "c2": t0}
	final := []Read{{"a", 0, 1}, {"b", 1, 1}, {"c", 0, 3}}
	after := func(v string, p int32, o int64) LiveRead { return LiveRead{Read{v, p, o}, t0.Add(time.Millisecond)} }
	before := func(v string, p int32, o int64) LiveRead { return LiveRead{Read{v, p, o}, t0.Add(-time.Millisecond)} }

	if r := CheckLive(txns, requested, []LiveRead{after("a", 0, 1), after("b", 1, 1)}, final); !r.Ok() {
		t.Fatalf("clean: %v", r)
	}
	for _, c := range []struct {
		name string
		live []LiveRead
		ok   func(Result) bool
	}{
		{"read before the commit was requested", []LiveRead{before("a", 0, 1), after("b", 1, 1)}, func(r Result) bool { return r.PastLSO == 1 }},
		{"aborted value read live only", []LiveRead{after("x", 0, 2)}, func(r Result) bool { return r.AbortedReads == 1 }},
		{"read live at another offset", []LiveRead{after("c", 0, 2)}, func(r Result) bool { return r.Duplicates == 1 }},
	} {
		r := CheckLive(txns, requested, c.live, final)
		if r.Ok() || !c.ok(r) {
			t.Errorf("%s: %v", c.name, r)
		}
	}
}
