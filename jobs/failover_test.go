package jobs_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testhdfs"
	"github.com/tributary-io/tributary/jobs"
)

// Issue 8, test 4: two schedulers serve the same jobs file and target.
// Never do two runs of the job overlap: the history's attempts do not, and
// a watcher reading the lease directory throughout never sees two live
// generations. When the scheduler holding the job dies (SIGKILL in the
// middle of a run), the other takes the job over once the lease expires and
// resumes the dead run's plan. Every offset is in the lake once.
func TestTwoSchedulersOneRunAtATime(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "scrolls", 3)
	p := &producer{t: t, addr: b.Addr(), topic: "scrolls"}
	p.produce(3000)
	target := hdfsTarget(t)
	file := filepath.Join(t.TempDir(), "jobs.yaml")
	writeConfig(t, file, fmt.Sprintf("bootstrap: %s\nlease_ttl: 5s\nmax_clock_skew: 1s\njobs:\n", b.Addr())+
		strings.Replace(jobYAML("scrolls", "scrolls", target, "    every: 2s\n    parallelism: 1\n"), "max_records_per_unit: 1500", "max_records_per_unit: 400", 1))

	// The lease directory, watched: at most one generation that is neither
	// released nor expired, ever.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var watchErr error
	seen := map[int64]jobs.LeaseInfo{} // each generation as last read
	wg.Go(func() {
		fs, err := fsys.Open(target, fsys.Options{User: testhdfs.DefaultUser})
		if err != nil {
			watchErr = err
			return
		}
		defer fs.Close()
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			ents, err := fs.ReadDir("_tributary/jobs/scrolls/lease")
			if err != nil {
				continue
			}
			live := 0
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), ".") {
					// A rewrite in progress (WriteFileAtomic's temporary
					// copy), not a generation.
					continue
				}
				b, err := fs.ReadFile("_tributary/jobs/scrolls/lease/" + e.Name())
				if err != nil {
					continue
				}
				var info jobs.LeaseInfo
				if jsonUnmarshal(b, &info) != nil {
					continue
				}
				seen[info.Generation] = info
				if !info.Released && time.Now().Before(info.Expires) {
					live++
				}
			}
			if live > 1 {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				watchErr = fmt.Errorf("%d live lease generations at once: %v", live, names)
				return
			}
		}
	})

	a := serve(t, file, crashEnv+"=unit-done#5")
	c := serve(t, file)
	owners := map[string]bool{}
	last := time.Now()
	eventually(t, 120*time.Second, "the first scheduler to die in a run", func() bool {
		if a.running() && time.Since(last) > time.Second {
			p.produce(300)
			last = time.Now()
		}
		return !a.running()
	})
	died := time.Now()
	for _, r := range history(t, target, "scrolls") {
		for _, at := range r.Attempts {
			owners[at.Owner] = true
		}
	}
	p.produce(500)
	eventually(t, 90*time.Second, "the survivor to resume the dead run and load everything", func() bool {
		recs := history(t, target, "scrolls")
		last := recs[len(recs)-1]
		var lag int64
		for _, n := range last.Lag {
			lag += n
		}
		return countOutcome(recs, jobs.Interrupted) == 1 && last.Outcome == jobs.Succeeded && last.Lag != nil && lag == 0 && last.Started.After(died)
	})
	c.stop()
	close(stop)
	wg.Wait()
	if watchErr != nil {
		t.Fatal(watchErr)
	}
	recs := history(t, target, "scrolls")
	checkNoOverlap(t, recs)
	checkContiguous(t, recs)
	var interrupted *jobs.Record
	for _, r := range recs {
		if r.Outcome == jobs.Interrupted {
			interrupted = r
		}
	}
	resumedBy, takeover := "", int64(0)
	for _, r := range recs {
		for _, at := range r.Attempts {
			if at.Resumed != "" && r.Started.After(interrupted.Started) {
				resumedBy, takeover = at.Owner, at.Lease
			}
		}
	}
	// The takeover came after the dead holder's lease expired: judged by the
	// lease files both schedulers wrote, not by when this test noticed the
	// death, which a loaded machine delays.
	if dead, taker := seen[takeover-1], seen[takeover]; dead.Generation == 0 || taker.Generation == 0 {
		t.Errorf("lease generations %d and %d not seen: %v", takeover-1, takeover, seen)
	} else if dead.Run != interrupted.ID || taker.Acquired.Before(dead.Expires.Add(time.Second)) {
		t.Errorf("generation %d (run %s) taken over at %v, before its expiry %v plus the 1s skew; the interrupted run was %s",
			dead.Generation, dead.Run, taker.Acquired, dead.Expires, interrupted.ID)
	}
	if resumedBy == "" || resumedBy == interrupted.Attempts[len(interrupted.Attempts)-1].Owner {
		t.Errorf("the interrupted run %s was not resumed by the other scheduler (%q)", interrupted.ID, resumedBy)
	}
	checkExactlyOnce(t, readLake(t, target, "scrolls"), testbroker.HighWatermarks(t, b.Addr(), "scrolls"), p.next)
	t.Logf("%d runs by %d schedulers before the death; %d in all", len(recs), len(owners), len(recs))
	if len(owners) < 2 {
		t.Logf("only one scheduler ran the job before the death (the other found it busy each time)")
	}
}
