package jobs_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/jobs"
	"github.com/tributary-io/tributary/loader"
)

// crashEnv makes the loader inside `jobs serve` kill its own process with
// SIGKILL at a point of the commit protocol (loader/crash.go).
const crashEnv = "TRIBUTARY_LOADER_CRASH_AT"

// Issue 8, test 3: the scheduler is killed (SIGKILL) in the middle of a
// run, with some units done. Restarted, it waits out the dead run's lease,
// resumes its plan and completes it: every offset once, the dead run in the
// history as interrupted, the next one naming the plan it resumed.
func TestKilledSchedulerResumes(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "taps", 3)
	p := &producer{t: t, addr: b.Addr(), topic: "taps"}
	p.produce(6000)
	target := hdfsTarget(t)
	file := filepath.Join(t.TempDir(), "jobs.yaml")
	writeConfig(t, file, fmt.Sprintf("bootstrap: %s\nlease_ttl: 5s\nmax_clock_skew: 1s\njobs:\n", b.Addr())+
		jobYAML("taps", "taps", target, "    every: 2s\n    parallelism: 1\n"))

	first := serve(t, file, crashEnv+"=unit-done#3")
	first.waitDone(90 * time.Second)
	fs := openTarget(t, target)
	open, err := (&loader.Loader{FS: fs}).OpenPlan("taps")
	fs.Close()
	if err != nil || open == nil {
		t.Fatalf("no open plan after the crash (%v)", err)
	}
	recs := history(t, target, "taps")
	if len(recs) != 1 || recs[0].Outcome != jobs.Running {
		t.Fatalf("history after the crash: %d records, last %+v", len(recs), recs)
	}
	crashed := recs[0].ID

	killed := time.Now()
	second := serve(t, file)
	eventually(t, 90*time.Second, "a run after the restart", func() bool {
		return countOutcome(history(t, target, "taps"), jobs.Succeeded) >= 1
	})
	second.stop()
	recs = history(t, target, "taps")
	var resumed *jobs.Record
	for _, r := range recs {
		if r.ID == crashed && r.Outcome != jobs.Interrupted {
			t.Errorf("the crashed run is %s, want interrupted: %+v", r.Outcome, r)
		}
		for _, a := range r.Attempts {
			if a.Resumed == open.Run {
				resumed = r
			}
		}
	}
	if resumed == nil || resumed.Outcome != jobs.Succeeded || resumed.Loads[0].Run != open.Run {
		t.Fatalf("no successful run resumed plan %s: %+v", open.Run, recs)
	}
	if wait := resumed.Attempts[0].Started.Sub(killed); wait < 3*time.Second {
		t.Errorf("the restarted scheduler ran %v after the crash, within the dead run's lease", wait)
	}
	checkContiguous(t, recs)
	checkNoOverlap(t, recs)
	checkExactlyOnce(t, readLake(t, target, "taps"), testbroker.HighWatermarks(t, b.Addr(), "taps"), p.next)
}

// Issue 8, test 5: the process executor (`tributary load worker`
// processes) writes the same files, with the same rows, as the local one.
func TestProcessExecutorSameFiles(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "buys", 3)
	p := &producer{t: t, addr: b.Addr(), topic: "buys"}
	p.produce(6000)
	local, proc := hdfsTarget(t), hdfsTarget(t)
	file := filepath.Join(t.TempDir(), "jobs.yaml")
	writeConfig(t, file, fmt.Sprintf("bootstrap: %s\njobs:\n", b.Addr())+
		jobYAML("buys-local", "buys", local, "    parallelism: 3\n")+
		jobYAML("buys-process", "buys", proc, "    parallelism: 3\n    executor: process\n"))
	s := serve(t, file)
	for _, j := range []string{"buys-local", "buys-process"} {
		if _, err := s.client.Trigger(context.Background(), j); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 120*time.Second, "both runs", func() bool {
		return countOutcome(history(t, local, "buys-local"), jobs.Succeeded) == 1 &&
			countOutcome(history(t, proc, "buys-process"), jobs.Succeeded) == 1
	})
	if n := strings.Count(s.Log(), `msg="child exited"`); n != 3 {
		t.Errorf("the process executor ran %d worker processes, want 3", n)
	}
	hwm := testbroker.HighWatermarks(t, b.Addr(), "buys")
	a, c := readLake(t, local, "buys"), readLake(t, proc, "buys")
	checkExactlyOnce(t, a, hwm, p.next)
	checkExactlyOnce(t, c, hwm, p.next)
	key := func(rows []row) []string {
		var out []string
		for _, r := range rows {
			out = append(out, fmt.Sprintf("%s %d %d %s", r.File, r.Partition, r.Offset, r.MessageID))
		}
		sort.Strings(out)
		return out
	}
	ka, kc := key(a), key(c)
	if strings.Join(ka, "\n") != strings.Join(kc, "\n") {
		t.Fatalf("local and process executors differ: %d and %d rows", len(ka), len(kc))
	}
	files := map[string]bool{}
	for _, r := range a {
		files[r.File] = true
	}
	t.Logf("%d rows in %d files, the same from both executors", len(ka), len(files))
}
