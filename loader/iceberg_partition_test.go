package loader_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/formats/iceberg"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/loader"
)

// mustCrash runs `load run` with a crash point and wants it killed there.
func mustCrash(t *testing.T, point string, args ...string) {
	t.Helper()
	out, err := tributary(t, []string{"TRIBUTARY_LOADER_CRASH_AT=" + point}, append([]string{"load", "run"}, args...)...)
	var exit *exec.ExitError
	if err == nil || !asExit(err, &exit) || exit.ProcessState.String() != "signal: killed" {
		t.Fatalf("crash at %s: want the process killed, got %v\n%s", point, err, out)
	}
}

// filterView is what read_iceberg_filter.py saw.
type filterView struct {
	Spec []struct {
		Name      string `json:"name"`
		Transform string `json:"transform"`
	} `json:"spec"`
	Files       int      `json:"files"`
	Partitions  []string `json:"partitions"`
	Planned     int      `json:"planned"`
	PlannedWant int      `json:"planned_want"`
	Rows        int      `json:"rows"`
	Values      []string `json:"values"`
	Checked     int      `json:"checked"`
	Mismatched  []any    `json:"mismatched"`
}

// rowsMatchTuples fails unless every file's rows hold exactly the
// identity values of its partition tuple.
func (f *filterView) rowsMatchTuples(t *testing.T) {
	t.Helper()
	if f.Checked != f.Files || len(f.Mismatched) > 0 {
		t.Fatalf("%d of %d files read; files whose rows differ from their partition tuple: %v", f.Checked, f.Files, f.Mismatched)
	}
}

func readFiltered(t *testing.T, metadata, column, value string) *filterView {
	t.Helper()
	py := testbroker.Python(t, "pyiceberg")
	out, err := exec.Command(py, filepath.Join(testbroker.RepoRoot(), "loader", "testdata", "read_iceberg_filter.py"), metadata, column, value).Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("read_iceberg_filter.py: %v\n%s", err, stderr)
	}
	var v filterView
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return &v
}

// javaView is what ReadIceberg.java saw, the parts these tests compare.
type javaView struct {
	Spec []struct {
		Name      string `json:"name"`
		Transform string `json:"transform"`
	} `json:"spec"`
	Snapshots []struct {
		ID int64 `json:"id"`
	} `json:"snapshots"`
	Current    [][2]int64 `json:"current"`
	Files      int        `json:"files"`
	FilesEqual int        `json:"files_equal"`
}

func readJava(t *testing.T, args ...string) *javaView {
	t.Helper()
	out := testbroker.ReadIcebergJavaArgs(t, args)
	var j javaView
	if err := json.Unmarshal(out, &j); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return &j
}

// checkStateAgrees checks that the job's state and the table's summaries
// both say the high watermarks.
func checkStateAgrees(t *testing.T, fs fsys.FS, cat *iceberg.Catalog, topic string, hwm map[int32]int64) {
	t.Helper()
	state, err := loader.ReadState(fs, loader.DefaultJob)
	if err != nil {
		t.Fatal(err)
	}
	table, err := loader.CatalogOffsets(cat, topic)
	if err != nil {
		t.Fatal(err)
	}
	for p, end := range hwm {
		if state.Offsets[topic][p] != end || table[p] != end {
			t.Fatalf("partition %d: state says %d, the table's summary %d, the high watermark is %d", p, state.Offsets[topic][p], table[p], end)
		}
	}
}

