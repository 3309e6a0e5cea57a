package loader_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/tributary-io/tributary/formats/iceberg"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/loader"
)

// Review M1: a run plans a new column's field id; before its commit,
// another writer (a backfill with a newer schema, Spark's ADD COLUMN)
// adds another column and takes that id. The rerun's commit finds the ids
// changed and writes the run's files again with the table's ids, instead
// of failing the same way on every rerun of the same open plan.
func TestLoadIcebergFieldIDRace(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "race", 1)
	dir := t.TempDir()
	target := "file://" + dir
	var want produced
	base := []string{"--target", target, "-b", b.Addr(), "--topics", "race", "--time-field", "timestamp",
		"--table-format", "iceberg", "--lease-ttl", "3s", "--max-clock-skew", "0s", "--wait", "1m"}
	produce(t, b.Addr(), "race", 0, 100, 0, &want)
	mustLoad(t, append(base, "--schema", activitySchema)...)

	text, err := os.ReadFile(activitySchema)
	if err != nil {
		t.Fatal(err)
	}
	const anchor = "  - name: messageId\n    type: string\n"
	if !strings.Contains(string(text), anchor) {
		t.Fatalf("%s has no %q", activitySchema, anchor)
	}
	wider := filepath.Join(t.TempDir(), "wider.yaml")
	if err := os.WriteFile(wider, []byte(strings.Replace(string(text), anchor, anchor+"  - name: extra\n    type: string\n    nullable: true\n", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append(base, "--schema", wider)
	produce(t, b.Addr(), "race", 100, 100, 0, &want)
	out, err := tributary(t, []string{"TRIBUTARY_LOADER_CRASH_AT=planned"}, append([]string{"load", "run"}, args...)...)
	var exit *exec.ExitError
	if err == nil || !asExit(err, &exit) || exit.ProcessState.String() != "signal: killed" {
		t.Fatalf("want the run killed after its plan, got %v\n%s", err, out)
	}

	// Another writer adds a column: it takes the id the plan gave extra.
	fs, err := fsys.Open(target, fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat := &iceberg.Catalog{FS: fs}
	before, err := cat.Load("race")
	if err != nil {
		t.Fatal(err)
	}
	other := arrow.NewSchema([]arrow.Field{{Name: "zzz", Type: arrow.BinaryTypes.String, Nullable: true}}, nil)
	if _, _, err := cat.Append(iceberg.Append{Dir: "race", Schema: other}); err != nil {
		t.Fatal(err)
	}
	tb, err := cat.Load("race")
	if err != nil {
		t.Fatal(err)
	}
	z, _ := tb.Metadata.CurrentSchema().Field("zzz")
	if z.ID != before.Metadata.LastColumnID+1 {
		t.Fatalf("zzz has id %d, want %d (the id the plan gave extra)", z.ID, before.Metadata.LastColumnID+1)
	}

	out = mustLoad(t, args...)
	tb, err = cat.Load("race")
	if err != nil {
		t.Fatal(err)
	}
	cur := tb.Metadata.CurrentSchema()
	x, ok := cur.Field("extra")
	if z2, _ := cur.Field("zzz"); !ok || x.ID == z2.ID || z2.ID != z.ID {
		t.Fatalf("schema %+v: want extra and zzz with ids of their own", cur.Fields)
	}
	state, err := loader.ReadState(fs, loader.DefaultJob)
	if err != nil {
		t.Fatal(err)
	}
	offs, err := loader.TableOffsets(fs, "race")
	if err != nil {
		t.Fatal(err)
	}
	if state.Offsets["race"][0] != 200 || offs[0] != 200 {
		t.Fatalf("state offset %d, table %d; want 200\n%s", state.Offsets["race"][0], offs[0], out)
	}
	if n := tb.Metadata.Current().Summary["total-records"]; n != "200" {
		t.Fatalf("the table has %s rows, want 200 (each offset once)", n)
	}
	// A further run is a no-op: the plan is closed.
	if out := mustLoad(t, args...); strings.Contains(out, "resuming") {
		t.Fatalf("the plan is still open after the rerun:\n%s", out)
	}
}
