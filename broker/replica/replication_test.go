package replica

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/record"
)

// replicated makes the test partition broker 1's, led by leader, with
// replicas 1, 2, 3 and the given ISR, under leader epoch 1.
func replicated(t *testing.T, leader int32, isr ...int32) *Partition {
	t.Helper()
	p := testPartition(t, testDir(t, t.TempDir()))
	p.applyMeta(cluster.Partition{Leader: leader, LeaderEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: isr}, 1)
	return p
}

// The high watermark is the smallest log end of the ISR: it waits for
// every ISR follower to fetch past a batch, ignores replicas outside the
// ISR, and never moves back.
func TestHighWatermarkFollowsTheISR(t *testing.T) {
	p := replicated(t, 1, 1, 2)
	mustProduce(t, p, -1, 0, 0, 10)
	if hw := p.HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d before any follower fetched, want 0", hw)
	}
	if _, code := p.FollowerFetched(3, 10); code != nil {
		t.Fatal(code)
	}
	if hw := p.HighWatermark(); hw != 0 {
		t.Fatalf("high watermark %d after a fetch by 3, outside the ISR, want 0", hw)
	}
	p.FollowerFetched(2, 4)
	if hw := p.HighWatermark(); hw != 4 {
		t.Fatalf("high watermark %d after 2 fetched from 4, want 4", hw)
	}
	p.FollowerFetched(2, 10)
	if hw := p.HighWatermark(); hw != 10 {
		t.Fatalf("high watermark %d after 2 caught up, want 10", hw)
	}
	p.FollowerFetched(2, 3) // a follower that truncated: the watermark stays
	if hw := p.HighWatermark(); hw != 10 {
		t.Fatalf("high watermark went back to %d", hw)
	}
	if _, code := p.FollowerFetched(7, 0); code != kerr.NotLeaderForPartition {
		t.Fatalf("fetch by broker 7, not a replica: %v", code)
	}
}

// While the ISR is smaller than min.insync.replicas the high watermark
// stays (KIP-966), so the replicas that left the ISR, the eligible leaders,
// hold everything consumers have seen; it moves again once the ISR is
// large enough. A min.insync.replicas above the replication factor counts
// as the replication factor.
func TestHighWatermarkStopsBelowMinISR(t *testing.T) {
	p := replicated(t, 1, 1, 2)
	p.applyMeta(cluster.Partition{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}}, 2)
	mustProduce(t, p, -1, 0, 0, 5)
	p.FollowerFetched(2, 5)
	if hw := p.HighWatermark(); hw != 5 {
		t.Fatalf("high watermark %d with an ISR of 2, min.insync.replicas 2; want 5", hw)
	}
	p.applyMeta(cluster.Partition{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1}, ELR: []int32{2}}, 2)
	mustProduce(t, p, -1, 0, 5, 5)
	if hw := p.HighWatermark(); hw != 5 {
		t.Fatalf("high watermark %d with the leader alone in the ISR, min.insync.replicas 2; want it kept at 5", hw)
	}
	p.applyMeta(cluster.Partition{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 2, Replicas: []int32{1, 2, 3}, ISR: []int32{1}}, 1)
	if hw := p.HighWatermark(); hw != 10 {
		t.Fatalf("high watermark %d once min.insync.replicas is 1; want 10", hw)
	}
	q := replicated(t, 1, 1)
	q.applyMeta(cluster.Partition{Leader: 1, LeaderEpoch: 1, Replicas: []int32{1}, ISR: []int32{1}}, 3)
	mustProduce(t, q, -1, 0, 0, 5)
	if hw := q.HighWatermark(); hw != 5 {
		t.Fatalf("one replica, min.insync.replicas 3: high watermark %d, want 5", hw)
	}
}

// A caught-up follower outside the ISR is proposed for it; one that falls
// behind for longer than the lag is proposed out of it.
func TestISRChanges(t *testing.T) {
	p := replicated(t, 1, 1, 2)
	now := testNow
	p.now = func() time.Time { return now }
	mustProduce(t, p, -1, 0, 0, 5)
	p.FollowerFetched(2, 5)
	ch, _ := p.FollowerFetched(3, 5)
	if ch == nil || !slices.Equal(ch.ISR, []int32{1, 2, 3}) || ch.LeaderEpoch != 1 {
		t.Fatalf("caught-up follower 3: change %+v, want the ISR 1, 2, 3", ch)
	}
	if again, _ := p.FollowerFetched(3, 5); again != nil {
		t.Fatalf("a second change while the first is pending: %+v", again)
	}
	p.ISRChangeDone(true)
	p.applyMeta(cluster.Partition{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}, 1)

	mustProduce(t, p, -1, 0, 0, 5)
	now = now.Add(5 * time.Second)
	p.FollowerFetched(2, 10)
	if ch := p.ShrinkISR(10 * time.Second); ch != nil {
		t.Fatalf("shrink after 5 s: %+v", ch)
	}
	now = now.Add(10 * time.Second)
	ch = p.ShrinkISR(10 * time.Second)
	if ch == nil || !slices.Equal(ch.ISR, []int32{1, 2}) {
		t.Fatalf("follower 3 behind for 15 s: change %+v, want the ISR 1, 2", ch)
	}
}

