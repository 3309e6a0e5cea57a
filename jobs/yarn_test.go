package jobs_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testyarn"
	"github.com/tributary-io/tributary/jobs"
)

// Issue 28: a load as a YARN application on a real ResourceManager and
// NodeManager. 20,000 events over 4 partitions (16 units) run in 2 worker
// containers of one DistributedShell application; one worker process is
// killed with SIGKILL while it runs. Its NodeManager relaunches the
// container in place, the worker redoes its unfinished unit and skips the
// done ones: the application succeeds in its one attempt, every offset is
// in the lake once (read back with pyarrow), and the run's history names the
// application and its containers.
func TestYARNExecutor(t *testing.T) {
	t.Parallel()
	y := testyarn.Get(t)
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "clicks", 4)
	p := &producer{t: t, addr: b.Addr(), topic: "clicks"}
	p.produce(20000)
	target := hdfsTarget(t)
	file := filepath.Join(t.TempDir(), "jobs.yaml")
	writeConfig(t, file, fmt.Sprintf("bootstrap: %s\njobs:\n", b.Addr())+
		jobYAML("clicks", "clicks", target, fmt.Sprintf(`    retries: 0
    parallelism: 2
    executor: yarn
    yarn:
      resource_manager: %s
      am_jar: %s
      classpath: %s
      container_memory_mb: 256
      am_memory_mb: 256
`, y.RM, y.DShellJar, y.AppClassPath)))
	s := serve(t, file)
	start := time.Now()
	if _, err := s.client.Trigger(context.Background(), "clicks"); err != nil {
		t.Fatal(err)
	}

	// Kill one worker once it has run for a moment: mid-unit, most likely
	// (a unit is 1,500 records).
	killed := 0
	eventually(t, 120*time.Second, "a worker container's process", func() bool {
		for _, pid := range workerPIDs(t, y.Dir) {
			time.Sleep(300 * time.Millisecond)
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed = pid
				return true
			}
		}
		return false
	})
	t.Logf("killed worker pid %d %.1fs after the trigger", killed, time.Since(start).Seconds())

	var rec *jobs.Record
	eventually(t, 180*time.Second, "the run's end", func() bool {
		for _, r := range history(t, target, "clicks") {
			if r.Outcome != jobs.Running && r.Outcome != jobs.Retrying {
				rec = r
				return true
			}
		}
		return false
	})
	if rec.Outcome != jobs.Succeeded {
		t.Fatalf("run %s: %s: %s\n%s", rec.ID, rec.Outcome, rec.Error, lastLines(s.Log(), 30))
	}
	t.Logf("run took %.1fs; phases %v", rec.Ended.Sub(rec.Started).Seconds(), rec.Phases)
	checkExactlyOnce(t, readLake(t, target, "clicks"), testbroker.HighWatermarks(t, b.Addr(), "clicks"), p.next)
	if len(rec.Attempts) != 1 || len(rec.Attempts[0].Applications) != 1 {
		t.Fatalf("want one attempt with one YARN application: %+v", rec.Attempts)
	}
	app := rec.Attempts[0].Applications[0]
	if !strings.HasPrefix(app.ID, "application_") || app.State != "FINISHED" || app.FinalStatus != "SUCCEEDED" || app.Containers != 2 {
		t.Errorf("the history's application: %+v", app)
	}
	if len(app.ContainerIDs) < 2 || app.FirstContainer.IsZero() {
		t.Errorf("the history names containers %v, first worker running at %v; want the AM's and the workers'", app.ContainerIDs, app.FirstContainer)
	}
	t.Logf("application %s: plan saved to first worker container running %v (uploads and submission %v, submitted to running %v); containers %v",
		app.ID, app.FirstContainer.Sub(app.Started), app.Submitted.Sub(app.Started), app.FirstContainer.Sub(app.Submitted), app.ContainerIDs)
	// Not a run of the missing units in the scheduler: the workers did all.
	if strings.Contains(s.Log(), "running the missing units here") {
		t.Errorf("the scheduler ran units itself: the containers left some undone")
	}
}

// TestYARNResourceManagerDown: an RM that does not answer fails the run at
// once with its address in the error.
func TestYARNResourceManagerDown(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "downs", 1)
	p := &producer{t: t, addr: b.Addr(), topic: "downs"}
	p.produce(10)
	target := "file://" + t.TempDir()
	file := filepath.Join(t.TempDir(), "jobs.yaml")
	writeConfig(t, file, fmt.Sprintf("bootstrap: %s\njobs:\n", b.Addr())+
		jobYAML("downs", "downs", target, `    retries: 0
    executor: yarn
    yarn:
      resource_manager: http://127.0.0.1:1
      am_jar: /nonexistent/dshell.jar
`))
	s := serve(t, file)
	if _, err := s.client.Trigger(context.Background(), "downs"); err != nil {
		t.Fatal(err)
	}
	var rec *jobs.Record
	eventually(t, 60*time.Second, "the run's end", func() bool {
		for _, r := range history(t, target, "downs") {
			if r.Outcome != jobs.Running && r.Outcome != jobs.Retrying {
				rec = r
				return true
			}
		}
		return false
	})
	if rec.Outcome != jobs.Failed || !strings.Contains(rec.Error, "the ResourceManager at http://127.0.0.1:1 does not answer") {
		t.Errorf("run: %s: %q", rec.Outcome, rec.Error)
	}
}

