package loader_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"

	"github.com/tributary-io/tributary/formats/iceberg"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testhdfs"
	"github.com/tributary-io/tributary/loader"
)

// icebergView is what pyiceberg saw of a table (testdata/read_iceberg.py).
type icebergView struct {
	FormatVersion int `json:"format_version"`
	Schema        []struct {
		ID   int    `json:"id"`
		Name string `json:"name"`
		Type string `json:"type"`
	} `json:"schema"`
	SchemaIDs []int `json:"schema_ids"`
	Spec      []struct {
		Source    int    `json:"source"`
		Name      string `json:"name"`
		Transform string `json:"transform"`
	} `json:"spec"`
	Snapshots []struct {
		ID      int64             `json:"id"`
		Parent  *int64            `json:"parent"`
		Summary map[string]string `json:"summary"`
		Rows    int64             `json:"rows"`
	} `json:"snapshots"`
	Offsets         [][2]int64 `json:"offsets"`
	Files           int        `json:"files"`
	Hours           []int      `json:"hours"`
	FilesFirstHour  int        `json:"files_first_hour"`
	FilesFirstHourW int        `json:"files_first_hour_want"`
}

func (v *icebergView) field(name string) (id int, typ string) {
	for _, f := range v.Schema {
		if f.Name == name {
			return f.ID, f.Type
		}
	}
	return 0, ""
}

