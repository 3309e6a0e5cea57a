package loader_test

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testhdfs"
	"github.com/tributary-io/tributary/loader"
)

func hdfsTarget(t *testing.T) string {
	c := testhdfs.Get(t)
	return "hdfs://" + c.NameNode + testhdfs.Dir(t)
}

func hdfsArgs(t *testing.T) []string { return []string{"--hdfs-user", testhdfs.Get(t).User} }

// Issue 7, tests 1, 3 and 4: 300,000 activity events (a fifth in make
// test, see sized) over 6 partitions loaded into HDFS by 4 workers, read back by pyarrow: every offset once,
// every value as produced, every file in the hour of its events. Then an
// incremental load writes only the new offsets, and the same data loaded by
// 3 worker processes gives the same rows.
func TestLoadHDFS(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	target := hdfsTarget(t)
	testbroker.CreateTopic(t, b.Addr(), "events", 6)
	var want produced
	produce(t, b.Addr(), "events", 0, sized(300_000), 0, &want)

	common := append([]string{"-b", b.Addr(), "--topics", "events", "--schema", activitySchema, "--time-field", "timestamp",
		"--max-records-per-unit", fmt.Sprint(sized(40_000))}, hdfsArgs(t)...)
	out := mustLoad(t, append([]string{"--target", target, "--parallelism", "4"}, common...)...)
	t.Log(out)
	first := readLake(t, target, "events")
	checkExactlyOnce(t, first, &want, testbroker.HighWatermarks(t, b.Addr(), "events"))
	before := files(t, first.dir)

	// Incremental: only the new offsets are written.
	hwm := testbroker.HighWatermarks(t, b.Addr(), "events")
	produce(t, b.Addr(), "events", sized(300_000), sized(30_000), 0, &want)
	mustLoad(t, append([]string{"--target", target, "--parallelism", "4"}, common...)...)
	second := readLake(t, target, "events")
	checkExactlyOnce(t, second, &want, testbroker.HighWatermarks(t, b.Addr(), "events"))
	fs, err := fsys.Open(target, fsys.Options{User: testhdfs.DefaultUser})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	l := &loader.Loader{FS: fs}
	m, err := l.LatestManifest(loader.DefaultJob)
	if err != nil || m == nil {
		t.Fatalf("latest manifest: %v", err)
	}
	for _, f := range m.Files {
		if f.First < hwm[f.Partition] {
			t.Errorf("the incremental run wrote %s, which starts below the previous high watermark %d", f.Path, hwm[f.Partition])
		}
	}
	if m.Rows != int64(sized(30_000)) {
		t.Errorf("the incremental run wrote %d rows, want %d", m.Rows, sized(30_000))
	}
	after := files(t, second.dir)
	for _, f := range before {
		if !contains(after, f) {
			t.Errorf("file %s of the first run is gone after the second", f)
		}
	}

	// The same load by 3 worker processes sharing a saved plan.
	target2 := hdfsTarget(t)
	planOut, err := tributary(t, nil, append([]string{"load", "plan", "--save", "--target", target2}, common...)...)
	if err != nil {
		t.Fatalf("load plan --save: %v\n%s", err, planOut)
	}
	lines := strings.Split(strings.TrimSpace(planOut), "\n")
	planURI := lines[len(lines)-1]
	var wg sync.WaitGroup
	errs := make([]error, 3)
	outs := make([]string, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(testbroker.Binary(t), append([]string{"load", "worker", "--plan", planURI, "--index", fmt.Sprint(i), "--count", "3"}, hdfsArgs(t)...)...)
			o, err := cmd.CombinedOutput()
			outs[i], errs[i] = string(o), err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v\n%s", i, err, outs[i])
		}
	}
	out = mustLoad(t, append([]string{"--target", target2}, common...)...)
	if !strings.Contains(out, "nothing new") {
		t.Logf("committing the workers' run:\n%s", out)
	}
	third := readLake(t, target2, "events")
	checkExactlyOnce(t, third, &want, testbroker.HighWatermarks(t, b.Addr(), "events"))
	if len(third.rows) != len(second.rows) {
		t.Fatalf("3 processes loaded %d rows, one process %d", len(third.rows), len(second.rows))
	}
}