// workerPIDs are the `tributary load worker` processes that run in
// containers of the YARN instance at dir.
func workerPIDs(t *testing.T, dir string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil {
			continue
		}
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if err != nil || !strings.HasPrefix(cwd, filepath.Join(dir, "local")+"/") {
			continue
		}
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if strings.Contains(string(cmd), "load\x00worker") {
			out = append(out, pid)
		}
	}
	return out
}

// The yarn block: defaults filled in, a missing block or address refused
// with the field named.
func TestYARNConfig(t *testing.T) {
	cfg := parse(t, `
defaults:
  target: hdfs://nn:8020/lake
jobs:
  - name: ok
    topics: [a]
    parallelism: 6
    executor: yarn
    yarn: {resource_manager: "http://rm:8088", am_jar: /opt/dshell.jar, queue: etl}
  - name: noblock
    topics: [a]
    executor: yarn
  - name: noaddr
    topics: [a]
    executor: yarn
    yarn: {resource_manager: "rm:8088", am_jar: /opt/dshell.jar}
`)
	if len(cfg.Jobs) != 1 {
		t.Fatalf("jobs %d, problems %v", len(cfg.Jobs), cfg.Problems)
	}
	y := cfg.Jobs[0].YARN
	if y.MaxContainers != 6 || y.ContainerMemoryMB != jobs.DefaultYARNContainerMemoryMB || y.ContainerVCores != 1 ||
		y.AMMemoryMB != jobs.DefaultYARNAMMemoryMB || y.ContainerRetries != jobs.DefaultYARNContainerRetries || y.Queue != "etl" {
		t.Errorf("yarn block after defaults: %+v", y)
	}
	probs := fmt.Sprint(cfg.Problems)
	if !strings.Contains(probs, "needs a yarn: block") || !strings.Contains(probs, `yarn.resource_manager "rm:8088"`) {
		t.Errorf("problems: %s", probs)
	}
}

// Killing the whole YARN application fails the attempt; the retry resumes
// the same plan (a new application) and the lake ends exactly once. A long
// test (TRIBUTARY_TEST_LONG): it costs a second application.
func TestYARNApplicationKilled(t *testing.T) {
	if os.Getenv("TRIBUTARY_TEST_LONG") == "" {
		t.Skip("long test: TRIBUTARY_TEST_LONG=1 (make test-long)")
	}
	t.Parallel()
	y := testyarn.Get(t)
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "kills", 2)
	p := &producer{t: t, addr: b.Addr(), topic: "kills"}
	p.produce(6000)
	target := hdfsTarget(t)
	file := filepath.Join(t.TempDir(), "jobs.yaml")
	writeConfig(t, file, fmt.Sprintf("bootstrap: %s\njobs:\n", b.Addr())+
		jobYAML("kills", "kills", target, fmt.Sprintf(`    retries: 2
    backoff: 1s
    parallelism: 2
    executor: yarn
    yarn:
      resource_manager: %s
      am_jar: %s
      classpath: %s
      container_memory_mb: 256
      am_memory_mb: 256
`, y.RM, y.DShellJar, y.AppClassPath)))
	s := serve(t, file)
	if _, err := s.client.Trigger(context.Background(), "kills"); err != nil {
		t.Fatal(err)
	}
	var killed string
	eventually(t, 180*time.Second, "a running application to kill", func() bool {
		for _, r := range history(t, target, "kills") {
			for _, a := range r.Attempts {
				for _, app := range a.Applications {
					if app.State == "RUNNING" && killed == "" {
						req, _ := http.NewRequest(http.MethodPut, y.RM+"/ws/v1/cluster/apps/"+app.ID+"/state?user.name=tributary",
							strings.NewReader(`{"state":"KILLED"}`))
						req.Header.Set("Content-Type", "application/json")
						resp, err := http.DefaultClient.Do(req)
						if err != nil {
							t.Fatal(err)
						}
						resp.Body.Close()
						killed = app.ID
						return true
					}
				}
			}
		}
		return false
	})
	var rec *jobs.Record
	eventually(t, 240*time.Second, "the run's end", func() bool {
		for _, r := range history(t, target, "kills") {
			if r.Outcome != jobs.Running && r.Outcome != jobs.Retrying {
				rec = r
				return true
			}
		}
		return false
	})
	if rec.Outcome != jobs.Succeeded || len(rec.Attempts) < 2 {
		t.Fatalf("run %s: %s after %d attempts: %s", rec.ID, rec.Outcome, len(rec.Attempts), rec.Error)
	}
	first, last := rec.Attempts[0], rec.Attempts[len(rec.Attempts)-1]
	if len(first.Applications) != 1 || first.Applications[0].ID != killed || first.Applications[0].State != "KILLED" {
		t.Errorf("the first attempt's application: %+v (killed %s)", first.Applications, killed)
	}
	if last.Resumed == "" || len(last.Applications) != 1 || last.Applications[0].ID == killed {
		t.Errorf("the last attempt resumed %q with applications %+v", last.Resumed, last.Applications)
	}
	checkExactlyOnce(t, readLake(t, target, "kills"), testbroker.HighWatermarks(t, b.Addr(), "kills"), p.next)
}
