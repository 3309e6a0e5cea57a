package replica

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/producer"
	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/internal/remotelog"
)

// Transactions, on the partition side: the producer state knows each
// producer's open transaction; the partition adds the last stable offset
// (LSO) and the aborted-transaction index that read_committed fetches need.
//
// The LSO is the high watermark, held back by the first offset of every
// open transaction and of every transaction whose marker is not yet below
// the high watermark (Kafka's unreplicated transactions): a marker the
// ISR does not have yet could be lost with the leader, and the
// transaction would be open again on the next one.
//
// Aborted transactions are kept in memory (they are few: one entry per
// abort) and on disk in Kafka's transaction index format, a file
// <segment base>.txnindex beside each segment, 34-byte entries:
//
//	version int16 (0), producerId int64, firstOffset int64,
//	lastOffset int64 (the abort marker's), lastStableOffset int64
//
// After a restart, the entries below the producer snapshot recovery
// starts from come from those files; the log after it is replayed and
// rebuilds the rest, so an index entry lost in a crash comes back.
type txnState struct {
	mu        sync.Mutex
	openFirst int64                             // the oldest open transaction's first offset, -1: none
	pending   []producer.CompletedTxn           // ended, marker not yet below the high watermark
	aborted   []producer.CompletedTxn           // by marker offset
	byPID     map[int64][]producer.CompletedTxn // aborted, by producer, by marker offset
	onDisk    map[[2]int64]bool                 // (producer, marker offset) of the index files' entries
	// files serializes the writers of the .txnindex files: the appends
	// of new entries (under mu) and the cleaner's rewrites (not under mu,
	// whose holders, every append and fetch, must not wait for its
	// fsyncs). Order: mu, then files.
	files sync.Mutex
}

const txnIndexSuffix = ".txnindex"

// LastStableOffset is the offset below which every transaction is decided:
// a read_committed consumer reads up to it.
func (p *Partition) LastStableOffset() int64 {
	hw := p.HighWatermark()
	t := &p.txns
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for n < len(t.pending) && t.pending[n].LastOffset < hw {
		n++
	}
	if n > 0 {
		t.pending = slices.Delete(t.pending, 0, n)
	}
	lso := hw
	if t.openFirst >= 0 && t.openFirst < lso {
		lso = t.openFirst
	}
	for _, c := range t.pending {
		lso = min(lso, c.FirstOffset)
	}
	return lso
}

// AbortedTxn is an aborted transaction a read_committed consumer must
// drop: the producer and the first offset of its records.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
}

