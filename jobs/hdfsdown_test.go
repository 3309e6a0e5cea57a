package jobs_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testhdfs"
	"github.com/tributary-io/tributary/jobs"
)

// Issue 8, test 2: HDFS (NameNode and DataNode) is stopped before a
// scheduled run. The run fails, is retried with backoff, and succeeds once
// HDFS is back; its history, kept in memory while HDFS was away, shows the
// failed attempts. Nothing is duplicated.
func TestHDFSDownForOneRun(t *testing.T) {
	h := testhdfs.StartPrivate(t)
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "pings", 2)
	p := &producer{t: t, addr: b.Addr(), topic: "pings"}
	p.produce(2000)
	target := "hdfs://" + h.NameNode + "/tmp/lake"
	file := filepath.Join(t.TempDir(), "jobs.yaml")
	writeConfig(t, file, fmt.Sprintf("bootstrap: %s\nlease_ttl: 6s\njobs:\n", b.Addr())+
		jobYAML("pings", "pings", target, "    every: 3s\n    retries: 30\n    backoff: 1s\n    max_backoff: 2s\n"))
	s := serve(t, file)
	eventually(t, 60*time.Second, "a first run", func() bool {
		return countOutcome(history(t, target, "pings"), jobs.Succeeded) >= 1
	})

	h.Stop()
	p.produce(1000)
	eventually(t, 60*time.Second, "a run failing and waiting to retry", func() bool {
		v, err := s.client.Job(context.Background(), "pings")
		return err == nil && v.State == "retrying" && v.Current != nil && len(v.Current.Attempts) >= 2
	})
	h.Start()
	var retried *jobs.Record
	eventually(t, 120*time.Second, "the retried run to succeed", func() bool {
		for _, r := range history(t, target, "pings") {
			if r.Outcome == jobs.Succeeded && len(r.Attempts) >= 2 {
				retried = r
				return true
			}
		}
		return false
	})
	s.stop()
	if retried.Attempts[0].Error == "" || retried.Attempts[len(retried.Attempts)-1].Error != "" || retried.Records == 0 {
		t.Errorf("the retried run: %+v", retried)
	}
	for i := 1; i < len(retried.Attempts); i++ {
		if gap := retried.Attempts[i].Started.Sub(retried.Attempts[i-1].Ended); gap < 900*time.Millisecond {
			t.Errorf("attempt %d started %v after the previous one failed: no backoff", i+1, gap)
		}
	}
	t.Logf("the run took %d attempts; the first failed with: %s", len(retried.Attempts), retried.Attempts[0].Error)
	recs := history(t, target, "pings")
	checkContiguous(t, recs)
	checkNoOverlap(t, recs)
	checkExactlyOnce(t, readLake(t, target, "pings"), testbroker.HighWatermarks(t, b.Addr(), "pings"), p.next)
}
