package cluster_test

import (
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testcluster"
)

// BenchmarkFailoverResume measures how soon produce resumes after the
// leader of a hot partition is killed with -9, on 3 brokers with
// replication factor 3 and a 1,000 records/s idempotent acks=all
// producer. The target is the session timeout (3 s) plus 5 s; the tests
// only log it (TestFaultLiveness), since a loaded machine can exceed any
// bound while the cluster is correct. Each op is one kill; the killed
// broker comes back and rejoins the ISR before the next.
//
//	go test -run '^$' -bench FailoverResume -benchtime 5x ./broker/cluster/
func BenchmarkFailoverResume(b *testing.B) {
	c, _ := startQueue(b, 1)
	w := testcluster.StartWorkload(b, c.Bootstrap(), testcluster.WorkloadConfig{Topic: "q", Rate: 1000, Key: "hot"})
	var total, worst time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		time.Sleep(2 * time.Second) // acknowledgements flowing before the kill
		l := leaderOf(b, c, 0)
		b.StartTimer()
		c.Node(l).Kill()
		killed := time.Now()
		d, ok := w.AwaitAck(killed, testcluster.HangBound)
		b.StopTimer()
		if !ok {
			dumpLogs(b, c)
			b.Fatalf("produce did not resume within %v of killing leader %d", testcluster.HangBound, l)
		}
		total, worst = total+d, max(worst, d)
		c.Node(l).Restart()
		waitISR(b, c, "q", 3)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "resume-ms")
	b.ReportMetric(float64(worst.Milliseconds()), "max-resume-ms")
	score(b, c, minAcked, w.Stop())
}
