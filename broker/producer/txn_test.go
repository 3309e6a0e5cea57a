package producer

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/record"
)

func txnBatch(t *testing.T, pid int64, epoch int16, seq int32, base int64, n int) record.Batch {
	t.Helper()
	opts := record.DefaultBuildOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional, opts.BaseOffset = pid, epoch, seq, true, base
	recs := make([]kmsg.Record, n)
	for i := range recs {
		recs[i] = kmsg.Record{OffsetDelta: int32(i), Value: []byte("v")}
	}
	b, err := record.Build(opts, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func marker(t *testing.T, pid int64, epoch int16, commit bool, at int64) record.Batch {
	t.Helper()
	b, err := record.MarkerBatch(pid, epoch, commit, 7, 1000)
	if err != nil {
		t.Fatal(err)
	}
	b.SetBaseOffset(at)
	return b
}

// TestTransactionState: transactional batches open a producer's
// transaction at their first offset; its marker closes it and says whether
// it aborted; the oldest open transaction is the first unstable offset;
// a snapshot carries open transactions across a restart.
func TestTransactionState(t *testing.T) {
	s := NewState()
	s.Apply(txnBatch(t, 1, 0, 0, 10, 3), 1)
	s.Apply(txnBatch(t, 2, 0, 0, 13, 2), 1)
	s.Apply(txnBatch(t, 1, 0, 3, 15, 2), 1)
	if got := s.FirstUnstableOffset(); got != 10 {
		t.Fatalf("first unstable offset %d, want 10", got)
	}
	restored, err := DecodeSnapshot(EncodeSnapshot(s))
	if err != nil {
		t.Fatal(err)
	}
	if got := restored.FirstUnstableOffset(); got != 10 {
		t.Fatalf("after a snapshot, first unstable offset %d, want 10", got)
	}
	c := s.Apply(marker(t, 1, 0, false, 17), 2)
	if c == nil || !c.Aborted || c.FirstOffset != 10 || c.LastOffset != 17 || c.ProducerID != 1 {
		t.Fatalf("abort marker: %+v", c)
	}
	if got := s.FirstUnstableOffset(); got != 13 {
		t.Fatalf("after producer 1's abort, first unstable offset %d, want 13", got)
	}
	if e := s.Producers()[1]; e.CoordinatorEpoch != 7 || e.CurrentTxnFirstOffset != -1 {
		t.Fatalf("producer 1 after its marker: %+v", e)
	}
	c = s.Apply(marker(t, 2, 1, true, 18), 2)
	if c == nil || c.Aborted || c.FirstOffset != 13 {
		t.Fatalf("commit marker: %+v", c)
	}
	if got := s.FirstUnstableOffset(); got != -1 {
		t.Fatalf("with nothing open, first unstable offset %d", got)
	}
	// The fencing marker moved producer 2 to epoch 1: its old epoch is refused.
	if _, err := s.Check(txnBatch(t, 2, 0, 2, 0, 1)); err == nil {
		t.Fatal("a batch of the fenced epoch was accepted")
	}
	// An open transaction does not expire with its producer.
	s.Apply(txnBatch(t, 3, 0, 0, 19, 1), 1)
	s.Expire(100)
	if _, ok := s.Producers()[3]; !ok {
		t.Fatal("a producer with an open transaction expired")
	}
}

// TestPlainBatchInOpenTxn: a producer with a transaction open cannot write
// a plain batch (of a newer epoch it would move the producer past the
// epoch of the coordinator's markers, and the transaction never ends);
// after the marker it can.
func TestPlainBatchInOpenTxn(t *testing.T) {
	s := NewState()
	s.Apply(txnBatch(t, 1, 0, 0, 0, 1), 1)
	opts := record.DefaultBuildOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.BaseOffset = 1, 1, 0, 1
	plain, err := record.Build(opts, []kmsg.Record{{Value: []byte("p")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Check(plain); err == nil || err.(*Error).Code != kerr.InvalidTxnState {
		t.Fatalf("plain batch with a transaction open: %v, want INVALID_TXN_STATE", err)
	}
	s.Apply(marker(t, 1, 0, true, 1), 2)
	if _, err := s.Check(plain); err != nil {
		t.Fatalf("plain batch after the marker: %v", err)
	}
}
