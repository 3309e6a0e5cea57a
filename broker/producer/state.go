package producer

import (
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/record"
)

// MaxBatchesPerProducer is how many recent batches of each producer are
// remembered for duplicate detection: a producer has at most five requests
// in flight (max.in.flight.requests.per.connection <= 5 with idempotence).
const MaxBatchesPerProducer = 5

// BatchMeta identifies one appended batch of a producer.
type BatchMeta struct {
	FirstSeq, LastSeq       int32
	FirstOffset, LastOffset int64
	Timestamp               int64 // max timestamp, or the log append time
}

// Entry is one producer's state in one partition.
type Entry struct {
	ProducerID int64
	Epoch      int16
	Batches    []BatchMeta // oldest first, at most MaxBatchesPerProducer
	// LastTimestamp is the expiry reference: the broker's clock when the
	// producer's last batch was appended, or, for a batch replayed from the
	// log or read from a snapshot, the time stored there (see Replay).
	LastTimestamp int64
	// CoordinatorEpoch is that of the last transaction marker written for
	// the producer; -1 before any.
	CoordinatorEpoch int32
	// CurrentTxnFirstOffset is the offset of the first batch of the
	// producer's open transaction, -1 when none is open: the last stable
	// offset of the partition cannot pass it.
	CurrentTxnFirstOffset int64
	// lastDataEnd is one past the last offset of the producer's last data
	// batch at this epoch, sequenced or not (a coordinator's
	// transactional offset commits carry no sequence); 0: none known (an
	// entry read from a snapshot, which does not carry it, goes by
	// Batches). The log cleaner keeps that batch (LastDataOffset).
	lastDataEnd int64
}

// LastDataOffset is the last offset of the producer's last data batch at
// its current epoch, -1 when none is known.
func (e *Entry) LastDataOffset() int64 {
	last := int64(-1)
	if l := e.last(); l != nil {
		last = l.LastOffset
	}
	return max(last, e.lastDataEnd-1)
}

func (e *Entry) last() *BatchMeta {
	if len(e.Batches) == 0 {
		return nil
	}
	return &e.Batches[len(e.Batches)-1]
}

// State is one partition's idempotent producers.
type State struct {
	producers map[int64]*Entry
	// open is the first offset of every open transaction, by producer:
	// the few entries the last stable offset depends on.
	open map[int64]int64
}

// NewState is an empty state.
func NewState() *State { return &State{producers: map[int64]*Entry{}, open: map[int64]int64{}} }

// CompletedTxn is a transaction a marker ended: the producer, the offsets
// of its first batch and of the marker, and whether it was aborted (then
// it belongs in the aborted-transaction index).
type CompletedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
	Aborted     bool
}

// Error is a refused batch with its Kafka error.
type Error struct {
	Code   *kerr.Error
	Reason string
}

func (e *Error) Error() string { return "broker/producer: " + e.Reason }
func (e *Error) Unwrap() error { return e.Code }

// Sequences live on a ring: after math.MaxInt32 comes 0. These are Kafka's
// DefaultRecordBatch.incrementSequence and decrementSequence; delta is never
// negative.

// addSeq is the sequence delta steps after seq.
func addSeq(seq, delta int32) int32 {
	if seq > math.MaxInt32-delta {
		return delta - (math.MaxInt32 - seq) - 1
	}
	return seq + delta
}

// subSeq is the sequence delta steps before seq.
func subSeq(seq, delta int32) int32 {
	if seq < delta {
		return math.MaxInt32 - (delta - seq) + 1
	}
	return seq - delta
}

// nextSeq is the sequence after seq.
func nextSeq(seq int32) int32 { return addSeq(seq, 1) }

// lastSeq is the sequence of a batch's last record.
func lastSeq(b record.Batch) int32 { return addSeq(b.BaseSequence(), b.LastOffsetDelta()) }

