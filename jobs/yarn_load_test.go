package jobs_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testhdfs"
	"github.com/tributary-io/tributary/internal/testyarn"
	"github.com/tributary-io/tributary/jobs"
)

// Issue 28's load: 2,000,000 events over 12 partitions as one YARN
// application with 4 worker containers; every offset is in the lake once
// (pyarrow), and the run's history names the application and its
// containers. Full size under TRIBUTARY_TEST_LONG (make test-long, the
// hadoop part); `make test` loads 24,000 events the same way (the
// containers run the race-built binary, about 2,000 records a second each
// here: the full size takes minutes).
func TestYARNLoadTwelvePartitions(t *testing.T) {
	t.Parallel()
	events := 24000
	if os.Getenv("TRIBUTARY_TEST_LONG") != "" {
		events = 2000000
	}
	y := testyarn.Get(t)
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "twelve", 12)
	p := &producer{t: t, addr: b.Addr(), topic: "twelve"}
	for p.next < events {
		p.produce(min(200000, events-p.next))
	}
	target := hdfsTarget(t)
	file := filepath.Join(t.TempDir(), "jobs.yaml")
	// Two units a partition: 24 units over 4 containers.
	writeConfig(t, file, fmt.Sprintf(`bootstrap: %s
jobs:
  - name: twelve
    topics: [twelve]
    target: %s
    schema: %s
    time_field: timestamp
    max_records_per_unit: %d
    retries: 0
    parallelism: 4
    timeout: 1h
    executor: yarn
    yarn:
      resource_manager: %s
      am_jar: %s
      classpath: %s
      container_memory_mb: 256
      am_memory_mb: 256
`, b.Addr(), target, activitySchema, events/24+1, y.RM, y.DShellJar, y.AppClassPath))
	s := serve(t, file)
	if _, err := s.client.Trigger(context.Background(), "twelve"); err != nil {
		t.Fatal(err)
	}
	var rec *jobs.Record
	eventually(t, time.Duration(120+events/1000)*time.Second, "the run's end", func() bool {
		for _, r := range history(t, target, "twelve") {
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
	took := rec.Ended.Sub(rec.Started)
	checkExactlyOnce(t, readLake(t, target, "twelve"), testbroker.HighWatermarks(t, b.Addr(), "twelve"), p.next)
	if len(rec.Attempts) != 1 || len(rec.Attempts[0].Applications) != 1 {
		t.Fatalf("want one attempt with one YARN application: %+v", rec.Attempts)
	}
	app := rec.Attempts[0].Applications[0]
	if app.State != "FINISHED" || app.FinalStatus != "SUCCEEDED" || app.Containers != 4 {
		t.Errorf("the history's application: %+v", app)
	}
	// The AM's container and the 4 workers'.
	if len(app.ContainerIDs) < 5 || app.Logs == "" || len(app.ContainerLogs) != len(app.ContainerIDs) ||
		!strings.Contains(app.ContainerLogs[len(app.ContainerLogs)-1], "/containerlogs/container_") {
		t.Errorf("the history names containers %v, logs %q and %v; want the AM's and 4 workers', each with its log URL", app.ContainerIDs, app.Logs, app.ContainerLogs)
	}
	t.Logf("%d events, 12 partitions, 4 containers: run %.1fs (%.0f events/s), phases %v; plan to first worker %v, binary reused %v; containers %v",
		events, took.Seconds(), float64(events)/took.Seconds(), rec.Phases, app.FirstContainer.Sub(app.Started), app.BinaryReused, app.ContainerIDs)
	if strings.Contains(s.Log(), "running the missing units here") {
		t.Errorf("the scheduler ran units itself: the containers left some undone")
	}
}

// `tributary load run --executor yarn`: the units run as a YARN
// application with the job's settings, the command shows the application
// while it runs, and the lake is exactly once. A second run on the same
// target starts without uploading the binary again.
func TestYARNLoadRunCommand(t *testing.T) {
	t.Parallel()
	y := testyarn.Get(t)
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "cli", 2)
	p := &producer{t: t, addr: b.Addr(), topic: "cli"}
	target := hdfsTarget(t)
	run := func() string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, testbroker.Binary(t), "load", "run", "--topics", "cli", "--target", target, "-b", b.Addr(),
			"--schema", activitySchema, "--time-field", "timestamp", "--max-records-per-unit", "1000",
			"--hdfs-user", testhdfs.DefaultUser, "--parallelism", "2", "--executor", "yarn",
			"--yarn-resource-manager", y.RM, "--yarn-am-jar", y.DShellJar, "--yarn-classpath", y.AppClassPath,
			"--yarn-container-memory-mb", "256", "--yarn-am-memory-mb", "256", "--yarn-max-containers", "2")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("load run --executor yarn: %v\n%s", err, lastLines(string(out), 30))
		}
		return string(out)
	}
	p.produce(4000)
	out := run()
	for _, want := range []string{"YARN application application_", "FINISHED/SUCCEEDED, 2 worker containers asked", "first worker running"} {
		if !strings.Contains(out, want) {
			t.Errorf("load run's output has no %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "binary already on HDFS") {
		t.Errorf("the first run on a new target says the binary was there:\n%s", out)
	}
	// Given back while the workers ran, before the AM deleted its dir.
	if !strings.Contains(out, "(binary kept on HDFS for the next run)") {
		t.Errorf("the first run did not give the binary back:\n%s", out)
	}
	p.produce(2000)
	out2 := run()
	if !strings.Contains(out2, "(binary already on HDFS)") {
		t.Errorf("the second run uploaded the binary again:\n%s", out2)
	}
	t.Logf("first run:\n%s\nsecond run:\n%s", firstLine(out, "first worker running"), firstLine(out2, "first worker running"))
	checkExactlyOnce(t, readLake(t, target, "cli"), testbroker.HighWatermarks(t, b.Addr(), "cli"), p.next)
}

func firstLine(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return strings.TrimSpace(strings.TrimPrefix(l, "\r"))
		}
	}
	return ""
}
