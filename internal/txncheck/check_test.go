package txncheck

import "testing"

func TestCheck(t *testing.T) {
	txns := []Txn{
		{ID: "c1", Values: []string{"a", "b"}, Outcome: Committed},
		{ID: "a1", Values: []string{"x"}, Outcome: Aborted},
		{ID: "u1", Values: []string{"u", "v"}, Outcome: Unknown},
		{ID: "u2", Values: []string{"w"}, Outcome: Unknown},
		{ID: "c2", Values: []string{"c", "d"}, Outcome: Committed},
	}
	clean := []Read{{"a", 0, 1}, {"b", 1, 1}, {"u", 0, 2}, {"v", 0, 3}, {"c", 0, 4}, {"d", 0, 5}, {"a", 0, 1}}
	if r := Check(txns, clean); !r.Ok() {
		t.Fatalf("clean history: %v", r)
	}
	bad := []Read{
		{"a", 0, 1}, {"a", 0, 9}, // duplicate
		{"x", 0, 2},  // aborted read
		{"u", 0, 3},  // torn unknown
		{"c", 0, 4},  // c2 torn and d lost
		{"zz", 0, 5}, // unknown
	}
	r := Check(txns, bad)
	// b and d lost (c1 and c2 torn), u1 torn.
	want := Result{Lost: 2, AbortedReads: 1, Duplicates: 1, Torn: 3, UnknownValues: 1}
	if r.Lost != want.Lost || r.AbortedReads != want.AbortedReads || r.Duplicates != want.Duplicates || r.Torn != want.Torn || r.UnknownValues != want.UnknownValues {
		t.Fatalf("got %v", r)
	}
}