// Issue 7, tests 5 and 6: on a file:// target, with 1% of the records
// malformed (half not JSON, half breaking the schema). They land in
// _errors with their offsets and reasons; the rest load.
func TestLoadFileTargetWithBadRecords(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	target := "file://" + t.TempDir()
	testbroker.CreateTopic(t, b.Addr(), "web", 3)
	var want produced
	produce(t, b.Addr(), "web", 0, 30_000, 100, &want)
	out := mustLoad(t, "-b", b.Addr(), "--topics", "web", "--schema", activitySchema, "--time-field", "timestamp",
		"--target", target, "--max-records-per-unit", "4000")
	if !strings.Contains(out, "300 bad records") {
		t.Errorf("the run does not report 300 bad records:\n%s", out)
	}
	l := readLake(t, target, "web")
	checkExactlyOnce(t, l, &want, testbroker.HighWatermarks(t, b.Addr(), "web"))
	reasons := map[string]int{}
	for _, e := range l.bad {
		reasons[strings.SplitN(e.Reason, ":", 2)[0]]++
		if e.Value == "" {
			t.Fatalf("bad record %d/%d keeps no raw value", e.Partition, e.Offset)
		}
	}
	if len(reasons) < 2 {
		t.Errorf("want reasons for both kinds of bad record, got %v", reasons)
	}
	t.Logf("bad records by reason: %v", reasons)

	// DuckDB, as a user would query the lake: rows, distinct offsets, and
	// the hour columns it reads from the directory names.
	py := testbroker.Python(t, "duckdb")
	q := fmt.Sprintf(`select count(*), count(distinct (_partition, _offset)), count(distinct (dt, hr)),
		count(*) filter (where strftime(timestamp at time zone 'UTC', '%%Y-%%m-%%d') <> dt::varchar or hour(timestamp at time zone 'UTC') <> hr)
		from read_parquet('%s/web/*/*/*.parquet', hive_partitioning = true)`, strings.TrimPrefix(target, "file://"))
	res, err := exec.Command(py, "-c", "import duckdb,sys; print(*duckdb.sql(sys.argv[1]).fetchall()[0])", q).CombinedOutput()
	if err != nil {
		t.Fatalf("duckdb: %v\n%s", err, res)
	}
	var rows, distinct, hours, misplaced int
	fmt.Sscan(string(res), &rows, &distinct, &hours, &misplaced)
	if rows != len(want.events) || distinct != rows || hours < 1 || misplaced != 0 {
		t.Fatalf("duckdb: %d rows, %d distinct offsets, %d hours, %d rows in the wrong hour; want %d rows, all distinct, none misplaced",
			rows, distinct, hours, misplaced, len(want.events))
	}
	t.Logf("duckdb: %d rows in %d hours", rows, hours)
}

// Issue 7, test 2: kill -9 the loader in planning, while writing and while
// committing, and at random moments; rerun each time. Every offset still
// lands once, and a successful run leaves nothing in staging.
func TestLoadCrashLoop(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	target := hdfsTarget(t)
	testbroker.CreateTopic(t, b.Addr(), "clicks", 4)
	var want produced
	produce(t, b.Addr(), "clicks", 0, sized(60_000), 0, &want)
	args := append([]string{"load", "run", "-b", b.Addr(), "--topics", "clicks", "--schema", activitySchema, "--time-field", "timestamp",
		"--target", target, "--max-records-per-unit", fmt.Sprint(sized(5000)), "--parallelism", "2",
		// Each run waits out the lease of the run killed before it.
		"--lease-ttl", "3s", "--max-clock-skew", "0s", "--wait", "1m"}, hdfsArgs(t)...)

	// Each crash point is an edge of the commit protocol (loader/crash.go).
	crashes := []string{"planned", "unit-written#3", "unit-done#5", "moved#7", "committed", "finished"}
	for i, at := range crashes {
		out, err := tributary(t, []string{"TRIBUTARY_LOADER_CRASH_AT=" + at}, args...)
		var exit *exec.ExitError
		if err == nil || !asExit(err, &exit) || exit.ProcessState.String() != "signal: killed" {
			t.Fatalf("crash %d at %s: want the process killed, got %v\n%s", i, at, err, out)
		}
		if i == 2 {
			// New records while a run is open: the resumed run keeps its
			// ranges, the next one takes them.
			produce(t, b.Addr(), "clicks", sized(60_000), sized(10_000), 0, &want)
		}
	}
	// kill -9 from outside at moments spread over a run.
	produce(t, b.Addr(), "clicks", sized(70_000), sized(20_000), 0, &want)
	for _, after := range []time.Duration{100 * time.Millisecond, 250 * time.Millisecond, 600 * time.Millisecond} {
		killAfter(t, after, args...)
	}
	out, err := tributary(t, nil, args...)
	if err != nil {
		t.Fatalf("the final run: %v\n%s", err, out)
	}
	checkExactlyOnce(t, readLake(t, target, "clicks"), &want, testbroker.HighWatermarks(t, b.Addr(), "clicks"))
	fs, err := fsys.Open(target, fsys.Options{User: testhdfs.DefaultUser})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	if ents, err := fs.ReadDir("_tributary/staging"); err == nil && len(ents) > 0 {
		t.Fatalf("staging holds %d entries after a successful run, first %s", len(ents), ents[0].Name())
	}
}

func asExit(err error, exit **exec.ExitError) bool {
	e, ok := err.(*exec.ExitError)
	*exit = e
	return ok
}

// killAfter starts the loader and kills it with SIGKILL after a while
// (if it is still running).
func killAfter(t *testing.T, after time.Duration, args ...string) {
	t.Helper()
	cmd := exec.Command(testbroker.Binary(t), args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Logf("run finished before the kill at %s: %v", after, err)
	case <-time.After(after):
		cmd.Process.Kill()
		<-done
		t.Logf("killed after %s", after)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
