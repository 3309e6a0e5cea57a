package loader

import (
	"strings"
	"testing"

	"github.com/tributary-io/tributary/formats/iceberg"
)

// Two loaders on one table (a lease broken): the run that finds its
// snapshot there skips, the run whose ranges another run committed is
// refused, the next run in line goes on from the table's offsets.
func TestCheckTable(t *testing.T) {
	one, two := int64(1), int64(2)
	md := &iceberg.Metadata{CurrentSnapshotID: &two, Snapshots: []iceberg.Snapshot{
		{ID: one, Summary: map[string]string{summaryRun: "a", summaryNext: `{"0":100,"1":50}`}},
		{ID: two, ParentID: &one, Summary: map[string]string{"operation": "replace"}}, // another engine's compaction
	}}
	if done, _, err := checkTable(md, "t", "a", map[string][2]int64{"0": {0, 100}}); !done || err != nil {
		t.Fatalf("run a again: done %v, %v; want done", done, err)
	}
	_, _, err := checkTable(md, "t", "b", map[string][2]int64{"0": {0, 120}})
	if err == nil || !strings.Contains(err.Error(), "partition 0 up to offset 100, past this run's start 0") {
		t.Fatalf("run b over a's offsets: %v", err)
	}
	done, next, err := checkTable(md, "t", "c", map[string][2]int64{"0": {100, 120}, "1": {50, 60}, "2": {0, 5}})
	if done || err != nil || next["0"] != 100 || next["1"] != 50 {
		t.Fatalf("run c after a: done %v, next %v, %v", done, next, err)
	}
}
