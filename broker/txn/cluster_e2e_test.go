package txn_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testcluster"
	"github.com/tributary-io/tributary/internal/txncheck"
)

// TestTransactionsCluster: transactions on a 3-node cluster, where the
// transaction state and the data are replicated and the markers go from
// the coordinator to the partitions' leaders on other nodes. The
// coordinator of an open transaction is killed with kill -9; the producer
// commits it through the new coordinator, which loaded the state from its
// replica; a read_committed consumer reads exactly the committed
// transactions.
func TestTransactionsCluster(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, 3, "transaction.state.log.replication.factor=3", "transaction.state.log.num.partitions=5",
		"offsets.topic.replication.factor=3", "transaction.abort.timed.out.transaction.cleanup.interval.ms=200",
		"group.initial.rebalance.delay.ms=0")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	resp, err := c.Admin().CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "ctx")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	c.Leaders("ctx", 20*time.Second)
	p := txnProducer(t, c.Bootstrap(), "ctx-1", kgo.RequiredAcks(kgo.AllISRAcks()))
	a, bv, cv := values("A-", 60), values("B-", 30), values("C-", 60)
	produceTxn(t, p, "ctx", a, true)
	produceTxn(t, p, "ctx", bv, false)

	// The coordinator of ctx-1.
	admin, err := kgo.NewClient(seeds(c.Bootstrap()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorType, fc.CoordinatorKey = 1, "ctx-1"
	fr, err := fc.RequestWith(ctx, admin)
	if err != nil || fr.ErrorCode != 0 {
		t.Fatalf("FindCoordinator: %v %v", err, kerr.ErrorForCode(fr.ErrorCode))
	}
	want := append([]string{}, a...)
	history := []txncheck.Txn{{ID: "A", Values: a, Outcome: txncheck.Committed}, {ID: "B", Values: bv, Outcome: txncheck.Aborted}}
	// make test kills once; make test-long (TRIBUTARY_TEST_LONG) kills the
	// coordinator of an open transaction eight times, committing or
	// aborting each, wherever the coordinator moved.
	rounds := 1
	if os.Getenv("TRIBUTARY_TEST_LONG") != "" {
		rounds = 8
	}
	for round := range rounds {
		fr, err := fc.RequestWith(ctx, admin)
		if err != nil || fr.ErrorCode != 0 {
			t.Fatalf("FindCoordinator: %v %v", err, kerr.ErrorForCode(fr.ErrorCode))
		}
		coord := fr.NodeID
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		vs := cv
		if round > 0 {
			vs = values(fmt.Sprintf("R%d-", round), 40)
		}
		for _, v := range vs {
			p.Produce(ctx, &kgo.Record{Topic: "ctx", Value: []byte(v)}, nil)
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		commit := round%3 != 2
		t.Logf("round %d: killing the coordinator, node %d, with the transaction open; then commit=%v", round, coord, commit)
		c.Node(coord).Kill()
		// franz-go keeps sending to the coordinator it knows until it is
		// told otherwise; a dead one's refused connections end
		// EndTransaction with a dial error, which an application retries.
		err = p.EndTransaction(ctx, kgo.TransactionEndTry(commit))
		for i := 0; err != nil && strings.Contains(err.Error(), "unable to dial") && i < 20; i++ {
			time.Sleep(500 * time.Millisecond)
			err = p.EndTransaction(ctx, kgo.TransactionEndTry(commit))
		}
		if err != nil && commit && strings.Contains(err.Error(), "retry with TryAbort") {
			// The client cannot know whether its commit got through: it
			// aborts, which succeeds only if the commit did not, and the
			// read below must then show the transaction not committed.
			t.Logf("round %d: commit unconfirmed (%v); aborting", round, err)
			if err = p.EndTransaction(ctx, kgo.TryAbort); err == nil {
				commit = false
			}
		}
		if err != nil {
			t.Fatalf("ending the transaction through the new coordinator: %v", err)
		}
		if commit {
			want = append(want, vs...)
		}
		outcome := txncheck.Aborted
		if commit {
			outcome = txncheck.Committed
		}
		history = append(history, txncheck.Txn{ID: fmt.Sprintf("round-%d", round), Values: vs, Outcome: outcome})
		c.Node(coord).Restart()
	}
	// The Jepsen-style check: no lost, aborted, duplicate or torn read.
	if res := txncheck.Check(history, consumeReads(t, c.Bootstrap(), "ctx", true, len(want))); !res.Ok() {
		t.Fatalf("read_committed on the cluster: %v", res)
	} else {
		t.Logf("read_committed on the cluster: %v", res)
	}
	// A produce outside the transaction is refused by a partition leader
	// that is not the coordinator too: it asks the coordinator.
	pid, epoch, code := initPID(t, admin, "ctx-raw", 10000)
	if code != 0 {
		t.Fatalf("InitProducerId: %v", kerr.ErrorForCode(code))
	}
	fc.CoordinatorKey = "ctx-raw"
	if fr, err = fc.RequestWith(ctx, admin); err != nil || fr.ErrorCode != 0 {
		t.Fatalf("FindCoordinator: %v", err)
	}
	before := endOffsets(t, admin, "ctx", 3, false)
	remote := 0
	// Transactions v1's produce (v11): verified, not added.
	v1, err := kgo.NewClient(seeds(c.Bootstrap()), v1Versions())
	if err != nil {
		t.Fatal(err)
	}
	defer v1.Close()
	var remoteParts []int32
	for part, leader := range c.Leaders("ctx", 20*time.Second) {
		if leader == fr.NodeID {
			continue
		}
		remote++
		remoteParts = append(remoteParts, part)
		got := produceRaw(t, v1, "ctx-raw", "ctx", part, txnBatch(t, pid, epoch, 0, "stray"))
		for i := 0; i < 50 && got == kerr.NotLeaderForPartition.Code; i++ {
			// The client's metadata predates the restart's elections.
			v1.ForceMetadataRefresh()
			time.Sleep(100 * time.Millisecond)
			got = produceRaw(t, v1, "ctx-raw", "ctx", part, txnBatch(t, pid, epoch, 0, "stray"))
		}
		wantCode(t, fmt.Sprintf("produce outside the transaction to partition %d, led by node %d, coordinator %d", part, leader, fr.NodeID),
			got, kerr.InvalidTxnState)
	}
	if remote == 0 {
		t.Log("every partition is led by the coordinator: the remote check was not exercised")
	}
	if got := endOffsets(t, admin, "ctx", 3, false); got != before {
		t.Fatalf("refused produces appended: %d, was %d", got, before)
	}
	// Transactions v2 (Produce v12): a leader that is not the coordinator
	// adds its partition with AddPartitionsToTxn v5 to the coordinator;
	// after EndTxn v5's bump the old epoch's add is refused there.
	v12 := func(part int32, batch []byte) int16 {
		got := produceV12(t, admin, "ctx-raw", "ctx", part, batch)
		for i := 0; i < 50 && got == kerr.NotLeaderForPartition.Code; i++ {
			admin.ForceMetadataRefresh() // the client's metadata predates the restart's elections
			time.Sleep(100 * time.Millisecond)
			got = produceV12(t, admin, "ctx-raw", "ctx", part, batch)
		}
		return got
	}
	if len(remoteParts) > 0 {
		part := remoteParts[0]
		wantCode(t, "Produce v12 to a partition led away from the coordinator", v12(part, txnBatch(t, pid, epoch, 0, "v2")), nil)
		if st := describeTxn(t, admin, "ctx-raw"); st.State != "Ongoing" || len(st.Topics) != 1 {
			t.Errorf("after the remote add: %s %+v, want Ongoing with ctx-%d", st.State, st.Topics, part)
		}
		if r := endTxnV5(t, admin, "ctx-raw", pid, epoch, false); r.ErrorCode != 0 || r.ProducerEpoch != epoch+1 {
			t.Errorf("EndTxn v5 abort: %v epoch %d, want NONE %d", kerr.ErrorForCode(r.ErrorCode), r.ProducerEpoch, epoch+1)
		}
		other := remoteParts[len(remoteParts)-1]
		wantCode(t, "late Produce v12 of the old epoch, remote add", v12(other, txnBatch(t, pid, epoch, 1, "late")), kerr.InvalidProducerEpoch)
	}
	// Every partition's LSO reaches its high watermark.
	deadline := time.Now().Add(60 * time.Second)
	for endOffsets(t, admin, "ctx", 3, true) != endOffsets(t, admin, "ctx", 3, false) {
		if time.Now().After(deadline) {
			t.Fatal("the LSO stays below the high watermark after the commit")
		}
		time.Sleep(100 * time.Millisecond)
	}
}