// readIceberg reads the table of topic with pyiceberg: in place for a
// file:// target, from a local copy of the table for HDFS.
func readIceberg(t *testing.T, target, topic string) *icebergView {
	t.Helper()
	py := testbroker.Python(t, "pyiceberg")
	script := filepath.Join(testbroker.RepoRoot(), "loader", "testdata", "read_iceberg.py")
	args := []string{script, target + "/" + topic}
	if strings.HasPrefix(target, "hdfs://") {
		fs, err := fsys.Open(target, fsys.Options{User: testhdfs.DefaultUser})
		if err != nil {
			t.Fatal(err)
		}
		defer fs.Close()
		local := t.TempDir()
		copyTree(t, fs, topic, local)
		args = []string{script, target + "/" + topic, target, local}
	} else {
		args[1] = strings.TrimPrefix(args[1], "file://")
	}
	cmd := exec.Command(py, args...)
	out, err := cmd.Output()
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

// checkTableOnce checks that the table's current snapshot holds every
// offset below the high watermarks exactly once.
func checkTableOnce(t *testing.T, v *icebergView, hwm map[int32]int64) {
	t.Helper()
	seen := map[[2]int64]bool{}
	for _, po := range v.Offsets {
		if seen[po] {
			t.Fatalf("partition %d offset %d is in the table twice", po[0], po[1])
		}
		seen[po] = true
	}
	var total int64
	for p, end := range hwm {
		for o := int64(0); o < end; o++ {
			if !seen[[2]int64{int64(p), o}] {
				t.Fatalf("partition %d offset %d (high watermark %d) is not in the table", p, o, end)
			}
		}
		total += end
	}
	if int64(len(seen)) != total {
		t.Fatalf("the table has %d offsets, the topic %d", len(seen), total)
	}
}

// evolvedSchema is the activity schema with one more nullable column.
func evolvedSchema(t *testing.T) string {
	b, err := os.ReadFile(activitySchema)
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, "  - name: campaign\n    type: string\n    nullable: true\n"...)
	p := filepath.Join(t.TempDir(), "activity2.yaml")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Issue 24: three runs into an Iceberg table on file:// and on HDFS, the
// third with a new nullable column; pyiceberg reads each table: every
// offset once, the schema with stable field ids, hours(_event_time), one
// snapshot per run with the run's offsets in its summary, and time travel
// to each snapshot.
func TestLoadIceberg(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "clicks", 3)
	var want produced
	n := sized(10_000)
	produce(t, b.Addr(), "clicks", 0, n, 0, &want)
	targets := []string{"file://" + t.TempDir(), hdfsTarget(t)}
	load := func(target, schema string) time.Duration {
		args := []string{"--target", target, "-b", b.Addr(), "--topics", "clicks", "--schema", schema, "--time-field", "timestamp",
			"--table-format", "iceberg", "--parallelism", "2", "--max-records-per-unit", fmt.Sprint(n / 4)}
		start := time.Now()
		out := mustLoad(t, append(args, hdfsArgs(t)...)...)
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "table snapshot") {
				t.Logf("%s: %s", target[:4], line) // the commit's latency
			}
		}
		return time.Since(start)
	}
	for _, target := range targets {
		load(target, activitySchema)
	}
	produce(t, b.Addr(), "clicks", n, n/2, 0, &want)
	for _, target := range targets {
		load(target, activitySchema)
	}
	// Events 37 ms apart (decode.ActivityEvent): from 100,000 on, the
	// next hour, so that a filter on the event time prunes files.
	produce(t, b.Addr(), "clicks", 100_000, n/2, 0, &want)
	evolved := evolvedSchema(t)
	for _, target := range targets {
		load(target, evolved)
	}
	hwm := testbroker.HighWatermarks(t, b.Addr(), "clicks")
	t.Run("race-hdfs", func(t *testing.T) {
		// Two committers on the NameNode, racing for each version of a
		// table: each of their appends lands once, in one line of
		// snapshots, the losers retrying on the winners' versions.
		fs, err := fsys.Open(targets[1], fsys.Options{User: testhdfs.DefaultUser})
		if err != nil {
			t.Fatal(err)
		}
		defer fs.Close()
		c := &iceberg.Catalog{FS: fs}
		schema := arrow.NewSchema([]arrow.Field{{Name: "_event_time", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}}}, nil)
		var wg sync.WaitGroup
		errs := make(chan error, 6)
		for w := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 3 {
					_, _, err := c.Append(iceberg.Append{Dir: "race", Schema: schema, TimeColumn: "_event_time",
						Files: []iceberg.NewFile{{Path: fmt.Sprintf("race/%d-%d.parquet", w, i), Records: 1, Bytes: 1, Hour: 1}}})
					if err != nil {
						errs <- err
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		tbl, err := c.Load("race")
		if err != nil {
			t.Fatal(err)
		}
		m := tbl.Metadata
		if len(m.Snapshots) != 6 || m.Current().Summary["total-data-files"] != "6" {
			t.Fatalf("%d snapshots, %s files; want 6 and 6", len(m.Snapshots), m.Current().Summary["total-data-files"])
		}
		for i := 1; i < len(m.Snapshots); i++ {
			if p := m.Snapshots[i].ParentID; p == nil || *p != m.Snapshots[i-1].ID {
				t.Fatalf("snapshot %d's parent is not snapshot %d", i, i-1)
			}
		}
	})
	for _, target := range targets {
		t.Run(strings.SplitN(target, ":", 2)[0], func(t *testing.T) {
			v := readIceberg(t, target, "clicks")
			checkTableOnce(t, v, hwm)
			if v.FormatVersion != 2 || len(v.Snapshots) != 3 {
				t.Fatalf("format version %d, %d snapshots; want 2 and one per run (3)", v.FormatVersion, len(v.Snapshots))
			}
			wantRows := []int64{int64(n), int64(n + n/2), int64(2 * n)}
			for i, s := range v.Snapshots {
				if s.Rows != wantRows[i] {
					t.Errorf("snapshot %d (time travel): %d rows, want %d", i, s.Rows, wantRows[i])
				}
				if i > 0 && (s.Parent == nil || *s.Parent != v.Snapshots[i-1].ID) {
					t.Errorf("snapshot %d's parent is not snapshot %d", i, i-1)
				}
				if s.Summary["operation"] != "append" || !strings.HasPrefix(s.Summary["tributary.run-id"], "default-") || s.Summary["tributary.topic"] != "clicks" {
					t.Errorf("snapshot %d summary: %v", i, s.Summary)
				}
			}
			var ranges map[string][2]int64
			if err := json.Unmarshal([]byte(v.Snapshots[2].Summary["tributary.offsets"]), &ranges); err != nil || len(ranges) != 3 {
				t.Fatalf("the last snapshot's offsets %q: %v", v.Snapshots[2].Summary["tributary.offsets"], err)
			}
			for p, end := range hwm {
				if r := ranges[fmt.Sprint(p)]; r[1] != end {
					t.Errorf("the last snapshot covers partition %d up to %d, the high watermark is %d", p, r[1], end)
				}
			}
			// Field ids: stable across the runs, the new column next.
			mid, _ := v.field("messageId")
			et, etType := v.field("_event_time")
			camp, _ := v.field("campaign")
			if mid == 0 || et == 0 || camp <= et || etType != "timestamptz" {
				t.Fatalf("field ids: messageId %d, _event_time %d (%s), campaign %d: %+v", mid, et, etType, camp, v.Schema)
			}
			if len(v.SchemaIDs) != 2 {
				t.Errorf("schemas %v: want the first and the evolved one", v.SchemaIDs)
			}
			if len(v.Spec) != 1 || v.Spec[0].Source != et || v.Spec[0].Transform != "hour" {
				t.Errorf("partition spec %+v: want hour(_event_time)", v.Spec)
			}
			// The lake commands say the same.
			lake := func(args ...string) string {
				out, err := tributary(t, nil, append(append([]string{"lake"}, args...), append([]string{"--target", target}, hdfsArgs(t)...)...)...)
				if err != nil {
					t.Fatalf("lake %v: %v\n%s", args, err, out)
				}
				return out
			}
			if out := lake("snapshots", "clicks"); strings.Count(out, " default-") != 3 || !strings.Contains(out, fmt.Sprint(v.Snapshots[2].ID)) {
				t.Errorf("lake snapshots: want the 3 runs' snapshots:\n%s", out)
			}
			if out := lake("describe", "clicks"); !strings.Contains(out, "hour(_event_time) as _event_time_hour") || !strings.Contains(out, fmt.Sprintf("%3d  campaign", camp)) {
				t.Errorf("lake describe:\n%s", out)
			}
			if out := lake("tables"); !strings.Contains(out, "clicks ") || (strings.HasPrefix(target, "hdfs") != strings.Contains(out, "race ")) {
				t.Errorf("lake tables:\n%s", out)
			}
			if len(v.Hours) < 2 || v.FilesFirstHour != v.FilesFirstHourW || v.FilesFirstHour >= v.Files {
				t.Errorf("partition pruning: %d files over hours %v; a filter on the first hour planned %d files, want %d",
					v.Files, v.Hours, v.FilesFirstHour, v.FilesFirstHourW)
			}
			checkJavaReads(t, target+"/clicks", v, hwm, int64(n))
		})
	}
}

