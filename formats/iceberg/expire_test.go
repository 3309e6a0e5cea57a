package iceberg

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Expiry deletes only the table's own data and manifest files (review 2):
// entries of an expired snapshot that name the warehouse root, another
// table, the loader's _tributary, a directory of the table or a hidden
// file are reported as skipped, and all of them are still there.
func TestExpireDeletesOnlyTableFiles(t *testing.T) {
	t.Parallel()
	c, root := localCatalog(t)
	smallTable(t, c, "t", 2, 3, 2)
	mustWrite := func(rel string) {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustWrite("other/dt=2025-11-24/hr=16/other+0+0+9.parquet")
	mustWrite("_tributary/state/job.json")
	mustWrite("t/dt=2025-11-24/hr=16/_SUCCESS")
	mustWrite("t/dt=2025-11-24/hr=16/.hidden.parquet")
	hostile := []NewFile{
		{Path: "", Records: 1, Bytes: 1, Hour: baseHour},                              // the warehouse root
		{Path: "other", Records: 1, Bytes: 1, Hour: baseHour},                         // another table
		{Path: "other/dt=2025-11-24/hr=16/other+0+0+9.parquet", Records: 1, Bytes: 1}, // another table's file
		{Path: "_tributary", Records: 1, Bytes: 1, Hour: baseHour},                    // the loader's state
		{Path: "t/dt=2025-11-24", Records: 1, Bytes: 1, Hour: baseHour},               // a directory of the table
		{Path: "t/../_tributary/state/job.json", Records: 1, Bytes: 1, Hour: baseHour},
		{Path: "t/dt=2025-11-24/hr=16/.hidden.parquet", Records: 1, Bytes: 1, Hour: baseHour},
		{Path: "t/dt=2025-11-24/hr=16/_SUCCESS", Records: 1, Bytes: 1, Hour: baseHour},
	}
	if _, _, err := c.Append(Append{Dir: "t", Schema: smallSchema, Files: hostile}); err != nil {
		t.Fatal(err)
	}
	var del []string
	for _, f := range hostile {
		del = append(del, c.Location(f.Path))
	}
	// A later snapshot drops them, so expiring the earlier ones makes them
	// unreachable: what expiry would delete.
	if _, _, err := c.Rewrite(Rewrite{Dir: "t", Operation: "overwrite", Delete: del}); err != nil {
		t.Fatal(err)
	}
	later := *c
	later.Now = func() time.Time { return time.Now().Add(time.Hour) }
	res, err := later.ExpireSnapshots("t", Expire{MaxAge: time.Minute, MinKeep: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Expired) == 0 || len(res.Skipped) != len(hostile) {
		t.Fatalf("expired %v, skipped %d: %v; want %d skipped", res.Expired, len(res.Skipped), res.Skipped, len(hostile))
	}
	for _, p := range []string{"other/dt=2025-11-24/hr=16/other+0+0+9.parquet", "_tributary/state/job.json",
		"t/dt=2025-11-24/hr=16/_SUCCESS", "t/dt=2025-11-24/hr=16/.hidden.parquet", "t/metadata/v1.metadata.json"} {
		if _, err := os.Stat(filepath.Join(root, p)); err != nil {
			t.Fatalf("expiry deleted %s: %v", p, err)
		}
	}
	// What the table itself wrote is still deleted: the expired manifest
	// lists.
	if len(res.Deleted) == 0 {
		t.Fatalf("expiry deleted nothing of the table's own: %+v", res)
	}
}

// A loader run killed between its table commit and its state write keeps
// its plan open; expiry keeps that run's snapshot and the line from it to
// the current one, however old, so the rerun finds its run id (review 3).
// Once the plan has its _SUCCESS, they expire as usual.
func TestExpireKeepsOpenRuns(t *testing.T) {
	t.Parallel()
	c, root := localCatalog(t)
	smallTable(t, c, "t", 2, 3, 2)
	const run = "load-20261201T100000Z-7"
	plan := filepath.Join(root, "_tributary/plans", run+".json")
	os.MkdirAll(filepath.Dir(plan), 0o755)
	if err := os.WriteFile(plan, []byte(`{"run":"`+run+`","units":[{"topic":"t","partition":0,"from":3,"to":6}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	f := writeSmall(t, c.FS, "t", 0, 3, 6, baseHour)
	_, committed, err := c.Append(Append{Dir: "t", Schema: smallSchema, Files: []NewFile{f}, Summary: map[string]string{SummaryRunID: run}})
	if err != nil {
		t.Fatal(err)
	}
	// Killed here. Maintenance goes on: two more snapshots on top.
	for i := range 2 {
		g := writeSmall(t, c.FS, "t", 1, int64(3+3*i), int64(6+3*i), baseHour)
		if _, _, err := c.Append(Append{Dir: "t", Schema: smallSchema, Files: []NewFile{g}}); err != nil {
			t.Fatal(err)
		}
	}
	later := *c
	later.Now = func() time.Time { return time.Now().Add(time.Hour) }
	res, err := later.ExpireSnapshots("t", Expire{MaxAge: time.Minute, MinKeep: 1})
	if err != nil {
		t.Fatal(err)
	}
	tb, err := c.Load("t")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for s := tb.Metadata.Current(); s != nil; {
		if s.ID == committed.ID {
			found = true
			break
		}
		if s.ParentID == nil {
			break
		}
		s = tb.Metadata.Snapshot(*s.ParentID)
	}
	if !found || res.Retained != 3 || len(res.Expired) != 1 {
		t.Fatalf("the open run's snapshot in the current lineage: %v; expired %v, retained %d (want 1 and 3)", found, res.Expired, res.Retained)
	}
	// The rerun closes the plan: now the run's snapshot may go.
	os.MkdirAll(filepath.Join(root, "_tributary/runs", run), 0o755)
	os.WriteFile(filepath.Join(root, "_tributary/runs", run, "_SUCCESS"), nil, 0o644)
	if res, err = later.ExpireSnapshots("t", Expire{MaxAge: time.Minute, MinKeep: 1}); err != nil || len(res.Expired) != 2 || res.Retained != 1 {
		t.Fatalf("after the plan closed: %+v, %v; want 2 expired, 1 retained", res, err)
	}
}