// TestHighWatermarkWaitsForJoiners: while a follower's ISR join is on its
// way to the controller, and once accepted until the metadata has it, the
// high watermark waits for that follower too (Kafka's maximal ISR): the
// controller may already count it as eligible, and a leader elected from
// it must hold every record consumers saw. A refused join releases it.
func TestHighWatermarkWaitsForJoiners(t *testing.T) {
	p := replicated(t, 1, 1, 2)
	mustProduce(t, p, -1, 0, 0, 5)
	p.FollowerFetched(2, 5)
	if ch, _ := p.FollowerFetched(3, 5); ch == nil {
		t.Fatal("caught-up follower 3 was not proposed for the ISR")
	}
	mustProduce(t, p, -1, 0, 0, 5)
	p.FollowerFetched(2, 10)
	if hw := p.HighWatermark(); hw != 5 {
		t.Fatalf("high watermark %d while 3 joins from offset 5, want 5", hw)
	}
	p.ISRChangeDone(true)
	p.FollowerFetched(2, 10)
	if hw := p.HighWatermark(); hw != 5 {
		t.Fatalf("high watermark %d after the join was accepted, before the metadata has it, want 5", hw)
	}
	p.applyMeta(cluster.Partition{Leader: 1, LeaderEpoch: 1, PartitionEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}, 1)
	p.FollowerFetched(3, 10)
	if hw := p.HighWatermark(); hw != 10 {
		t.Fatalf("high watermark %d once 3 is in the ISR and caught up, want 10", hw)
	}

	q := replicated(t, 1, 1, 2)
	mustProduce(t, q, -1, 0, 0, 5)
	q.FollowerFetched(2, 5)
	q.FollowerFetched(3, 5)
	mustProduce(t, q, -1, 0, 0, 5)
	q.FollowerFetched(2, 10)
	q.ISRChangeDone(false)
	if hw := q.HighWatermark(); hw != 10 {
		t.Fatalf("high watermark %d after 3's join was refused, want 10", hw)
	}
}

// acks=all waits for the high watermark, and fails when the leadership
// moves or the deadline passes.
func TestWaitCommitted(t *testing.T) {
	p := replicated(t, 1, 1, 2)
	off := mustProduce(t, p, -1, 0, 0, 3) + 2
	done := make(chan *kerr.Error)
	go func() { done <- p.WaitCommitted(off, 2, time.Now().Add(10*time.Second), nil) }()
	p.FollowerFetched(2, 3)
	if code := <-done; code != nil {
		t.Fatalf("committed: %v", code)
	}
	if code := p.WaitCommitted(off, 3, time.Now().Add(time.Second), nil); code != kerr.NotEnoughReplicasAfterAppend {
		t.Fatalf("min ISR 3 with an ISR of 2: %v", code)
	}
	off = mustProduce(t, p, -1, 0, 0, 1)
	if code := p.WaitCommitted(off, 1, time.Now().Add(50*time.Millisecond), nil); code != kerr.RequestTimedOut {
		t.Fatalf("never replicated: %v", code)
	}
	go func() { done <- p.WaitCommitted(off, 1, time.Now().Add(10*time.Second), nil) }()
	time.Sleep(10 * time.Millisecond)
	p.applyMeta(cluster.Partition{Leader: 2, LeaderEpoch: 2, Replicas: []int32{1, 2, 3}, ISR: []int32{2}}, 1)
	if code := <-done; code != kerr.NotLeaderForPartition {
		t.Fatalf("leadership moved while waiting: %v", code)
	}
}

// A deposed leader truncates where its last epoch ends in the new leader's
// log (KIP-101), dropping the tail only it had, and the producers of that
// tail with it.
func TestFollowerTruncatesByLeaderEpoch(t *testing.T) {
	// Broker 1 leads epoch 1: offsets 0-3 reach the new leader, 4-6 do not.
	old := replicated(t, 1, 1)
	mustProduce(t, old, 7, 0, 0, 4)
	mustProduce(t, old, 9, 0, 0, 3)
	// The new leader has 0-3 from epoch 1 and writes 4-5 in epoch 2.
	next := replicated(t, 1, 1)
	slice, err := old.Log.Read(0, log.ReadOptions{MaxBytes: 1 << 20, UpTo: 4})
	if err != nil {
		t.Fatal(err)
	}
	replicatedPart, err := slice.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	next.applyMeta(cluster.Partition{Leader: 2, LeaderEpoch: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2}}, 1)
	if err := next.AppendAsFollower(replicatedPart, 4); err != nil {
		t.Fatal(err)
	}
	next.applyMeta(cluster.Partition{Leader: 1, LeaderEpoch: 2, Replicas: []int32{1, 2, 3}, ISR: []int32{1}}, 1)
	mustProduce(t, next, 7, 0, 4, 2)

	// The old leader follows epoch 3 and asks where its epoch 1 ends.
	old.applyMeta(cluster.Partition{Leader: 2, LeaderEpoch: 3, Replicas: []int32{1, 2, 3}, ISR: []int32{2}}, 1)
	e, ok := next.Log.EndOffsetForEpoch(old.lastEpoch())
	if !ok || e.Epoch != 1 || e.StartOffset != 4 {
		t.Fatalf("the new leader's end of epoch 1: %+v %v, want offset 4", e, ok)
	}
	to := old.divergence(e.Epoch, e.StartOffset)
	if to != 4 {
		t.Fatalf("divergence at %d, want 4", to)
	}
	if err := old.TruncateTo(to); err != nil {
		t.Fatal(err)
	}
	if leo := old.Log.LogEndOffset(); leo != 4 {
		t.Fatalf("log end %d after truncating, want 4", leo)
	}
	if _, ok := old.producers.Producers()[9]; ok {
		t.Fatal("producer 9, whose only batch was truncated, is still known")
	}
	if _, ok := old.producers.Producers()[7]; !ok {
		t.Fatal("producer 7 was forgotten")
	}
}

