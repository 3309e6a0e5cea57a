package loader_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/formats/iceberg"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/loader"
)

// Backfills of a table: two load runs, a compaction that merges their
// files, then two backfills of ranges inside the merged files, one killed
// (kill -9) before its table commit and one after it, each finished by the
// next `load run`: one overwrite snapshot per backfill, every offset once
// in the current snapshot (pyiceberg), each earlier snapshot still read by
// time travel, and the offsets the table and the state record unmoved.
func TestBackfillIceberg(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "bf", 1)
	dir := t.TempDir()
	target := "file://" + dir
	common := []string{"--target", target, "--schema", activitySchema, "--time-field", "timestamp", "--table-format", "iceberg",
		"--lease-ttl", "3s", "--max-clock-skew", "0s", "--wait", "1m"}
	args := append([]string{"-b", b.Addr(), "--topics", "bf", "--max-records-per-unit", "200"}, common...)
	var want produced
	produce(t, b.Addr(), "bf", 0, 600, 0, &want)
	mustLoad(t, args...)
	produce(t, b.Addr(), "bf", 600, 600, 0, &want)
	mustLoad(t, args...)
	if out, err := tributary(t, nil, "lake", "compact", "--target", target, "bf"); err != nil || !strings.Contains(out, "compacted") {
		t.Fatalf("lake compact: %v\n%s", err, out)
	}

	backfill := func(point, from, to string) {
		t.Helper()
		out, err := tributary(t, []string{"TRIBUTARY_LOADER_CRASH_AT=" + point},
			append([]string{"load", "backfill", "-b", b.Addr(), "--topic", "bf", "--partition", "0", "--from", from, "--to", to}, common...)...)
		var exit *exec.ExitError
		if err == nil || !asExit(err, &exit) || exit.ProcessState.String() != "signal: killed" {
			t.Fatalf("backfill crashing at %s: want the process killed, got %v\n%s", point, err, out)
		}
		start := time.Now()
		mustLoad(t, args...) // completes the open backfill
		t.Logf("rerun after a backfill crashed at %s: %v", point, time.Since(start))
	}
	backfill("iceberg-manifests", "300", "700")
	backfill("iceberg-committed", "100", "200")

	fs, err := fsys.Open(target, fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	tbl, err := (&iceberg.Catalog{FS: fs}).Load("bf")
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, s := range tbl.Metadata.Snapshots {
		ops = append(ops, s.Summary["operation"])
	}
	if strings.Join(ops, ",") != "append,append,replace,overwrite,overwrite" {
		t.Fatalf("snapshots: %v, want two appends, the compaction and one overwrite per backfill", ops)
	}
	hwm := testbroker.HighWatermarks(t, b.Addr(), "bf")
	state, err := loader.ReadState(fs, loader.DefaultJob)
	if err != nil {
		t.Fatal(err)
	}
	table, err := loader.TableOffsets(fs, "bf")
	if err != nil {
		t.Fatal(err)
	}
	if state.Offsets["bf"][0] != hwm[0] || table[0] != hwm[0] {
		t.Fatalf("the state says %d, the table %d, the high watermark is %d", state.Offsets["bf"][0], table[0], hwm[0])
	}
	v := readIceberg(t, target, "bf")
	checkTableOnce(t, v, hwm)
	// tributary lake query reads the same rows.
	out, err := tributary(t, nil, "lake", "query", "--target", target, "bf", "--columns", "_partition,_offset")
	if err != nil {
		t.Fatalf("lake query: %v\n%s", err, out)
	}
	if lines := strings.Count(out, "\n"); lines != len(v.Offsets) || !strings.Contains(out, `{"_offset":699,"_partition":0}`) {
		t.Fatalf("lake query printed %d rows, pyiceberg read %d:\n%.300s", lines, len(v.Offsets), out)
	}
	for i, s := range v.Snapshots {
		if want := int64(min(i+1, 2) * 600); s.Rows != want {
			t.Fatalf("snapshot %d (%s): %d rows by time travel, want %d", i, s.Summary["operation"], s.Rows, want)
		}
	}
}
