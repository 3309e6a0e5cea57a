package log

import (
	"github.com/tributary-io/tributary/broker/record"
)

// Transactions in a cleaning, as Kafka's Cleaner and its
// CleanedTransactionMetadata handle them. A cleaning reads the log from its
// start, batch after batch, and knows for each producer whether it has read
// a transactional batch since that producer's last marker:
//
//   - A batch of an aborted transaction is removed (its records are never
//     read by a read_committed consumer) and never enters the offset map.
//   - A marker whose transaction has no batch left in the log (none was
//     read in this pass) can go too. As a tombstone, it first gets a delete
//     horizon, now + delete.retention.ms, written in its batch header
//     (KIP-534: the base timestamp, with the delete-horizon attribute); a
//     later cleaning past that horizon removes it. A consumer that read the
//     transaction's records before they were cleaned thus has
//     delete.retention.ms to read the marker that ends it.
//   - An aborted transaction with no batch left leaves the
//     aborted-transaction index (TxnView.ForgetAborted) in the pass that
//     finds it so, before its marker can be removed in a later one: an
//     entry outliving its marker would make read_committed consumers drop
//     the producer's later transactions.
//   - Each active producer's last batch is kept, emptied of its records if
//     none survive (a header with no records, as Kafka's RETAIN_EMPTY), so
//     that a replica or a restart rebuilding the producer state from the
//     log still knows its last sequence and epoch; for a producer whose
//     state has no data batch, its last marker of the current epoch.
//   - Beyond Kafka: a marker is kept while a producer snapshot on disk has
//     its producer's transaction open at or before it
//     (TxnView.OpenInSnapshots): a restart loading that snapshot (after a
//     crash, or a truncation that removed newer ones) replays from there
//     and needs the marker to close the transaction, whose records may
//     all be gone, or the last stable offset would stay behind it.
//
// Records of a transaction precede its marker, and a pass reads from the
// log start, so a marker is never removed while a record of its
// transaction remains: recovery never meets a transaction's records
// without their marker.

// batchRetention is what a cleaning does with a batch as a whole.
type batchRetention int

const (
	deleteEmpty batchRetention = iota // keep the surviving records; drop the batch if none
	retainEmpty                       // keep the batch even with no record left
	deleteBatch                       // drop the batch whatever its records
)

// batchFate is the transaction side's verdict on one batch, which
// filterBatch applies.
type batchFate struct {
	retention batchRetention
	// discardRecords: no record survives (an aborted batch kept only for
	// its producer's sequence, or a marker past its horizon).
	discardRecords bool
	// emptyTxnMarker: a marker whose transaction has no batch left, which
	// gets a delete horizon if it has none.
	emptyTxnMarker bool
}

// txnCleaning follows the transactions through one cleaning pass. Only the
// cleaner's goroutine uses it.
type txnCleaning struct {
	log       *Log
	producers map[int64]ProducerLast
	// openIn is OpenInSnapshots; nil: no marker may be removed.
	openIn map[int64]int64
	// committed and aborted are the producers with a batch read since
	// their last marker, of a committed (or still open) transaction and
	// of an aborted one.
	committed, aborted map[int64]bool
	// forget are the aborted transactions found without batches in the
	// group being cleaned, for ForgetAborted before its install.
	forget [][2]int64
	// markersRemoved counts the markers dropped.
	markersRemoved int64
}

func newTxnCleaning(l *Log) *txnCleaning {
	t := &txnCleaning{log: l, committed: map[int64]bool{}, aborted: map[int64]bool{}}
	if v := l.txns.Load(); v != nil {
		if v.Producers != nil {
			t.producers = v.Producers()
		}
		if v.OpenInSnapshots != nil {
			t.openIn = v.OpenInSnapshots()
		}
	}
	return t
}

// decide is Kafka's checkBatchRetention for batch b at nowMs.
func (t *txnCleaning) decide(b record.Batch, nowMs int64) batchFate {
	var f batchFate
	canDiscard := false
	pid := b.ProducerID()
	if b.Control() {
		canDiscard = t.onMarker(b)
		horizonPassed := b.HasDeleteHorizon() && b.BaseTimestamp() <= nowMs
		f.discardRecords = canDiscard && horizonPassed
		f.emptyTxnMarker = canDiscard
	} else if b.Transactional() && pid >= 0 {
		if t.log.abortedBatch(b) {
			t.aborted[pid] = true
			canDiscard = true
		} else {
			t.committed[pid] = true
		}
		f.discardRecords = canDiscard
	}
	switch {
	case pid >= 0 && t.isLastOfProducer(b):
		f.retention = retainEmpty
	case f.discardRecords:
		f.retention = deleteBatch
	}
	return f
}

// onMarker is Kafka's onControlBatchRead: whether marker b may go, as far
// as its transaction's batches are concerned.
func (t *txnCleaning) onMarker(b record.Batch) bool {
	if b.RecordCount() == 0 {
		// A marker an earlier cleaning emptied (it was its producer's
		// last): nothing in it to keep once it is not the last.
		return true
	}
	typ, ok := b.ControlType()
	if !ok {
		return false
	}
	pid := b.ProducerID()
	var hadBatches bool
	switch typ {
	case record.ControlAbort:
		hadBatches = t.aborted[pid]
		delete(t.aborted, pid)
		if !hadBatches {
			t.forget = append(t.forget, [2]int64{pid, b.LastOffset()})
		}
	case record.ControlCommit:
		hadBatches = t.committed[pid]
		delete(t.committed, pid)
	default:
		return false
	}
	if hadBatches {
		return false
	}
	if t.openIn == nil {
		return false
	}
	if s, open := t.openIn[pid]; open && s <= b.BaseOffset() {
		return false
	}
	return true
}

// isLastOfProducer is Kafka's isBatchLastRecordOfProducer.
func (t *txnCleaning) isLastOfProducer(b record.Batch) bool {
	last, ok := t.producers[b.ProducerID()]
	if !ok {
		return false
	}
	if last.LastDataOffset >= 0 {
		return !b.Control() && b.LastOffset() == last.LastDataOffset
	}
	return b.Control() && b.ProducerEpoch() == last.Epoch
}

// forgetAborted hands the aborted transactions found without batches to
// the partition, before the group that found them is installed.
func (t *txnCleaning) forgetAborted() error {
	if len(t.forget) == 0 {
		return nil
	}
	v := t.log.txns.Load()
	if v == nil || v.ForgetAborted == nil {
		t.forget = t.forget[:0]
		return nil
	}
	err := v.ForgetAborted(t.forget)
	t.forget = t.forget[:0]
	return err
}
