package loader_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testhdfs"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/lease"
)

// proc is a tributary process started in the background.
type proc struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

func start(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(testbroker.Binary(t), args...), out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.cmd.Process.Kill(); <-p.done })
	return p
}

// wait returns the process's output and exit status (-1: killed).
func (p *proc) wait(t *testing.T) (string, int) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("%v still running after 3 minutes:\n%s", p.cmd.Args, p.out.String())
	}
	return p.out.String(), p.cmd.ProcessState.ExitCode()
}

// holding waits until the job's lease is held by process p (which may
// have died since, holding it).
func holding(t *testing.T, fs fsys.FS, job string, p *proc) lease.Info {
	t.Helper()
	pid := p.cmd.Process.Pid
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		ended := false
		select {
		case <-p.done:
			ended = true
		default:
		}
		info, live, err := lease.Current(fs, job, 5*time.Second, 0)
		if err == nil && info.PID == pid && !info.Released && (live || ended) {
			return info
		}
		if ended {
			t.Fatalf("%v ended before it held the lease:\n%s", p.cmd.Args, p.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("process %d never held the lease of job %q", pid, job)
	return lease.Info{}
}

// manifests are a job's committed runs, oldest first.
func manifests(t *testing.T, fs fsys.FS, job string) []*loader.Manifest {
	t.Helper()
	ents, err := fs.ReadDir("_tributary/runs")
	if err != nil {
		t.Fatal(err)
	}
	var out []*loader.Manifest
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), job+"-") {
			continue
		}
		b, err := fs.ReadFile(path.Join("_tributary/runs", e.Name(), "manifest.json"))
		if err != nil {
			t.Fatalf("run %s has no manifest: %v", e.Name(), err)
		}
		var m loader.Manifest
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, &m)
	}
	return out
}

// checkHistory checks that the job's runs counted every offset once: their
// records add up to the high watermarks, and a run that found its ranges
// committed by another counted none.
func checkHistory(t *testing.T, fs fsys.FS, job string, hwm map[int32]int64) {
	t.Helper()
	var total, sum int64
	for _, end := range hwm {
		total += end
	}
	var desc []string
	for _, m := range manifests(t, fs, job) {
		sum += m.Records
		desc = append(desc, fmt.Sprintf("%s: %d records (superseded by %q)", m.Run, m.Records, m.Superseded))
		if m.Superseded != "" && (m.Records != 0 || len(m.Files) != 0) {
			t.Errorf("superseded run %s counts %d records in %d files", m.Run, m.Records, len(m.Files))
		}
	}
	if sum != total {
		t.Fatalf("the runs of job %q count %d records, the topic has %d:\n  %s", job, sum, total, strings.Join(desc, "\n  "))
	}
}

// checkBusy checks a process that found the job busy: status 75, and a
// message that names the holder.
func checkBusy(t *testing.T, out string, status int, holder lease.Info) {
	t.Helper()
	if status != 75 {
		t.Fatalf("a run of a busy job exited %d, want 75:\n%s", status, out)
	}
	host, _ := os.Hostname()
	for _, want := range []string{"busy", "host " + host, fmt.Sprintf("pid %d", holder.PID), "run " + holder.Run, "since " + holder.Acquired.Format(time.RFC3339)} {
		if !strings.Contains(out, want) {
			t.Fatalf("the busy message does not name the holder (%q):\n%s", want, out)
		}
	}
}

