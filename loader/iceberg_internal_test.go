package loader

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/tributary-io/tributary/formats/iceberg"
	"github.com/tributary-io/tributary/internal/fsys"
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

// A loader committed the table and died before its state; the next
// leaseholder planned from the old state. Its plan is closed as superseded
// by the table's run and the state catches up with the table, so the plan
// after it starts where the table ends instead of being refused forever.
func TestTableAheadOfState(t *testing.T) {
	t.Parallel()
	fs, err := fsys.Open(t.TempDir(), fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := &Loader{FS: fs}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	if err := writeState(fs, &State{Version: 1, Job: "j", Run: "old", Offsets: map[string]map[int32]int64{"t": {0: 100, 1: 50}}}); err != nil {
		t.Fatal(err)
	}
	schema := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int32}}, nil)
	if _, _, err := (&iceberg.Catalog{FS: fs}).Append(iceberg.Append{Dir: "t", Schema: schema,
		Files:   []iceberg.NewFile{{Path: "t/dead.parquet", Records: 150, Bytes: 1}},
		Summary: map[string]string{summaryRun: "dead", summaryNext: `{"0":250,"1":50}`}}); err != nil {
		t.Fatal(err)
	}
	p := &Plan{Version: PlanVersion, Run: newRunID("j", now), Job: "j", Kind: "load", Created: now, Settings: Settings{TableFormat: TableIceberg},
		Units: []Unit{{Index: 0, Topic: "t", Partition: 0, From: 100, To: 300}},
		Next:  map[string]map[int32]int64{"t": {0: 300, 1: 50}}}
	if err := p.save(l); err != nil {
		t.Fatal(err)
	}
	m, err := l.Complete(context.Background(), p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if m.Superseded != "dead" || m.Records != 0 {
		t.Fatalf("the plan below the table: superseded by %q, %d records", m.Superseded, m.Records)
	}
	st, err := ReadState(fs, "j")
	if err != nil || st.Offsets["t"][0] != 250 || st.Offsets["t"][1] != 50 {
		t.Fatalf("the state after it: %+v, %v; want t/0 at the table's 250", st, err)
	}
	if open, err := l.OpenPlan("j"); err != nil || open != nil {
		t.Fatalf("the superseded plan is still open (%v)", err)
	}
	// A plan from the caught-up state is not superseded.
	next := &Plan{Run: "next", Job: "j", Kind: "load", Settings: Settings{TableFormat: TableIceberg},
		Units: []Unit{{Topic: "t", Partition: 0, From: 250, To: 300}},
		Next:  map[string]map[int32]int64{"t": {0: 300, 1: 50}}}
	if by, _, err := l.supersededBy(next, st); by != "" || err != nil {
		t.Fatalf("a plan from the table's offsets: superseded by %q, %v", by, err)
	}
}