// checkJavaReads reads the table with Apache Iceberg's Java library
// (testbroker.ReadIcebergJava) and checks it sees what pyiceberg saw (v):
// the same field ids, spec and snapshots, every offset once, and the
// first snapshot's rows by time travel. The rows are read with
// IcebergGenerics, which resolves columns by the files' field ids only
// (no name mapping): a file without them fails the read or reads nulls.
func checkJavaReads(t *testing.T, location string, v *icebergView, hwm map[int32]int64, firstRows int64) {
	t.Helper()
	var j struct {
		FormatVersion int `json:"format_version"`
		Schema        []struct {
			ID   int    `json:"id"`
			Name string `json:"name"`
		} `json:"schema"`
		Spec []struct {
			Source    int    `json:"source"`
			Transform string `json:"transform"`
		} `json:"spec"`
		Snapshots []struct {
			ID      int64             `json:"id"`
			Summary map[string]string `json:"summary"`
		} `json:"snapshots"`
		Current [][2]int64  `json:"current"`
		First   [][2]int64  `json:"first"`
		Columns [][]*string `json:"columns"`
	}
	out := testbroker.ReadIcebergJava(t, location, "0", "HADOOP_USER_NAME="+testhdfs.DefaultUser,
		"READ_ICEBERG_BY_ID=1", "READ_ICEBERG_COLUMNS=messageId,type,_offset")
	if err := json.Unmarshal(out, &j); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if j.FormatVersion != 2 || len(j.Schema) != len(v.Schema) || len(j.Spec) != 1 || j.Spec[0].Source != v.Spec[0].Source || j.Spec[0].Transform != "hour" {
		t.Errorf("Java: format %d, schema %+v, spec %+v; pyiceberg: schema %+v, spec %+v", j.FormatVersion, j.Schema, j.Spec, v.Schema, v.Spec)
	}
	for i, f := range j.Schema {
		if i < len(v.Schema) && (f.ID != v.Schema[i].ID || f.Name != v.Schema[i].Name) {
			t.Errorf("column %d: Java sees %d %s, pyiceberg %d %s", i, f.ID, f.Name, v.Schema[i].ID, v.Schema[i].Name)
		}
	}
	if len(j.Snapshots) != len(v.Snapshots) {
		t.Fatalf("Java sees %d snapshots, pyiceberg %d", len(j.Snapshots), len(v.Snapshots))
	}
	for i, s := range j.Snapshots {
		if s.ID != v.Snapshots[i].ID || s.Summary["tributary.offsets"] != v.Snapshots[i].Summary["tributary.offsets"] {
			t.Errorf("snapshot %d: Java sees %d %v, pyiceberg %d %v", i, s.ID, s.Summary, v.Snapshots[i].ID, v.Snapshots[i].Summary)
		}
	}
	checkTableOnce(t, &icebergView{Offsets: j.Current}, hwm)
	if len(j.Columns) != len(j.Current) {
		t.Errorf("Java read %d rows of messageId, type, _offset and %d offsets", len(j.Columns), len(j.Current))
	}
	for _, r := range j.Columns {
		if len(r) != 3 || r[0] == nil || r[1] == nil || r[2] == nil {
			t.Fatalf("Java (by field id) read a row of messageId, type, _offset with a null: %v", r)
		}
	}
	if int64(len(j.First)) != firstRows {
		t.Errorf("Java's time travel to the first snapshot: %d rows, want %d", len(j.First), firstRows)
	}
}

