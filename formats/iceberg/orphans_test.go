package iceberg

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// backdate sets the mtime of every file under root/t to old (only the
// data files when dataOnly), as a long run or compaction leaves them: a
// rename keeps the mtime.
func backdate(t *testing.T, root string, old time.Time, dataOnly bool) {
	t.Helper()
	filepath.Walk(filepath.Join(root, "t"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && (!dataOnly || strings.HasSuffix(p, ".parquet")) {
			os.Chtimes(p, old, old)
		}
		return nil
	})
}

// Files of commits in progress survive orphan removal whatever their age
// (review 1): a load run's files moved into place by an open plan, and a
// compaction's outputs before its replace commit. A plan that finished
// and a compaction that died no longer protect anything.
func TestOrphansInFlight(t *testing.T) {
	t.Parallel()
	c, root := localCatalog(t)
	smallTable(t, c, "t", 4, 3, 2)
	born := time.Now().Add(-10 * time.Hour)
	old := time.Now().Add(-5 * time.Hour)
	backdate(t, root, born, false)

	// The loader's layout: the plans next to the table. Run 2 of the job
	// is open (no _SUCCESS), run 1 finished.
	writePlan := func(run, units string) {
		p := filepath.Join(root, "_tributary/plans", run+".json")
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(`{"run":"`+run+`","units":[`+units+`]}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writePlan("load-20261201T100000Z-1", `{"topic":"t","partition":1,"from":100,"to":200}`)
	os.MkdirAll(filepath.Join(root, "_tributary/runs/load-20261201T100000Z-1"), 0o755)
	os.WriteFile(filepath.Join(root, "_tributary/runs/load-20261201T100000Z-1/_SUCCESS"), nil, 0o644)
	writePlan("load-20261201T110000Z-2", `{"topic":"t","partition":0,"from":6,"to":20}`)
	moved := writeSmall(t, c.FS, "t", 0, 6, 20, baseHour)    // moved, the table commit not yet made
	done := writeSmall(t, c.FS, "t", 1, 100, 110, baseHour)  // the finished plan's: a real orphan
	other := writeSmall(t, c.FS, "t", 0, 500, 510, baseHour) // no plan's: a real orphan
	for _, f := range []NewFile{moved, done, other} {
		os.Chtimes(filepath.Join(root, f.Path), old, old)
	}

	if _, err := c.RemoveOrphans("t", Orphans{OlderThan: time.Now().Add(-time.Minute)}); err == nil || !strings.Contains(err.Error(), "less than 1h") {
		t.Fatalf("an orphan age of 1m without Force: %v, want a refusal", err)
	}
	res, err := c.RemoveOrphans("t", Orphans{OlderThan: time.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{done.Path, other.Path}; strings.Join(res.Orphans, " ") != strings.Join(sorted(want), " ") {
		t.Fatalf("orphans removed: %v, want %v", res.Orphans, sorted(want))
	}
	// The open plan commits its file: the table must have it.
	if _, _, err := c.Append(Append{Dir: "t", Schema: smallSchema, Files: []NewFile{moved}}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, moved.Path)); err != nil {
		t.Fatalf("the open plan's file was removed before its commit: %v", err)
	}
	os.MkdirAll(filepath.Join(root, "_tributary/runs/load-20261201T110000Z-2"), 0o755)
	os.WriteFile(filepath.Join(root, "_tributary/runs/load-20261201T110000Z-2/_SUCCESS"), nil, 0o644)

	// A compaction that runs longer than the orphan age: orphan removal
	// runs just before its replace commit, with every output backdated.
	var during *OrphansResult
	c.beforeRewrite = func() {
		if during != nil {
			return
		}
		backdate(t, root, old, true) // the commit's manifests are seconds old
		var err error
		if during, err = c.RemoveOrphans("t", Orphans{OlderThan: time.Now().Add(-time.Hour)}); err != nil {
			t.Error(err)
		}
	}
	cres, err := c.CompactTable(context.Background(), "t", Compact{MinInputFiles: 2})
	c.beforeRewrite = nil
	if err != nil {
		t.Fatal(err)
	}
	if during == nil || cres.Written == 0 {
		t.Fatalf("the compaction wrote %d files; orphan removal ran: %v", cres.Written, during != nil)
	}
	live, err := c.LiveFiles(cres.Snapshot)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range live {
		if _, err := os.Stat(filepath.Join(root, c.rel(e.File.Path))); err != nil {
			t.Fatalf("the compacted table lists a file orphan removal deleted: %v (it removed %v)", err, during.Orphans)
		}
	}
	if ms, _ := filepath.Glob(filepath.Join(root, "t/metadata/.inflight-*")); len(ms) != 0 {
		t.Fatalf("the compaction left its marker: %v", ms)
	}

	// A compaction that died: its marker, once older than the orphan age,
	// protects nothing and goes with its outputs.
	dead := writeTagged(t, c.FS, "t", 0, 0, 3, baseHour, ".cdead")
	if err := c.writeInflight("t", "dead", []string{c.Location(dead.Path)}); err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(root, inflightFile("t", "dead"))
	os.Chtimes(filepath.Join(root, dead.Path), old, old)
	os.Chtimes(marker, old, old)
	res, err = c.RemoveOrphans("t", Orphans{OlderThan: time.Now().Add(-time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Orphans) != 1 || res.Orphans[0] != dead.Path {
		t.Fatalf("orphans after a dead compaction: %v, want %s", res.Orphans, dead.Path)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the dead compaction's marker is still there: %v", err)
	}
}