// A new replica of a partition whose leader deleted records up to the
// middle of a batch (DeleteRecords) starts at that batch and then follows
// the leader's log start; a replica that has the records drops them too,
// so a failover to it does not bring them back.
func TestFollowerFollowsTheLeadersLogStart(t *testing.T) {
	leader := replicated(t, 1, 1)
	mustProduce(t, leader, -1, 0, 0, 10)
	all := readLog(t, leader, 0)
	if err := leader.Log.DeleteRecordsBefore(5); err != nil {
		t.Fatal(err)
	}

	// The fetcher's path: offset 0 is out of range (the leader starts at
	// 5), so the empty replica restarts at 5 and asks from there; the
	// leader answers with the batch holding 5, which begins at 0.
	fresh := replicated(t, 2, 1, 2)
	if err := fresh.ResetTo(leader.Log.LogStartOffset()); err != nil {
		t.Fatal(err)
	}
	if err := fresh.AppendFetched(readLog(t, leader, 5), 10, 5); err != nil {
		t.Fatalf("appending the batch that holds the leader's log start: %v", err)
	}
	if start, end := fresh.Log.LogStartOffset(), fresh.Log.LogEndOffset(); start != 5 || end != 10 {
		t.Fatalf("new replica holds [%d, %d), want [5, 10)", start, end)
	}

	// A replica that copied everything before the deletion.
	caughtUp := replicated(t, 2, 1, 2)
	if err := caughtUp.AppendFetched(all, 10, 0); err != nil {
		t.Fatal(err)
	}
	if err := caughtUp.AppendFetched(nil, 10, 5); err != nil {
		t.Fatal(err)
	}
	if start := caughtUp.Log.LogStartOffset(); start != 5 {
		t.Fatalf("replica's log start %d after the leader's moved to 5", start)
	}
}

// readLog is what a follower's fetch from offset returns: p's batches from
// the one holding offset to the log end.
func readLog(t *testing.T, p *Partition, offset int64) []byte {
	t.Helper()
	slice, err := p.Log.Read(offset, log.ReadOptions{MaxBytes: 1 << 20, UpTo: -1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := slice.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestHighWatermarkWaitsForProducerState: followers can fetch a batch the
// instant it is in the log, before the append that wrote it has recorded
// its producer's open transaction. The high watermark they move must not
// pass it then: a read_committed consumer woken by it would be served the
// batch under an LSO that does not know the transaction, and see it even
// if the transaction aborts (TestTransactionsCheckerFaults caught one such
// aborted read in about ten runs).
func TestHighWatermarkWaitsForProducerState(t *testing.T) {
	p := replicated(t, 1, 1, 2, 3)
	var hw, lso int64 = -1, -1
	fetched := false
	// The partition reads its clock between the log append and the
	// producer state update: where the followers' fetches land.
	p.now = func() time.Time {
		if !fetched && p.Log.LogEndOffset() == 1 {
			fetched = true
			p.FollowerFetched(2, 1)
			p.FollowerFetched(3, 1)
			hw, lso = p.HighWatermark(), p.LastStableOffset()
		}
		return testNow
	}
	opts := record.DefaultBuildOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = 7, 0, 0, true
	opts.BaseTimestamp = testNow.UnixMilli()
	b, err := record.Build(opts, record.NewRecords(record.KV{Value: []byte("aborted later")}))
	if err != nil {
		t.Fatal(err)
	}
	_, g := p.BeginTxnVerification(7, 0)
	if _, err := p.AppendTxnAsLeader(b, nil, g); err != nil {
		t.Fatal(err)
	}
	if !fetched {
		t.Fatal("the partition did not read its clock between the log append and the producer state update")
	}
	if hw != 0 || lso != 0 {
		t.Fatalf("mid-append: high watermark %d, LSO %d; want 0 and 0 (the transaction is not recorded yet)", hw, lso)
	}
	p.FollowerFetched(2, 1)
	p.FollowerFetched(3, 1)
	if hw, lso := p.HighWatermark(), p.LastStableOffset(); hw != 1 || lso != 0 {
		t.Fatalf("after the append: high watermark %d, LSO %d; want 1 and 0 (the open transaction holds the LSO)", hw, lso)
	}
}