// AbortedTxns are the aborted transactions with records in [from, to).
func (p *Partition) AbortedTxns(from, to int64) []AbortedTxn {
	t := &p.txns
	t.mu.Lock()
	defer t.mu.Unlock()
	i, _ := slices.BinarySearchFunc(t.aborted, from, func(c producer.CompletedTxn, off int64) int {
		return cmpInt64(c.LastOffset, off)
	})
	out := []AbortedTxn{}
	for ; i < len(t.aborted); i++ {
		if c := t.aborted[i]; c.FirstOffset < to {
			out = append(out, AbortedTxn{c.ProducerID, c.FirstOffset})
		}
	}
	return out
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// OpenTxn is a producer's open transaction in this partition.
type OpenTxn struct {
	ProducerID       int64
	Epoch            int16
	FirstOffset      int64
	LastSequence     int32
	LastTimestamp    int64
	CoordinatorEpoch int32
}

// Producers are the partition's producers, for DescribeProducers.
func (p *Partition) Producers() []OpenTxn {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	var out []OpenTxn
	for _, e := range p.producers.Producers() {
		o := OpenTxn{ProducerID: e.ProducerID, Epoch: e.Epoch, FirstOffset: e.CurrentTxnFirstOffset, LastSequence: -1,
			LastTimestamp: e.LastTimestamp, CoordinatorEpoch: e.CoordinatorEpoch}
		if n := len(e.Batches); n > 0 {
			o.LastSequence = e.Batches[n-1].LastSeq
		}
		out = append(out, o)
	}
	slices.SortFunc(out, func(a, b OpenTxn) int { return cmpInt64(a.ProducerID, b.ProducerID) })
	return out
}

// applyLocked records appended batches in the producer state and the
// transaction state. appendMu must be held.
func (p *Partition) applyLocked(batches []byte, now int64) {
	var done []producer.CompletedTxn
	for b, r, ok := record.Split(batches); ok; b, r, ok = record.Split(r) {
		if c := p.producers.Apply(b, now); c != nil {
			done = append(done, *c)
		}
	}
	p.txnsChangedLocked(done, true)
	p.applied.Store(p.Log.LogEndOffset())
}

// txnsChangedLocked takes the transactions that markers ended and the
// producer state's open ones into the LSO and the aborted index; write
// says to add the aborted ones to the index files. appendMu must be held.
func (p *Partition) txnsChangedLocked(done []producer.CompletedTxn, write bool) {
	t := &p.txns
	t.mu.Lock()
	defer t.mu.Unlock()
	t.openFirst = p.producers.FirstUnstableOffset()
	for _, c := range done {
		t.pending = append(t.pending, c)
		if !c.Aborted {
			continue
		}
		t.aborted = append(t.aborted, c)
		t.byPID[c.ProducerID] = append(t.byPID[c.ProducerID], c)
		key := [2]int64{c.ProducerID, c.LastOffset}
		if write && !t.onDisk[key] {
			t.files.Lock()
			err := appendTxnIndex(p.Log.Dir(), p.Log.SegmentBase(c.LastOffset), c, c.LastOffset+1)
			t.files.Unlock()
			if err != nil {
				// The log holds the marker: a restart rebuilds the entry.
				p.logger.Warn("writing the transaction index", "err", err)
			} else {
				t.onDisk[key] = true
			}
		}
	}
}

// loadTxnIndexLocked starts the aborted index of a rebuild: the entries of
// the index files within [log start, from), from being where the replay
// of the log starts. Entries at or past the log end (a truncated tail) are
// removed from the files, and files with nothing left in the log deleted.
// appendMu must be held.
func (p *Partition) loadTxnIndexLocked(from int64) error {
	t := &p.txns
	t.mu.Lock()
	defer t.mu.Unlock()
	t.openFirst, t.pending, t.aborted, t.onDisk, t.byPID = -1, nil, nil, map[[2]int64]bool{}, map[int64][]producer.CompletedTxn{}
	t.files.Lock()
	defer t.files.Unlock()
	dir := p.Log.Dir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	start, end := p.Log.LogStartOffset(), p.Log.LogEndOffset()
	for _, e := range ents {
		digits, ok := strings.CutSuffix(e.Name(), txnIndexSuffix)
		if !ok {
			continue
		}
		if _, err := strconv.ParseInt(digits, 10, 64); err != nil {
			continue
		}
		path := filepath.Join(dir, e.Name())
		entries, err := readTxnIndex(path)
		if err != nil {
			p.logger.Warn("ignoring a transaction index; the log rebuilds it", "file", path, "err", err)
			entries = nil
		}
		var keep []producer.CompletedTxn
		for _, c := range entries {
			if c.LastOffset < end {
				keep = append(keep, c)
			}
		}
		switch {
		case len(keep) == 0 || keep[len(keep)-1].LastOffset < start:
			os.Remove(path)
			continue
		case len(keep) < len(entries):
			if err := writeTxnIndex(path, keep); err != nil {
				return err
			}
		}
		for _, c := range keep {
			t.onDisk[[2]int64{c.ProducerID, c.LastOffset}] = true
			if c.LastOffset >= start && c.LastOffset < from {
				t.aborted = append(t.aborted, c)
			}
		}
	}
	slices.SortFunc(t.aborted, func(a, b producer.CompletedTxn) int { return cmpInt64(a.LastOffset, b.LastOffset) })
	for _, c := range t.aborted {
		t.byPID[c.ProducerID] = append(t.byPID[c.ProducerID], c)
	}
	return nil
}

// abortedAt says whether producerID's batch at offset belongs to one of
// its aborted transactions: the log cleaner's question (log.TxnView).
func (p *Partition) abortedAt(producerID, offset int64) bool {
	t := &p.txns
	t.mu.Lock()
	defer t.mu.Unlock()
	cs := t.byPID[producerID]
	i, _ := slices.BinarySearchFunc(cs, offset, func(c producer.CompletedTxn, off int64) int { return cmpInt64(c.LastOffset, off) })
	return i < len(cs) && cs[i].FirstOffset <= offset
}

// replayBatch is the batch whose header a replay saw: the header itself,
// except for a control batch, whose marker type is in its record, read
// from the log.
func (p *Partition) replayBatch(h record.Batch) (record.Batch, error) {
	if !h.Control() {
		return h, nil
	}
	slice, err := p.Log.Read(h.BaseOffset(), log.ReadOptions{MaxBytes: 1024, MinOneBatch: true, UpTo: -1})
	if err != nil {
		return nil, err
	}
	buf, err := slice.ReadAll()
	slice.Release()
	if err != nil {
		return nil, err
	}
	b, _, ok := record.Split(buf)
	if !ok || b.BaseOffset() != h.BaseOffset() {
		return nil, fmt.Errorf("broker/replica: control batch at %d of %s could not be read", h.BaseOffset(), p.TP)
	}
	return b, nil
}

func appendTxnIndex(dir string, base int64, c producer.CompletedTxn, lso int64) error {
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("%020d%s", base, txnIndexSuffix)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(encodeTxnEntry(nil, c, lso))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func encodeTxnEntry(b []byte, c producer.CompletedTxn, lso int64) []byte {
	be := binary.BigEndian
	b = be.AppendUint16(b, 0)
	b = be.AppendUint64(b, uint64(c.ProducerID))
	b = be.AppendUint64(b, uint64(c.FirstOffset))
	b = be.AppendUint64(b, uint64(c.LastOffset))
	return be.AppendUint64(b, uint64(lso))
}

func writeTxnIndex(path string, cs []producer.CompletedTxn) error {
	var b []byte
	for _, c := range cs {
		b = encodeTxnEntry(b, c, c.LastOffset+1)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// readTxnIndex reads a transaction index; a torn last entry (a crash in
// its write) is dropped.
func readTxnIndex(path string) ([]producer.CompletedTxn, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	ents, err := remotelog.ParseTxnIndex(data)
	if err != nil {
		return nil, err
	}
	out := make([]producer.CompletedTxn, len(ents))
	for i, e := range ents {
		out[i] = producer.CompletedTxn{ProducerID: e.ProducerID, FirstOffset: e.FirstOffset, LastOffset: e.LastOffset, Aborted: true}
	}
	return out, nil
}

// AppendMarker writes a transaction marker for a producer as the leader,
// for WriteTxnMarkers, and returns its offset; the caller waits for the
// high watermark to pass it before the coordinator counts it written. A
// marker of an epoch older than the producer's is INVALID_PRODUCER_EPOCH
// and one from an older coordinator TRANSACTION_COORDINATOR_FENCED, as in
// Kafka's ProducerAppendInfo.appendEndTxnMarker.
//
// A marker of a transactions v2 transaction (tv 2) carries the epoch after
// the transaction's, which is also that of the producer's next
// transaction: it must be strictly newer than the partition's epoch, or a
// late duplicate of it would end that next transaction. An equal epoch is
// the retry of a marker already written only when nothing is open (Kafka
// 4.4's ProducerAppendInfo.checkProducerEpoch).
func (p *Partition) AppendMarker(producerID int64, epoch int16, commit bool, coordinatorEpoch int32, tv int8) (int64, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if e, ok := p.producers.Producers()[producerID]; ok {
		switch {
		case tv >= 2 && epoch == e.Epoch && e.CurrentTxnFirstOffset >= 0 && epoch != math.MaxInt16:
			return 0, &producer.Error{Code: kerr.InvalidProducerEpoch, Reason: fmt.Sprintf("transactions v2 marker of producer %d epoch %d is not newer than its open transaction's", producerID, epoch)}
		case epoch < e.Epoch:
			return 0, &producer.Error{Code: kerr.InvalidProducerEpoch, Reason: fmt.Sprintf("marker of producer %d epoch %d is older than the current %d", producerID, epoch, e.Epoch)}
		case coordinatorEpoch < e.CoordinatorEpoch:
			return 0, &producer.Error{Code: kerr.TransactionCoordinatorFenced, Reason: fmt.Sprintf("marker of coordinator epoch %d, older than %d", coordinatorEpoch, e.CoordinatorEpoch)}
		}
	}
	b, err := record.MarkerBatch(producerID, epoch, commit, coordinatorEpoch, p.now().UnixMilli())
	if err != nil {
		return 0, err
	}
	info, err := p.Log.AppendFromBroker(b, p.LeaderEpoch())
	if err != nil {
		return 0, err
	}
	p.applyLocked(b, p.now().UnixMilli())
	// A produce verified against the transaction this marker ends must
	// not open another.
	delete(p.guards, producerID)
	p.advanceHW()
	return info.LastOffset, nil
}

// AppendFromBroker appends batches this broker's coordinators wrote
// (transactional offset commits, without sequences) as the leader.
func (p *Partition) AppendFromBroker(batches []byte) (int64, error) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	// A fenced producer's offsets are refused as its records are: the
	// epoch check of a produce, under the same lock.
	for b, r, ok := record.Split(batches); ok; b, r, ok = record.Split(r) {
		if e, ok := p.producers.Producers()[b.ProducerID()]; ok && b.ProducerID() >= 0 && b.ProducerEpoch() < e.Epoch {
			return 0, &producer.Error{Code: kerr.InvalidProducerEpoch, Reason: fmt.Sprintf("producer %d epoch %d is older than the current %d", b.ProducerID(), b.ProducerEpoch(), e.Epoch)}
		}
	}
	info, err := p.Log.AppendFromBroker(batches, p.LeaderEpoch())
	if err != nil {
		return 0, err
	}
	p.applyLocked(batches, p.now().UnixMilli())
	p.advanceHW()
	return info.LastOffset, nil
}

// pruneAborted forgets the aborted transactions whose markers retention
// or DeleteRecords removed: no fetch can reach their records any more.
// Their index files go at the next rebuild.
func (p *Partition) pruneAborted() {
	start := p.Log.LogStartOffset()
	t := &p.txns
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for n < len(t.aborted) && t.aborted[n].LastOffset < start {
		delete(t.onDisk, [2]int64{t.aborted[n].ProducerID, t.aborted[n].LastOffset})
		n++
	}
	if n > 0 {
		t.aborted = slices.Delete(t.aborted, 0, n)
		for pid, cs := range t.byPID {
			k := 0
			for k < len(cs) && cs[k].LastOffset < start {
				k++
			}
			if k == len(cs) {
				delete(t.byPID, pid)
			} else if k > 0 {
				t.byPID[pid] = slices.Delete(cs, 0, k)
			}
		}
	}
}

// VerificationGuard ties a transactional produce's verification with the
// coordinator to its append, as Kafka's VerificationGuard: a marker written
// between the two (the transaction ended) clears the producer's guard, and
// the append, which would open a transaction no coordinator knows, is
// refused.
type VerificationGuard struct{ _ byte } // not zero-sized: each is distinct

// BeginTxnVerification says whether the producer has an open transaction
// here at this epoch (its later batches belong to it, and need no
// verification with the coordinator: KIP-890 part 1 verifies the first
// batch of a transaction in each partition); otherwise it gives the guard
// to verify with and pass to AppendTxnAsLeader.
func (p *Partition) BeginTxnVerification(producerID int64, epoch int16) (bool, *VerificationGuard) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if e, ok := p.producers.Producers()[producerID]; ok && e.Epoch == epoch && e.CurrentTxnFirstOffset >= 0 {
		return true, nil
	}
	g := &VerificationGuard{}
	if p.guards == nil {
		p.guards = map[int64]*VerificationGuard{}
	}
	p.guards[producerID] = g
	return false, g
}

// EndTxnVerification forgets a guard whose verification failed.
func (p *Partition) EndTxnVerification(producerID int64, g *VerificationGuard) {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if p.guards[producerID] == g {
		delete(p.guards, producerID)
	}
}

// AppendTxnAsLeader is AppendAsLeaderWithin for a transactional produce:
// its batches join their producer's open transaction, or open one with
// the guard of their verification, which no marker cleared meanwhile.
func (p *Partition) AppendTxnAsLeader(batches []byte, budget *record.Budget, g *VerificationGuard) (AppendResult, error) {
	return p.appendAsLeader(batches, budget, true, g)
}

// checkGuardLocked is AppendTxnAsLeader's check. appendMu must be held.
func (p *Partition) checkGuardLocked(first record.Batch, g *VerificationGuard) error {
	pid := first.ProducerID()
	if e, ok := p.producers.Producers()[pid]; ok && e.Epoch == first.ProducerEpoch() && e.CurrentTxnFirstOffset >= 0 {
		return nil
	}
	if g == nil || p.guards[pid] != g {
		return &producer.Error{Code: kerr.InvalidTxnState, Reason: fmt.Sprintf("producer %d: the transaction ended since the produce was verified", pid)}
	}
	return nil
}