// Check decides what to do with a batch before it is appended: nil to append
// it, a duplicate's metadata to answer with instead, or an *Error. The rules
// are those of Kafka's ProducerAppendInfo, in its order:
//
//   - a batch without a producer id is not idempotent: append it;
//   - a producer this partition has no state for (never seen, expired, or
//     whose every batch was deleted) is appended at whatever sequence it
//     sends, as Kafka does since KIP-360 ("if there is no current producer
//     epoch ... accept writes with any sequence number"): refusing it would
//     make the client reset its sequences and resend, which is worse;
//   - a batch of an older epoch is refused with INVALID_PRODUCER_EPOCH;
//   - a batch of a newer epoch must start at sequence 0;
//   - a batch of the current epoch whose first and last sequences are those
//     of one of the producer's last MaxBatchesPerProducer batches is a retry:
//     its original offsets are the answer;
//   - otherwise it must start right after the producer's last sequence,
//     wrapping from math.MaxInt32 to 0; a gap, or the retry of a batch
//     older than those remembered, is OUT_OF_ORDER_SEQUENCE_NUMBER.
func (s *State) Check(b record.Batch) (*BatchMeta, error) {
	pid := b.ProducerID()
	if pid < 0 {
		return nil, nil
	}
	e, ok := s.producers[pid]
	if !ok {
		return nil, nil
	}
	epoch, first, last := b.ProducerEpoch(), b.BaseSequence(), lastSeq(b)
	switch {
	case !b.Transactional() && e.CurrentTxnFirstOffset >= 0:
		// Kafka's ProducerAppendInfo: a plain batch of a producer with
		// an open transaction (of a newer epoch, it would move the
		// producer past the epoch the coordinator's markers carry, and
		// the transaction could never end).
		return nil, &Error{kerr.InvalidTxnState, fmt.Sprintf("producer %d has a transaction open: a non-transactional batch is refused", pid)}
	case epoch < e.Epoch:
		return nil, &Error{kerr.InvalidProducerEpoch, fmt.Sprintf("producer %d epoch %d is older than the current %d", pid, epoch, e.Epoch)}
	case epoch > e.Epoch:
		if first != 0 {
			return nil, &Error{kerr.OutOfOrderSequenceNumber, fmt.Sprintf("producer %d bumped its epoch to %d and must restart at sequence 0, not %d", pid, epoch, first)}
		}
		return nil, nil
	}
	for _, bm := range e.Batches {
		if bm.FirstSeq == first && bm.LastSeq == last {
			dup := bm // a copy escapes only for a duplicate, not every batch looked at
			return &dup, nil
		}
	}
	if l := e.last(); l != nil && first != nextSeq(l.LastSeq) {
		return nil, &Error{kerr.OutOfOrderSequenceNumber, fmt.Sprintf("producer %d: batch starts at sequence %d, expected %d", pid, first, nextSeq(l.LastSeq))}
	}
	return nil, nil
}

// Update records a batch that was appended with its offsets assigned.
// appendTime is the broker's clock, the expiry reference.
func (s *State) Update(b record.Batch, appendTime int64) { s.Apply(b, appendTime) }