// Issue 24: a table partitioned by hour(_event_time), identity(type) and
// identity(event) (--partition-by). A unit writes a file per hour and
// pair of values; the loader is killed (kill -9) between two files' moves
// into place and, on the next run, just after the table commit, and each
// rerun completes the run: every offset once, state and summary agreeing.
// pyiceberg and Apache Iceberg's Java library see the three-field spec
// and plan only the files of type=page for a filter on it, and pyiceberg
// reads exactly the page events through it. A run asking for other
// partition columns is refused before it loads anything.
func TestLoadIcebergIdentity(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "visits", 2)
	dir := t.TempDir()
	target := "file://" + dir
	var want produced
	n := sized(3_000)
	args := []string{"--target", target, "-b", b.Addr(), "--topics", "visits", "--schema", activitySchema, "--time-field", "timestamp",
		"--table-format", "iceberg", "--partition-by", "type,event", "--max-records-per-unit", fmt.Sprint(n / 4),
		"--lease-ttl", "3s", "--max-clock-skew", "0s", "--wait", "1m"}
	produce(t, b.Addr(), "visits", 0, n, 0, &want)
	mustCrash(t, "moved#3", args...)
	mustLoad(t, args...)
	produce(t, b.Addr(), "visits", n, n/2, 0, &want)
	mustCrash(t, "iceberg-committed", args...)
	mustLoad(t, args...)

	fs, err := fsys.Open(target, fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat := &iceberg.Catalog{FS: fs}
	hwm := testbroker.HighWatermarks(t, b.Addr(), "visits")
	checkStateAgrees(t, fs, cat, "visits", hwm)
	tbl, err := cat.Load("visits")
	if err != nil {
		t.Fatal(err)
	}
	if len(tbl.Metadata.Snapshots) != 2 {
		t.Fatalf("%d snapshots, want one per run (2)", len(tbl.Metadata.Snapshots))
	}

	v := readIceberg(t, target, "visits")
	checkTableOnce(t, v, hwm)
	pages := 0
	for id := range want.events {
		var i int
		fmt.Sscanf(id, "m-%d-", &i)
		if i%5 == 1 { // decode.ActivityEvent: types[i%5], "page" at 1
			pages++
		}
	}
	f := readFiltered(t, dir+"/visits", "type", "page")
	if len(f.Spec) != 3 || f.Spec[0].Transform != "hour" || f.Spec[1].Name != "type" || f.Spec[1].Transform != "identity" ||
		f.Spec[2].Name != "event" || f.Spec[2].Transform != "identity" {
		t.Fatalf("spec %+v: want hour, identity(type), identity(event)", f.Spec)
	}
	// 3 types and 5 events: files are per hour, unit and pair of values.
	if len(f.Partitions) < 10 || f.Files < len(f.Partitions) {
		t.Fatalf("%d files of %d partition tuples: want the rows split by type and event (%v)", f.Files, len(f.Partitions), f.Partitions)
	}
	if f.Planned != f.PlannedWant || f.Planned == 0 || f.Planned >= f.Files/2 {
		t.Fatalf("type = 'page' planned %d of %d files; %d hold pages", f.Planned, f.Files, f.PlannedWant)
	}
	if f.Rows != pages || len(f.Values) != 1 || f.Values[0] != "page" {
		t.Fatalf("type = 'page' read %d rows of types %v; %d page events were produced", f.Rows, f.Values, pages)
	}
	f.rowsMatchTuples(t)
	j := readJava(t, target+"/visits", "0", "type=page")
	if len(j.Spec) != 3 || j.Spec[1].Transform != "identity" || j.Spec[2].Name != "event" || len(j.Snapshots) != 2 {
		t.Fatalf("Java: spec %+v, %d snapshots", j.Spec, len(j.Snapshots))
	}
	checkTableOnce(t, &icebergView{Offsets: j.Current}, hwm)
	if j.FilesEqual != f.Planned || j.Files != f.Files {
		t.Fatalf("Java planned %d of %d files for type = 'page', pyiceberg %d of %d", j.FilesEqual, j.Files, f.Planned, f.Files)
	}

	// A compaction merges files of the same values only, and a backfill
	// inside the merged files (an overwrite rewriting them without its
	// rows) keeps each copy's values: the same rows, pruned the same way.
	if out, err := tributary(t, nil, "lake", "compact", "--target", target, "visits"); err != nil || !strings.Contains(out, "compacted") {
		t.Fatalf("lake compact: %v\n%s", err, out)
	}
	if out, err := tributary(t, nil, "load", "backfill", "-b", b.Addr(), "--topic", "visits", "--partition", "0", "--from", "10", "--to", "30",
		"--target", target, "--schema", activitySchema, "--time-field", "timestamp", "--table-format", "iceberg", "--partition-by", "type,event",
		"--lease-ttl", "3s", "--max-clock-skew", "0s", "--wait", "1m"); err != nil {
		t.Fatalf("load backfill: %v\n%s", err, out)
	}
	checkTableOnce(t, readIceberg(t, target, "visits"), hwm)
	f2 := readFiltered(t, dir+"/visits", "type", "page")
	if f2.Files >= f.Files || f2.Planned != f2.PlannedWant || f2.Rows != pages || len(f2.Values) != 1 || len(f2.Partitions) != len(f.Partitions) {
		t.Fatalf("after compaction and backfill: %d files (%d before), %d partition tuples (%d before), type = 'page' planned %d (%d hold pages), read %d rows of %v (want %d)",
			f2.Files, f.Files, len(f2.Partitions), len(f.Partitions), f2.Planned, f2.PlannedWant, f2.Rows, f2.Values, pages)
	}
	f2.rowsMatchTuples(t)

	// Other partition columns: refused at plan time, nothing written.
	produce(t, b.Addr(), "visits", 2*n, 10, 0, &want)
	other := append([]string(nil), args...)
	for i := range other {
		if other[i] == "type,event" {
			other[i] = "type"
		}
	}
	out, err := tributary(t, nil, append([]string{"load", "run"}, other...)...)
	if err == nil || !strings.Contains(out, "identity(type), identity(event)") {
		t.Fatalf("a run with --partition-by type on a table of type and event: want it refused naming the table's columns, got %v\n%s", err, out)
	}
	mustLoad(t, args...)
	checkStateAgrees(t, fs, cat, "visits", testbroker.HighWatermarks(t, b.Addr(), "visits"))
}

