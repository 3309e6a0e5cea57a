package txn_test

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testcluster"
	"github.com/tributary-io/tributary/internal/txncheck"
)

// TestTransactionsCheckerFaults: the Jepsen-style transactional checker
// (internal/txncheck) on a 3-node cluster. Several producers commit and
// abort transactions over four partitions while a partition leader and a
// transaction coordinator are killed with kill -9 and a node is paused
// (SIGSTOP, then SIGCONT); a read_committed consumer reads along. Then
// every partition's LSO reaches its high watermark and the topic read
// read_committed must show no lost committed write, no aborted read, no
// duplicate, no torn transaction, and the live consumer (whose reads are
// checked with the final read) no record past the LSO and none before its
// commit was requested. The same history checked against a
// read_uncommitted read must find aborted reads, and so must a live
// read_uncommitted consumer: the checker can fail.
//
// make test: 6 producers, one round of the three faults (~15 s of
// workload). make test-long (TRIBUTARY_TEST_LONG): 10 producers, the
// faults over and over for 2 minutes.
func TestTransactionsCheckerFaults(t *testing.T) {
	t.Parallel()
	long := os.Getenv("TRIBUTARY_TEST_LONG") != ""
	producers, run := 6, 12*time.Second
	if long {
		producers, run = 10, 2*time.Minute
	}
	c := testcluster.Start(t, 3, "transaction.state.log.replication.factor=3", "transaction.state.log.num.partitions=5",
		"transaction.state.log.min.isr=2", "offsets.topic.replication.factor=3",
		"transaction.abort.timed.out.transaction.cleanup.interval.ms=200", "group.initial.rebalance.delay.ms=0")
	const topic, partitions = "checked", 4
	ctx, cancel := context.WithTimeout(context.Background(), run+3*time.Minute)
	defer cancel()
	resp, err := c.Admin().CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	c.Leaders(topic, 20*time.Second)
	w := &txncheck.Workload{
		Seeds: strings.Split(c.Bootstrap(), ","), Topic: topic, Partitions: partitions,
		Producers: producers, Records: 4, AbortRatio: 0.3, TxnTimeout: 8 * time.Second,
		Logf: t.Logf, UncommittedControl: true,
	}
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()

	admin, err := kgo.NewClient(seeds(c.Bootstrap()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	coordinator := func(id string) int32 {
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorType, fc.CoordinatorKey = 1, id
		for {
			fr, err := fc.RequestWith(ctx, admin)
			if err == nil && fr.ErrorCode == 0 {
				return fr.NodeID
			}
			if ctx.Err() != nil {
				t.Fatalf("FindCoordinator %s: %v", id, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	sleep := func(d time.Duration) {
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}
	end := time.Now().Add(run)
	var lastFault time.Time
	faults := 0
	for round := 0; round == 0 || time.Now().Before(end); round++ {
		sleep(3 * time.Second)
		leader := c.Leaders(topic, 20*time.Second)[int32(round%partitions)]
		t.Logf("round %d: kill -9 node %d, leader of partition %d", round, leader, round%partitions)
		c.Node(leader).Kill()
		sleep(2 * time.Second)
		c.Node(leader).Restart()

		sleep(3 * time.Second)
		coord := coordinator("txncheck-0")
		t.Logf("round %d: kill -9 node %d, coordinator of txncheck-0", round, coord)
		c.Node(coord).Kill()
		sleep(2 * time.Second)
		c.Node(coord).Restart()

		sleep(3 * time.Second)
		paused := c.Leaders(topic, 20*time.Second)[int32((round+1)%partitions)]
		t.Logf("round %d: pause node %d (SIGSTOP) for 3 s", round, paused)
		c.Node(paused).Signal(syscall.SIGSTOP)
		sleep(3 * time.Second)
		c.Node(paused).Signal(syscall.SIGCONT)
		lastFault, faults = time.Now(), faults+3
	}
	sleep(time.Until(end))
	// Liveness: every producer commits again after the last fault (a
	// coordinator left unloaded, or producers fenced over and over, would
	// leave the checker almost nothing to check).
	recovered := func() []int {
		var behind []int
		for i := range producers {
			ok := false
			for _, tx := range w.History() {
				if tx.Producer == i && tx.Outcome == txncheck.Committed && tx.End.After(lastFault) {
					ok = true
					break
				}
			}
			if !ok {
				behind = append(behind, i)
			}
		}
		return behind
	}
	for wait := time.Now().Add(30 * time.Second); ; {
		behind := recovered()
		if len(behind) == 0 {
			break
		}
		if time.Now().After(wait) {
			stop()
			<-done
			t.Fatalf("producers %v committed nothing in the 30 s after the last fault", behind)
		}
		sleep(200 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("workload: %v", err)
	}

	// Every transaction ends (the coordinator aborts those of replaced
	// clients within their timeout): the LSO reaches the high watermark.
	deadline := time.Now().Add(60 * time.Second)
	for endOffsets(t, admin, topic, partitions, true) != endOffsets(t, admin, topic, partitions, false) {
		if time.Now().After(deadline) {
			t.Fatal("the LSO stays below the high watermark after the workload")
		}
		time.Sleep(200 * time.Millisecond)
	}
	history := w.History()
	committed, aborted, unknown := 0, 0, 0
	for _, tx := range history {
		switch tx.Outcome {
		case txncheck.Committed:
			committed += len(tx.Values)
		case txncheck.Aborted:
			aborted++
		default:
			unknown++
		}
	}
	t.Logf("%d transactions: %d committed values, %d aborted, %d unknown; the live consumer read %d records",
		len(history), committed, aborted, unknown, w.LiveReads())
	if committed == 0 || aborted == 0 {
		t.Fatalf("the workload committed %d values and aborted %d transactions: nothing to check", committed, aborted)
	}
	// Only a commit sent whose answer was lost is unknown: a fault can
	// leave at most one in doubt per producer. More means EndTxn fails
	// outside the faults, and unknown transactions are barely checked
	// (read whole or not at all both pass).
	if unknown > producers*faults {
		t.Fatalf("%d transactions of unknown outcome, more than one per producer per fault (%d producers, %d faults)", unknown, producers, faults)
	}
	res := w.Check(consumeReads(t, c.Bootstrap(), topic, true, committed))
	if !res.Ok() {
		t.Fatalf("read_committed under faults: %v", res)
	}
	t.Logf("read_committed under faults: %v", res)
	// The checker can fail: the same history read read_uncommitted has
	// the aborted transactions' records.
	if un := txncheck.Check(history, consumeReads(t, c.Bootstrap(), topic, false, committed)); un.AbortedReads == 0 {
		t.Fatalf("read_uncommitted should show aborted reads to the checker: %v", un)
	} else {
		t.Logf("read_uncommitted (the checker's negative control): %d aborted reads", un.AbortedReads)
	}
	// The live checks can fail too: a read_uncommitted consumer reading
	// along shows aborted reads, and reads before their commit was
	// requested, to the same live check.
	if ctl := w.CheckControl(); ctl.AbortedReads == 0 || ctl.PastLSO == 0 {
		t.Fatalf("the live read_uncommitted control should show aborted reads and reads before the commit was requested: %v", ctl)
	} else {
		t.Logf("live read_uncommitted control: %d aborted reads, %d uncommitted reads", ctl.AbortedReads, ctl.PastLSO)
	}
}