// Issue 24: the loader killed (kill -9) just before and just after a
// table commit (and, under TRIBUTARY_TEST_LONG, after the state), then run
// again: one snapshot per run, the table's current snapshot holds every
// offset once, and the job's state and the newest snapshot's summary
// agree on where the next run starts.
func TestLoadIcebergCrash(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "taps", 2)
	dir := t.TempDir()
	target := "file://" + dir
	var want produced
	n := sized(5_000)
	args := []string{"--target", target, "-b", b.Addr(), "--topics", "taps", "--schema", activitySchema, "--time-field", "timestamp",
		"--table-format", "iceberg", "--max-records-per-unit", fmt.Sprint(n / 3),
		// Each rerun waits out the lease of the run killed before it.
		"--lease-ttl", "3s", "--max-clock-skew", "0s", "--wait", "1m"}
	// iceberg-create: the first run dies creating the table;
	// iceberg-manifests: the next, after its manifests and metadata file
	// are written, before the rename commits them.
	points := []string{"iceberg-create", "iceberg-manifests", "iceberg-committed"}
	if os.Getenv("TRIBUTARY_TEST_LONG") != "" {
		points = append(points, "committed", "iceberg-committed")
	}
	fs, err := fsys.Open(target, fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, point := range points {
		produce(t, b.Addr(), "taps", i*n, n, 0, &want)
		t0 := time.Now()
		out, err := tributary(t, []string{"TRIBUTARY_LOADER_CRASH_AT=" + point}, append([]string{"load", "run"}, args...)...)
		var exit *exec.ExitError
		if err == nil || !asExit(err, &exit) || exit.ProcessState.String() != "signal: killed" {
			t.Fatalf("crash at %s: want the process killed, got %v\n%s", point, err, out)
		}
		t.Logf("crashed run %v", time.Since(t0))
		if point == "iceberg-manifests" {
			// The crash was in the append's window: its files written, the
			// version not.
			tbl, err := (&iceberg.Catalog{FS: fs}).Load("taps")
			if err != nil {
				t.Fatal(err)
			}
			ents, err := fs.ReadDir("taps/metadata")
			if err != nil {
				t.Fatal(err)
			}
			tmp := 0
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), ".tmp-") {
					tmp++
				}
			}
			if len(tbl.Metadata.Snapshots) != i || tmp == 0 {
				t.Fatalf("killed at %s: %d snapshots (want %d) and %d uncommitted metadata files (want some): not the window between the writes and the rename",
					point, len(tbl.Metadata.Snapshots), i, tmp)
			}
		}
		start := time.Now()
		mustLoad(t, args...)
		t.Logf("rerun after a crash at %s: %v", point, time.Since(start))
		// One snapshot per run, and the state and the newest snapshot
		// agree on where the next run starts.
		tbl, err := (&iceberg.Catalog{FS: fs}).Load("taps")
		if err != nil {
			t.Fatal(err)
		}
		if len(tbl.Metadata.Snapshots) != i+1 {
			t.Fatalf("after a crash at %s and a rerun: %d snapshots, want %d", point, len(tbl.Metadata.Snapshots), i+1)
		}
		hwm := testbroker.HighWatermarks(t, b.Addr(), "taps")
		state, err := loader.ReadState(fs, loader.DefaultJob)
		if err != nil {
			t.Fatal(err)
		}
		table, err := loader.TableOffsets(fs, "taps")
		if err != nil {
			t.Fatal(err)
		}
		for p, end := range hwm {
			if state.Offsets["taps"][p] != end || table[p] != end {
				t.Fatalf("partition %d: state says %d, the table's summary %d, the high watermark is %d", p, state.Offsets["taps"][p], table[p], end)
			}
		}
	}
	// Every offset once in the current snapshot, as pyiceberg reads it (a
	// duplicate from any round would still be there); time travel sees
	// each run's rows.
	t0 := time.Now()
	v := readIceberg(t, target, "taps")
	t.Logf("pyiceberg %v", time.Since(t0))
	checkTableOnce(t, v, testbroker.HighWatermarks(t, b.Addr(), "taps"))
	for i, s := range v.Snapshots {
		if s.Rows != int64((i+1)*n) {
			t.Fatalf("snapshot %d: %d rows, want %d", i, s.Rows, (i+1)*n)
		}
	}
}

