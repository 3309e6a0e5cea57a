package jobs_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/jobs"
)

// Issue 8, test 6: a bad edit of the jobs file (an unknown field, a bad
// cron expression, then a file that is not YAML) is rejected with a message
// naming the job and field, and the running jobs keep their schedules.
func TestBadConfigEdit(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "clicks", 2)
	(&producer{t: t, addr: b.Addr(), topic: "clicks"}).produce(500)
	target := "file://" + t.TempDir()
	file := filepath.Join(t.TempDir(), "jobs.yaml")
	head := fmt.Sprintf("bootstrap: %s\nlease_ttl: 6s\njobs:\n", b.Addr())
	good := head + jobYAML("fast", "clicks", target, "    every: 2s\n") +
		jobYAML("slow", "clicks", "file://"+t.TempDir(), "    every: 1h\n")
	writeConfig(t, file, good)
	s := serve(t, file)
	ctx := context.Background()

	runs := func() int { return countOutcome(history(t, target, "fast"), jobs.Succeeded) }
	eventually(t, 60*time.Second, "a first run of job fast", func() bool { return runs() >= 1 })
	slowNext := nextRun(t, s, "slow")

	bad := head + strings.Replace(jobYAML("fast", "clicks", target, "    every: 2s\n"), "time_field:", "time_feild:", 1) +
		jobYAML("slow", "clicks", "file://"+t.TempDir(), "    schedule: '0 25 * * *'\n")
	writeConfig(t, file, bad)
	var o *jobs.Overview
	eventually(t, 60*time.Second, "the bad edit reported", func() bool {
		var err error
		o, err = s.client.Overview(ctx)
		return err == nil && len(o.Problems) == 2
	})
	for _, want := range []string{`job "fast": time_feild: unknown field (did you mean "time_field"?)`, `job "slow": schedule: "0 25 * * *"`} {
		found := false
		for _, p := range o.Problems {
			found = found || strings.Contains(p.Error(), want)
		}
		if !found {
			t.Errorf("no problem says %q: %v", want, o.Problems)
		}
	}
	if !strings.Contains(s.Log(), `time_feild: unknown field`) {
		t.Error("the log does not report the bad field")
	}
	for _, j := range o.Jobs {
		if j.Problem == nil || (j.Name == "fast" && j.Schedule != "every 2s") || (j.Name == "slow" && j.Schedule != "every 1h0m0s") {
			t.Errorf("job %s after the bad edit: schedule %q, problem %v", j.Name, j.Schedule, j.Problem)
		}
	}
	if got := nextRun(t, s, "slow"); !got.Equal(slowNext) {
		t.Errorf("job slow's next run moved from %s to %s", slowNext, got)
	}
	before := runs()
	eventually(t, 60*time.Second, "job fast still running every 2s", func() bool { return runs() >= before+2 })

	// Not YAML at all: nothing changes.
	writeConfig(t, file, good+"  - name: [\n")
	eventually(t, 60*time.Second, "the broken file reported", func() bool {
		o, _ = s.client.Overview(ctx)
		return o != nil && o.FileErr != ""
	})
	before = runs()
	eventually(t, 60*time.Second, "job fast still running", func() bool { return runs() >= before+1 })
	if got := nextRun(t, s, "slow"); !got.Equal(slowNext) {
		t.Errorf("job slow's next run moved from %s to %s", slowNext, got)
	}

	// Fixed: the problems are gone, and a real change applies.
	writeConfig(t, file, strings.Replace(good, "every: 1h", "every: 2h", 1))
	eventually(t, 60*time.Second, "the fixed file applied", func() bool {
		o, _ = s.client.Overview(ctx)
		return o != nil && o.FileErr == "" && len(o.Problems) == 0 && o.Jobs[1].Schedule == "every 2h0m0s"
	})
}

func nextRun(t *testing.T, s *server, job string) time.Time {
	t.Helper()
	v, err := s.client.Job(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	if v.Next == nil {
		t.Fatalf("job %s has no next run: %+v", job, v)
	}
	return *v.Next
}