// Apply records a batch that was appended with its offsets assigned, as
// Update, and returns the transaction a marker (a control batch, which
// carries no sequence) ended, if any. A transactional batch opens its
// producer's transaction unless one is open. A batch without a sequence
// (written by a coordinator: transactional offset commits) is not
// remembered for duplicate detection. A newer epoch, from a batch or from
// a marker (the coordinator fences a producer by bumping its epoch),
// forgets the older epoch's batches.
func (s *State) Apply(b record.Batch, appendTime int64) *CompletedTxn {
	pid := b.ProducerID()
	if pid < 0 {
		return nil
	}
	e, ok := s.producers[pid]
	if !ok {
		e = &Entry{ProducerID: pid, Epoch: b.ProducerEpoch(), CoordinatorEpoch: -1, CurrentTxnFirstOffset: -1}
		s.producers[pid] = e
	} else if b.ProducerEpoch() != e.Epoch {
		e.Epoch, e.Batches, e.lastDataEnd = b.ProducerEpoch(), nil, 0
	}
	e.LastTimestamp = appendTime
	if b.Control() {
		typ, ok := b.ControlType()
		if !ok || (typ != record.ControlAbort && typ != record.ControlCommit) {
			return nil
		}
		e.CoordinatorEpoch = markerCoordinatorEpoch(b, e.CoordinatorEpoch)
		first := e.CurrentTxnFirstOffset
		e.CurrentTxnFirstOffset = -1
		delete(s.open, pid)
		if first < 0 {
			// A marker with nothing open (a retried marker, or the
			// abort of a transaction that wrote nothing here).
			first = b.BaseOffset()
		}
		return &CompletedTxn{ProducerID: pid, FirstOffset: first, LastOffset: b.LastOffset(), Aborted: typ == record.ControlAbort}
	}
	e.lastDataEnd = b.LastOffset() + 1
	if b.Transactional() && e.CurrentTxnFirstOffset < 0 {
		e.CurrentTxnFirstOffset = b.BaseOffset()
		s.open[pid] = b.BaseOffset()
	}
	if b.BaseSequence() < 0 {
		return nil
	}
	e.Batches = append(e.Batches, BatchMeta{
		FirstSeq: b.BaseSequence(), LastSeq: lastSeq(b),
		FirstOffset: b.BaseOffset(), LastOffset: b.LastOffset(), Timestamp: b.MaxTimestamp(),
	})
	if n := len(e.Batches); n > MaxBatchesPerProducer {
		e.Batches = append(e.Batches[:0], e.Batches[n-MaxBatchesPerProducer:]...)
	}
	return nil
}

// markerCoordinatorEpoch is the coordinator epoch in a marker's value
// (version int16, coordinator epoch int32), or old when it cannot be read.
func markerCoordinatorEpoch(b record.Batch, old int32) int32 {
	rs, err := b.DecodeRecords()
	if err != nil || len(rs) == 0 || len(rs[0].Value) < 6 {
		return old
	}
	return int32(uint32(rs[0].Value[2])<<24 | uint32(rs[0].Value[3])<<16 | uint32(rs[0].Value[4])<<8 | uint32(rs[0].Value[5]))
}

// FirstUnstableOffset is the first offset of the oldest open transaction,
// or -1 when none is open.
func (s *State) FirstUnstableOffset() int64 {
	first := int64(-1)
	for _, off := range s.open {
		if first < 0 || off < first {
			first = off
		}
	}
	return first
}

// OpenTxns is each producer with an open transaction and its first offset.
func (s *State) OpenTxns() map[int64]int64 { return s.open }

// Replay records a batch read back from the log while recovering: the
// batches after the snapshot recovery started from, in offset order. The
// append time is not stored in the log, so the batch's max timestamp is the
// expiry reference, as in Kafka (it is the append time for a LogAppendTime
// topic). A batch the producer's entry already covers (its last offset is
// not past the entry's last batch) is skipped, so replaying from an offset
// inside a batch the snapshot already holds records it once.
func (s *State) Replay(b record.Batch) *CompletedTxn {
	if e, ok := s.producers[b.ProducerID()]; ok {
		if l := e.last(); l != nil && b.LastOffset() <= l.LastOffset {
			return nil
		}
	}
	return s.Apply(b, b.MaxTimestamp())
}

// Producers is every producer's entry; the caller must not modify them.
func (s *State) Producers() map[int64]*Entry { return s.producers }

// Len is the number of producers.
func (s *State) Len() int { return len(s.producers) }

// Expire drops producers idle since before cutoff (producer.id.expiration.ms).
func (s *State) Expire(cutoff int64) int {
	n := 0
	for pid, e := range s.producers {
		// A producer with an open transaction stays: the transaction
		// coordinator ends it (by its timeout) with a marker.
		if e.LastTimestamp < cutoff && e.CurrentTxnFirstOffset < 0 {
			delete(s.producers, pid)
			n++
		}
	}
	return n
}
