package txn

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/cluster"
)

// Transactions v2 (KIP-890 part 2). A client that sees transaction.version
// 2 finalized ends every transaction with EndTxn v5, and the coordinator
// bumps the producer epoch there: the markers carry the bumped epoch, so
// that a produce of the transaction that arrives after its marker is of an
// older epoch and refused (INVALID_PRODUCER_EPOCH), where with v1 it would
// have opened a new transaction. The new epoch goes back in the EndTxn
// answer; when the epoch is exhausted the transaction completes onto a new
// producer id. The client never sends AddPartitionsToTxn: the partition
// leaders add the partitions of its Produce v12 and TxnOffsetCommit v5.

// TransactionVersion is the cluster's finalized transaction.version.
func (c *Coordinator) TransactionVersion() int16 {
	return c.ctrl.Image().FeatureLevel(cluster.TransactionVersion)
}

// epochExhausted is Kafka's TransactionMetadata.isEpochExhausted: the last
// epoch is kept for the coordinator's fence.
func epochExhausted(e int16) bool { return e >= math.MaxInt16-1 }

// EndTxnV2 serves EndTxn v5: the transaction ends with the epoch bumped,
// and the answer is the producer id and epoch to go on with. Kafka's state
// table (TransactionCoordinator.endTransaction, transaction V2), where a
// retry is the epoch before the bump (or the last epoch of the previous
// producer id, after a rotation):
//
//	                 Abort           Commit
//	                 retry  current  retry  current
//	Empty            FENCED bump     FENCED INVALID_TXN_STATE
//	CompleteAbort    NONE   bump     ITS    ITS
//	CompleteCommit   ITS    bump     NONE   ITS
//
// "bump" aborts a transaction that added no partition: nothing to mark,
// but the epoch moves on, as the client expects.
func (c *Coordinator) EndTxnV2(id string, producerID int64, epoch int16, commit bool) (int64, int16, *kerr.Error) {
	m, code := c.lookup(id, false)
	if code != nil {
		return -1, -1, code
	}
	if m == nil {
		return -1, -1, kerr.InvalidProducerIDMapping
	}
	defer m.mu.Unlock()
	// Only a transaction that ran on v2 (its end bumped the epoch once)
	// has a retry at the epoch before: after a v1 end or a v1 fence, an
	// EndTxn at the previous epoch is a zombie's, which must not adopt
	// the current epoch (Kafka's clientTransactionVersion check).
	v2 := m.ClientTV >= 2
	retryOnOverflow := v2 && m.PrevProducerID == producerID && epoch == math.MaxInt16-1 && m.Epoch == 0
	retryOnBump := v2 && epoch < math.MaxInt16 && m.Epoch == epoch+1
	var valid bool
	switch m.Status {
	case PrepareCommit, PrepareAbort:
		valid = retryOnBump
	case CompleteCommit, CompleteAbort:
		valid = retryOnBump || retryOnOverflow || epoch == m.Epoch
	default:
		valid = epoch == m.Epoch
	}
	switch {
	case m.ProducerID != producerID && !retryOnOverflow:
		return -1, -1, kerr.InvalidProducerIDMapping
	case !valid:
		return -1, -1, kerr.ProducerFenced
	}
	retry := retryOnBump || retryOnOverflow
	switch m.Status {
	case Ongoing:
		return c.endV2Locked(m, commit, false)
	case CompleteCommit:
		switch {
		case commit && retry:
			return m.ProducerID, m.Epoch, nil
		case !commit && !retry:
			return c.endV2Locked(m, false, true)
		}
	case CompleteAbort:
		switch {
		case !commit && retry:
			return m.ProducerID, m.Epoch, nil
		case !commit:
			return c.endV2Locked(m, false, true)
		}
	case Empty:
		if !commit {
			return c.endV2Locked(m, false, true)
		}
	case PrepareCommit, PrepareAbort:
		// The retry of an EndTxn whose markers are not all written yet.
		// Kafka answers CONCURRENT_TRANSACTIONS; we try the markers
		// once more, as the v1 path does, and answer once complete.
		if (m.Status == PrepareCommit) != commit {
			return -1, -1, kerr.InvalidTxnState
		}
		if code := c.completeLocked(m); code != nil {
			return -1, -1, kerr.ConcurrentTransactions
		}
		return m.ProducerID, m.Epoch, nil
	}
	return -1, -1, kerr.InvalidTxnState
}

// endV2Locked ends m's transaction with the epoch bumped (onto a new
// producer id when the epoch is exhausted); empty is the abort of a
// transaction that added no partition. m.mu must be held.
func (c *Coordinator) endV2Locked(m *Meta, commit, empty bool) (int64, int16, *kerr.Error) {
	next := m.copy()
	next.Status, next.ClientTV, next.NextProducerID = PrepareAbort, 2, -1
	if commit {
		next.Status = PrepareCommit
	}
	if epochExhausted(m.Epoch) {
		pid, err := c.alloc()
		if err != nil {
			return -1, -1, kerr.CoordinatorNotAvailable
		}
		next.NextProducerID, next.PrevProducerID = pid, m.ProducerID
	}
	// Never past the last epoch (a producer id left there by an older
	// version): the markers carry it, and the id changes on completion.
	next.Epoch = int16(min(int32(m.Epoch)+1, math.MaxInt16))
	if empty {
		next.Partitions, next.Start = map[TP]bool{}, c.now().UnixMilli()
	}
	if code := c.write(m, next); code != nil {
		return -1, -1, code
	}
	m.retry = m.value().Partitions
	if c.completeLocked(m) != nil && m.NextProducerID >= 0 {
		// Prepared, markers pending: the outcome is decided, and the
		// client goes on with the id it will have once complete.
		return m.NextProducerID, 0, nil
	}
	return m.ProducerID, m.Epoch, nil
}