// Review finding 3: the loader killed after its table commit and before
// its state write, then a maintenance pass (a rewrite on top, and an
// expiry keeping one snapshot) before the rerun. The expiry keeps the
// crashed run's snapshot (its plan is still open), so the rerun finds its
// run id in the table and commits the run instead of closing it as
// superseded with nothing loaded.
func TestIcebergCrashThenExpire(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "taps", 1)
	dir := t.TempDir()
	target := "file://" + dir
	var want produced
	args := []string{"--target", target, "-b", b.Addr(), "--topics", "taps", "--schema", activitySchema, "--time-field", "timestamp",
		"--table-format", "iceberg", "--lease-ttl", "3s", "--max-clock-skew", "0s", "--wait", "1m"}
	// A first run creates the table (the crash point also fires on that
	// commit).
	produce(t, b.Addr(), "taps", 0, 100, 0, &want)
	mustLoad(t, args...)
	produce(t, b.Addr(), "taps", 100, 200, 0, &want)
	out, err := tributary(t, []string{"TRIBUTARY_LOADER_CRASH_AT=iceberg-committed"}, append([]string{"load", "run"}, args...)...)
	var exit *exec.ExitError
	if err == nil || !asExit(err, &exit) || exit.ProcessState.String() != "signal: killed" {
		t.Fatalf("want the process killed, got %v\n%s", err, out)
	}
	fs, err := fsys.Open(target, fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cat := &iceberg.Catalog{FS: fs}
	tbl, err := cat.Load("taps")
	if err != nil {
		t.Fatal(err)
	}
	run := tbl.Metadata.Current().Summary[iceberg.SummaryRunID]
	if run == "" {
		t.Fatalf("the crashed run's snapshot has no run id: %v", tbl.Metadata.Current().Summary)
	}
	if _, _, err := cat.RewriteManifests("taps"); err != nil {
		t.Fatal(err)
	}
	later := *cat
	later.Now = func() time.Time { return time.Now().Add(time.Hour) }
	if _, err := later.ExpireSnapshots("taps", iceberg.Expire{MaxAge: time.Minute, MinKeep: 1}); err != nil {
		t.Fatal(err)
	}
	mustLoad(t, args...)
	state, err := loader.ReadState(fs, loader.DefaultJob)
	if err != nil {
		t.Fatal(err)
	}
	if state.Run != run || state.Offsets["taps"][0] != 300 {
		t.Fatalf("after the rerun the state's run is %q at offset %d; want the crashed run %s committed, at 300", state.Run, state.Offsets["taps"][0], run)
	}
}