// Issue 29: overlapping `load run` processes of one job, as cron starts
// them when a run outlasts its interval, and holders killed by SIGKILL
// while others wait. One run at a time loads; the others exit 75 naming
// the holder or wait for it; a dead holder is taken over after its TTL and
// its open plan resumed; the history counts every record once and the lake
// holds every offset once.
func TestLoadRunsOverlap(t *testing.T) {
	t.Parallel()
	began := time.Now()
	b := testbroker.Start(t)
	target := hdfsTarget(t)
	testbroker.CreateTopic(t, b.Addr(), "visits", 3)
	var want produced
	produce(t, b.Addr(), "visits", 0, 3000, 0, &want)
	fs, err := fsys.Open(target, fsys.Options{User: testhdfs.DefaultUser})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	args := append([]string{"load", "run", "-b", b.Addr(), "--topics", "visits", "--schema", activitySchema, "--time-field", "timestamp",
		"--target", target, "--max-records-per-unit", "500", "--parallelism", "2", "--lease-ttl", "4s", "--max-clock-skew", "0s"}, hdfsArgs(t)...)
	waiting := append(append([]string(nil), args...), "--wait", "2m")
	t.Logf("%.1fs: broker, HDFS and data ready", time.Since(began).Seconds())

	// Three at once. The first is stopped (SIGSTOP) once it holds the lease,
	// for less than its TTL, so that the others surely overlap it.
	first := start(t, nil, append(append([]string(nil), args...), "--lease-ttl", "20s")...)
	holder := holding(t, fs, loader.DefaultJob, first)
	first.cmd.Process.Signal(syscall.SIGSTOP)
	third := start(t, nil, waiting...)
	out, status := start(t, nil, args...).wait(t)
	checkBusy(t, out, status, holder)
	first.cmd.Process.Signal(syscall.SIGCONT)
	if out, status := first.wait(t); status != 0 || !strings.Contains(out, "3000 records") {
		t.Fatalf("the holder exited %d:\n%s", status, out)
	}
	if out, status := third.wait(t); status != 0 || !strings.Contains(out, "nothing new to load") {
		t.Fatalf("the run that waited exited %d, or loaded something:\n%s", status, out)
	}
	checkHistory(t, fs, loader.DefaultJob, testbroker.HighWatermarks(t, b.Addr(), "visits"))
	t.Logf("%.1fs: three overlapping runs done", time.Since(began).Seconds())

	// The holder killed at points of the protocol while two others wait.
	crashes := []string{"unit-done#2", "moved#2", "committed"}
	if os.Getenv("TRIBUTARY_TEST_LONG") != "" {
		crashes = append(crashes, "planned", "unit-written#1", "moved#5", "finished")
	}
	for i, at := range crashes {
		produce(t, b.Addr(), "visits", 3000+1000*i, 1000, 0, &want)
		dying := start(t, []string{"TRIBUTARY_LOADER_CRASH_AT=" + at}, args...)
		dead := holding(t, fs, loader.DefaultJob, dying)
		waiters := []*proc{start(t, nil, waiting...), start(t, nil, waiting...)}
		if out, status := dying.wait(t); status != -1 {
			t.Fatalf("crash at %s: the holder exited %d, want killed:\n%s", at, status, out)
		}
		killed := time.Now()
		took := 0
		for _, w := range waiters {
			out, status := w.wait(t)
			if status != 0 {
				t.Fatalf("crash at %s: a waiting run exited %d:\n%s", at, status, out)
			}
			if strings.Contains(out, "took over the job's lease") {
				took++
				if !strings.Contains(out, fmt.Sprintf("pid %d", dead.PID)) {
					t.Errorf("crash at %s: the taker does not name the dead holder:\n%s", at, out)
				}
			}
		}
		if took != 1 {
			t.Fatalf("crash at %s: %d runs took the dead holder's lease over, want 1", at, took)
		}
		// The taker waited for the dead lease's expiry: the kill came at
		// most a renewal (TTL/3) after its last renewal.
		if wait := time.Since(killed); wait < time.Second {
			t.Errorf("crash at %s: both waiting runs ended %v after the kill, within the dead holder's lease", at, wait)
		}
		if open, err := (&loader.Loader{FS: fs}).OpenPlan(loader.DefaultJob); err != nil || open != nil {
			t.Fatalf("crash at %s: an open plan is left (%v): %+v", at, err, open)
		}
		checkHistory(t, fs, loader.DefaultJob, testbroker.HighWatermarks(t, b.Addr(), "visits"))
		t.Logf("%.1fs: holder killed at %s, taken over %.1fs after the kill", time.Since(began).Seconds(), at, time.Since(killed).Seconds())
	}
	checkExactlyOnce(t, readLake(t, target, "visits"), &want, testbroker.HighWatermarks(t, b.Addr(), "visits"))
	if ents, err := fs.ReadDir("_tributary/staging"); err == nil && len(ents) > 0 {
		t.Fatalf("staging holds %d entries after the runs, first %s", len(ents), ents[0].Name())
	}
}

// Issue 29: `load worker` processes of a plan work under the lease of the
// run that executes the plan; while another run holds the job they exit 75
// naming it.
func TestLoadWorkersUnderPlanLease(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	target := hdfsTarget(t)
	testbroker.CreateTopic(t, b.Addr(), "taps", 2)
	var want produced
	produce(t, b.Addr(), "taps", 0, 2000, 0, &want)
	fs, err := fsys.Open(target, fsys.Options{User: testhdfs.DefaultUser})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	common := append([]string{"-b", b.Addr(), "--topics", "taps", "--schema", activitySchema, "--time-field", "timestamp",
		"--target", target, "--max-records-per-unit", "500"}, hdfsArgs(t)...)
	out, err := tributary(t, nil, append([]string{"load", "plan", "--save"}, common...)...)
	if err != nil {
		t.Fatalf("load plan --save: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	planURI := lines[len(lines)-1]
	_, run, err := loader.ParsePlanURI(planURI)
	if err != nil {
		t.Fatal(err)
	}
	worker := func(args ...string) *proc {
		return start(t, nil, append(append([]string{"load", "worker", "--plan", planURI}, args...), hdfsArgs(t)...)...)
	}

	// Another run holds the job, executing no plan yet: a worker is a rival.
	held, err := lease.Acquire(fs, loader.DefaultJob, "run-of-the-test", lease.Config{TTL: 10 * time.Second, Owner: "the test's run"})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	out, status := worker("--unit", "0").wait(t)
	checkBusy(t, out, status, held.Info())
	if !strings.Contains(out, "the test's run") {
		t.Fatalf("the busy worker does not name the holder:\n%s", out)
	}

	// The run executes this plan: the workers are part of it.
	if err := held.SetPlan(run); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			if out, status := worker("--index", fmt.Sprint(i), "--count", "2").wait(t); status != 0 {
				t.Errorf("worker %d under the plan's lease exited %d:\n%s", i, status, out)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	if err := held.Release(); err != nil {
		t.Fatal(err)
	}
	// The next run commits the workers' plan without running a unit again.
	out = mustLoad(t, common...)
	if strings.Contains(out, "unit done") {
		t.Errorf("the committing run ran units the workers had done:\n%s", out)
	}
	checkHistory(t, fs, loader.DefaultJob, testbroker.HighWatermarks(t, b.Addr(), "taps"))
	checkExactlyOnce(t, readLake(t, target, "taps"), &want, testbroker.HighWatermarks(t, b.Addr(), "taps"))
}
