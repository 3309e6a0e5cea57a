package jobs_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/jobs"
)

// Issue 8, test 1: a job every 5 seconds over a topic produced to all the
// while. After three runs that loaded something, production stops and a
// final run loads the rest: every offset is in the lake once, and each run
// began where the one before it ended. The CLI, the API and /metrics show
// the runs.
func TestScheduledRunsWhileProducing(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "views", 3)
	target := hdfsTarget(t)
	file := filepath.Join(t.TempDir(), "jobs.yaml")
	writeConfig(t, file, fmt.Sprintf("bootstrap: %s\nlease_ttl: 8s\njobs:\n", b.Addr())+
		jobYAML("views-5s", "views", target, "    every: 5s\n    parallelism: 2\n"))
	p := &producer{t: t, addr: b.Addr(), topic: "views"}
	p.produce(1000)
	s := serve(t, file)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(700 * time.Millisecond):
				p.produce(300)
			}
		}
	})
	loaded := func() int {
		n := 0
		for _, r := range history(t, target, "views-5s") {
			if r.Outcome == jobs.Succeeded && len(r.Loads) > 0 {
				n++
			}
		}
		return n
	}
	eventually(t, 120*time.Second, "three runs that loaded records", func() bool { return loaded() >= 3 })
	close(stop)
	wg.Wait()
	hwm := testbroker.HighWatermarks(t, b.Addr(), "views")

	// The final run: triggered, and done when the job has no lag left.
	out, err := exec.Command(testbroker.Binary(t), "jobs", "trigger", "views-5s", "--server", s.addr).CombinedOutput()
	if err != nil {
		t.Fatalf("jobs trigger: %v\n%s", err, out)
	}
	eventually(t, 60*time.Second, "a run that leaves no lag", func() bool {
		recs := history(t, target, "views-5s")
		last := recs[len(recs)-1]
		var lag int64
		for _, n := range last.Lag {
			lag += n
		}
		return last.Trigger == "manual" && last.Outcome == jobs.Succeeded && last.Lag != nil && lag == 0
	})
	s.stop()

	// A scheduled run that began as the scheduler stopped is cancelled, as
	// stopping promises; every run before the stop must have succeeded.
	recs := history(t, target, "views-5s")
	if last := recs[len(recs)-1]; last.Outcome == jobs.Cancelled && last.Trigger != "manual" {
		recs = recs[:len(recs)-1]
	}
	// The three scheduled loads; the final run may find nothing left when a
	// scheduled run came between the end of production and the trigger.
	if n := checkContiguous(t, recs); n < 3 {
		t.Errorf("%d loads, want at least 3", n)
	}
	checkNoOverlap(t, recs)
	for _, r := range recs {
		if r.Outcome != jobs.Succeeded {
			t.Errorf("run %s: %s %s", r.ID, r.Outcome, r.Error)
		}
		if len(r.Loads) > 0 && (r.Phases["plan"] <= 0 || r.Phases["execute"] <= 0 || r.Phases["commit"] <= 0) {
			t.Errorf("run %s has no phase durations: %v", r.ID, r.Phases)
		}
	}
	checkExactlyOnce(t, readLake(t, target, "views"), hwm, p.next)
	t.Logf("%d runs, %d events", len(recs), p.next)
}

// The CLI and the HTTP API show the history, the lag and the metrics.
func TestAPIAndCLI(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "orders", 2)
	p := &producer{t: t, addr: b.Addr(), topic: "orders"}
	p.produce(2000)
	target := "file://" + t.TempDir()
	file := filepath.Join(t.TempDir(), "jobs.yaml")
	writeConfig(t, file, fmt.Sprintf("bootstrap: %s\njobs:\n", b.Addr())+jobYAML("orders", "orders", target, "    schedule: '@hourly'\n"))
	s := serve(t, file)
	cli := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(testbroker.Binary(t), append(args, "--server", s.addr)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tributary %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	t.Log(cli("jobs", "trigger", "orders"))
	eventually(t, 60*time.Second, "the triggered run", func() bool { return countOutcome(history(t, target, "orders"), jobs.Succeeded) == 1 })
	p.produce(500)

	runs := cli("jobs", "runs", "orders")
	t.Logf("jobs runs:\n%s", runs)
	if !strings.Contains(runs, "succeeded") || !strings.Contains(runs, "manual") || !strings.Contains(runs, "orders (2 partitions, 2000 offsets)") {
		t.Errorf("jobs runs does not show the run")
	}
	list := cli("jobs", "list")
	t.Logf("jobs list:\n%s", list)
	if !strings.Contains(list, "orders") || !strings.Contains(list, "@hourly") || !strings.Contains(list, "orders=0") {
		t.Errorf("jobs list does not show the job and its lag")
	}
	js := cli("jobs", "runs", "orders", "-o", "json")
	if !strings.Contains(js, `"outcome": "succeeded"`) || !strings.Contains(js, `"phaseSeconds"`) || !strings.Contains(js, `"ranges"`) {
		t.Errorf("jobs runs -o json:\n%s", js)
	}

	t.Log(cli("jobs", "pause", "orders"))
	v, err := s.client.Job(context.Background(), "orders")
	if err != nil || v.Paused != "api" || v.Next != nil {
		t.Errorf("after pause: %+v %v", v, err)
	}
	fs := openTarget(t, target)
	if _, err := fs.Stat("_tributary/jobs/orders/paused"); err != nil {
		t.Errorf("the pause is not kept in the target: %v", err)
	}
	fs.Close()
	t.Log(cli("jobs", "resume", "orders"))
	if v, _ := s.client.Job(context.Background(), "orders"); v.Paused != "" || v.Next == nil {
		t.Errorf("after resume: %+v", v)
	}
	if out, err := exec.Command(testbroker.Binary(t), "jobs", "trigger", "nope", "--server", s.addr).CombinedOutput(); err == nil || !strings.Contains(string(out), "no such job") {
		t.Errorf("trigger of an unknown job: %v %s", err, out)
	}

	resp, err := http.Get("http://" + s.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`tributary_jobs_runs_total{job="orders",outcome="succeeded"} 1`,
		`tributary_jobs_records_total{job="orders"} 2000`,
		`tributary_jobs_lag_records{job="orders",topic="orders"} 0`,
		`tributary_jobs_phase_duration_seconds_count{job="orders",phase="commit"} 1`,
		`tributary_jobs_attempt_failures_total`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if resp, err := http.Get("http://" + s.addr + "/healthz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("/healthz: %v", err)
	}
}