// Issue 24: the SQL catalog (--catalog sql:<SQLite file>). Two runs, the
// second killed just after its commit swapped the catalog's row and then
// rerun: one snapshot per run, every offset once. Iceberg's Java
// JdbcCatalog (with the SQLite JDBC driver) loads the table from the same
// database, pyiceberg reads the metadata file the row points at, `lake`
// lists it through the catalog, and a run without the catalog is refused
// instead of starting a second table in the directory.
func TestLoadIcebergSQLCatalog(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "web.signups", 2)
	dir := t.TempDir()
	target := "file://" + dir
	db := filepath.Join(t.TempDir(), "catalog.db")
	var want produced
	n := sized(2_000)
	args := []string{"--target", target, "-b", b.Addr(), "--topics", "web.signups", "--schema", activitySchema, "--time-field", "timestamp",
		"--table-format", "iceberg", "--catalog", "sql:" + db, "--max-records-per-unit", fmt.Sprint(n / 2),
		"--lease-ttl", "3s", "--max-clock-skew", "0s", "--wait", "1m"}
	produce(t, b.Addr(), "web.signups", 0, n, 0, &want)
	mustLoad(t, args...)
	produce(t, b.Addr(), "web.signups", n, n/2, 0, &want)
	mustCrash(t, "iceberg-committed", args...)
	mustLoad(t, args...)

	fs, err := fsys.Open(target, fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := loader.OpenCatalog(fs, "sql:"+db)
	if err != nil {
		t.Fatal(err)
	}
	hwm := testbroker.HighWatermarks(t, b.Addr(), "web.signups")
	checkStateAgrees(t, fs, cat, "web.signups", hwm)
	tbl, err := cat.Load("web.signups")
	if err != nil {
		t.Fatal(err)
	}
	if len(tbl.Metadata.Snapshots) != 2 {
		t.Fatalf("%d snapshots, want one per run (2)", len(tbl.Metadata.Snapshots))
	}
	// The database's row, as any engine reads it.
	conn, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var ns, loc, prev string
	if err := conn.QueryRow(`SELECT table_namespace, metadata_location, previous_metadata_location FROM iceberg_tables WHERE catalog_name = ? AND table_name = 'web.signups'`,
		loader.SQLCatalogName).Scan(&ns, &loc, &prev); err != nil {
		t.Fatal(err)
	}
	if ns != loader.DefaultNamespace || loc != target+"/"+tbl.File || prev == "" || prev == loc {
		t.Fatalf("iceberg_tables row: %q %q %q; the table's file is %s", ns, loc, prev, tbl.File)
	}
	if _, err := fs.Stat("web.signups/metadata/version-hint.text"); err == nil {
		t.Fatal("the SQL catalog's table has a version-hint.text")
	}

	v := readIcebergAt(t, strings.TrimPrefix(loc, "file://"))
	checkTableOnce(t, v, hwm)
	if len(v.Snapshots) != 2 || v.Snapshots[1].Rows != int64(n+n/2) {
		t.Fatalf("pyiceberg: %d snapshots: %+v", len(v.Snapshots), v.Snapshots)
	}
	j := readJava(t, "jdbc:sqlite:"+db+"#"+target+"#tributary#web.signups", "0")
	checkTableOnce(t, &icebergView{Offsets: j.Current}, hwm)
	if len(j.Snapshots) != 2 || j.Snapshots[1].ID != v.Snapshots[1].ID {
		t.Fatalf("Java's JdbcCatalog sees snapshots %+v, pyiceberg %+v", j.Snapshots, v.Snapshots)
	}
	out, err := tributary(t, nil, "lake", "snapshots", "--target", target, "--catalog", "sql:"+db, "web.signups")
	if err != nil || strings.Count(out, " default-") != 2 {
		t.Fatalf("lake snapshots through the catalog: %v\n%s", err, out)
	}
	out, err = tributary(t, nil, "lake", "tables", "--target", target, "--catalog", "sql:"+db)
	if err != nil || !strings.Contains(out, "web.signups ") {
		t.Fatalf("lake tables through the catalog: %v\n%s", err, out)
	}

	// Maintenance through the catalog: a compaction's replace snapshot
	// swaps the row too, and the table reads the same.
	if out, err := tributary(t, nil, "lake", "compact", "--target", target, "--catalog", "sql:"+db, "web.signups"); err != nil || !strings.Contains(out, "compacted") {
		t.Fatalf("lake compact through the catalog: %v\n%s", err, out)
	}
	tbl, err = cat.Load("web.signups")
	if err != nil {
		t.Fatal(err)
	}
	if op := tbl.Metadata.Current().Summary["operation"]; op != "replace" || len(tbl.Metadata.Snapshots) != 3 {
		t.Fatalf("after lake compact: %d snapshots, the current one a %q", len(tbl.Metadata.Snapshots), op)
	}
	checkTableOnce(t, readIcebergAt(t, dir+"/"+tbl.File), hwm)

	// A plain backfill would delete files the table reads, though the
	// directory has no version-hint.text: refused.
	out, err = tributary(t, nil, "load", "backfill", "-b", b.Addr(), "--topic", "web.signups", "--partition", "0", "--from", "0", "--to", "10",
		"--target", target, "--schema", activitySchema, "--time-field", "timestamp")
	if err == nil || !strings.Contains(out, "has an Iceberg table") {
		t.Fatalf("a plain backfill of a SQL catalog's table: want it refused, got %v\n%s", err, out)
	}

	// Without the catalog the directory holds no Hadoop table: refused.
	produce(t, b.Addr(), "web.signups", 2*n, 10, 0, &want)
	plain := append([]string(nil), args...)
	for i := range plain {
		if plain[i] == "sql:"+db {
			plain[i] = "hadoop"
		}
	}
	start := time.Now()
	out, err = tributary(t, nil, append([]string{"load", "run"}, plain...)...)
	if err == nil || !strings.Contains(out, "written through a SQL catalog") {
		t.Fatalf("a run without the catalog: want it refused, got %v\n%s", err, out)
	}
	t.Logf("refused in %v", time.Since(start))
	mustLoad(t, args...)
	checkStateAgrees(t, fs, cat, "web.signups", testbroker.HighWatermarks(t, b.Addr(), "web.signups"))
}

// readIcebergAt reads a table with pyiceberg from a metadata file.
func readIcebergAt(t *testing.T, metadata string) *icebergView {
	t.Helper()
	py := testbroker.Python(t, "pyiceberg")
	out, err := exec.Command(py, filepath.Join(testbroker.RepoRoot(), "loader", "testdata", "read_iceberg.py"), metadata).Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("read_iceberg.py: %v\n%s", err, stderr)
	}
	var v icebergView
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return &v
}
