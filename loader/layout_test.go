package loader

import (
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
)

// Runs of a job must sort in the order they were planned, or OpenPlan would
// look at the wrong one: two plans in the same second (the clock even
// going back) still sort in order.
func TestRunIDsSortInPlanOrder(t *testing.T) {
	fs, err := fsys.Open(t.TempDir(), fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := &Loader{FS: fs}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	var prev string
	for i := range 20 {
		at := now
		if i%5 == 4 {
			at = now.Add(-time.Hour) // a scheduler with a clock behind
		}
		run, _, err := l.nextRunID("job-1", at)
		if err != nil {
			t.Fatal(err)
		}
		if run <= prev {
			t.Fatalf("run %d %s sorts before the previous %s", i, run, prev)
		}
		if job, ok := runJob(run); !ok || job != "job-1" {
			t.Fatalf("runJob(%s) = %q %v", run, job, ok)
		}
		if err := fs.WriteFileAtomic(planPath(run), []byte("{}")); err != nil {
			t.Fatal(err)
		}
		prev = run
	}

	// A run named in the older layout, whole seconds, still goes first.
	old := "job-1-20270101T000000Z-abcdef"
	if err := fs.WriteFileAtomic(planPath(old), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	run, _, err := l.nextRunID("job-1", now)
	if err != nil || run <= old {
		t.Fatalf("after %s: %s %v", old, run, err)
	}
	// A name with no time in it is refused, not spun on.
	if err := fs.WriteFileAtomic(planPath("job-1-zzz-abcdef"), []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := l.nextRunID("job-1", now); err == nil || !strings.Contains(err.Error(), "job-1-zzz-abcdef") {
		t.Fatalf("a plan named job-1-zzz-abcdef: %v", err)
	}
}
