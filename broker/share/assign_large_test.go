package share

import (
	"testing"
	"time"
)

// TestAssignLargeJoin: a second member joins one that holds 10,000
// partitions. The split is 5,000 each, the first member keeps 5,000 of
// its own, every partition has one reader, and the assignment, which runs
// under the manager's lock, takes well under a second (it took 3.2 s
// when every drop rescanned every partition, review M2; the bound is
// loose for a loaded machine under -race).
func TestAssignLargeJoin(t *testing.T) {
	const P = 10000
	id := [16]byte{1}
	g := assignGroup(map[string]TopicMeta{"t": {ID: id, Partitions: P}}, map[string][]string{"a": {"t"}})
	if n := len(g.members["a"].assigned[id]); n != P {
		t.Fatalf("a holds %d partitions, want %d", n, P)
	}
	g.members["b"] = &member{id: "b", topics: []string{"t"}}
	start := time.Now()
	g.assign()
	took := time.Since(start)
	per, mem := readers(g, id, P)
	within(t, "readers per partition", per, 1, 1)
	within(t, "partitions per member", values(mem), P/2, P/2)
	t.Logf("one join onto %d partitions: assign took %v", P, took)
	if took > time.Second {
		t.Fatalf("assign took %v for a join onto %d partitions", took, P)
	}
}

// BenchmarkAssignJoin: one assign() when a second member joins one
// holding 10,000 partitions.
func BenchmarkAssignJoin(b *testing.B) {
	const P = 10000
	id := [16]byte{1}
	for b.Loop() {
		b.StopTimer()
		g := assignGroup(map[string]TopicMeta{"t": {ID: id, Partitions: P}}, map[string][]string{"a": {"t"}})
		g.members["b"] = &member{id: "b", topics: []string{"t"}}
		b.StartTimer()
		g.assign()
	}
}
