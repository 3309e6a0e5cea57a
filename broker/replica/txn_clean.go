package replica

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/producer"
	"github.com/tributary-io/tributary/internal/atomicfile"
)

// What the log cleaner asks the partition about its transactions
// (log.TxnView, broker/log/cleaner_txn.go for the rules).

// lastBatches is each producer's last data batch and epoch: the cleaner
// keeps that batch so that the producer's sequence survives in the log.
// A producer with only unsequenced batches (a coordinator's transactional
// offset commits) has its last one too, as in Kafka: otherwise each of its
// markers at the current epoch would be kept.
func (p *Partition) lastBatches() map[int64]log.ProducerLast {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	out := make(map[int64]log.ProducerLast, p.producers.Len())
	for pid, e := range p.producers.Producers() {
		out[pid] = log.ProducerLast{LastDataOffset: e.LastDataOffset(), Epoch: e.Epoch}
	}
	return out
}

// openInSnapshots is, for each producer with an open transaction in a
// producer snapshot on disk, the lowest such snapshot's offset. A snapshot
// that cannot be read is left out: Load would skip it too.
func (p *Partition) openInSnapshots() map[int64]int64 {
	p.snapMu.Lock()
	defer p.snapMu.Unlock()
	out := map[int64]int64{}
	for _, off := range p.snaps.Offsets() {
		st, err := producer.ReadSnapshot(filepath.Join(p.Log.Dir(), producer.SnapshotFileName(off)))
		if err != nil {
			continue
		}
		for pid := range st.OpenTxns() {
			if s, ok := out[pid]; !ok || off < s {
				out[pid] = off
			}
		}
	}
	return out
}

// forgetAborted drops aborted transactions, by producer and marker offset,
// from the .txnindex files, which are rewritten and fsynced, then from the
// in-memory index, before it returns: the cleaner removes their markers
// only after that, and an entry read back after a crash whose marker is
// gone would make read_committed consumers drop the producer's later
// transactional batches.
//
// The files are rewritten under t.files, not t.mu: every append and fetch
// takes t.mu, and the rewrite's directory scan and fsyncs would stall
// them. Only an append of an abort marker (which appends to a file) waits.
// The in-memory entries go after the files: until then a fetch still names
// the aborted transaction, whose batches are still in the log anyway.
func (p *Partition) forgetAborted(keys [][2]int64) error {
	drop := make(map[[2]int64]bool, len(keys))
	var maxOffset int64 = -1
	for _, k := range keys {
		drop[k] = true
		maxOffset = max(maxOffset, k[1])
	}
	t := &p.txns
	t.mu.Lock()
	onDisk := false
	for k := range drop {
		onDisk = onDisk || t.onDisk[k]
	}
	t.mu.Unlock()
	gone := func(c producer.CompletedTxn) bool { return drop[[2]int64{c.ProducerID, c.LastOffset}] }
	if onDisk {
		if err := p.rewriteTxnIndex(gone, maxOffset); err != nil {
			return err
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for k := range drop {
		delete(t.onDisk, k)
	}
	t.aborted = slices.DeleteFunc(t.aborted, gone)
	for pid, cs := range t.byPID {
		if cs = slices.DeleteFunc(cs, gone); len(cs) == 0 {
			delete(t.byPID, pid)
		} else {
			t.byPID[pid] = cs
		}
	}
	return nil
}

// forgetAbortedIOHook, if set (tests), runs while forgetAborted rewrites
// the index files.
var forgetAbortedIOHook func()

// rewriteTxnIndex removes the entries gone says from the .txnindex files,
// durably. An entry is in the file of the segment that held its marker
// when it was written, whose base is at or before the marker: files based
// past maxOffset cannot hold one.
func (p *Partition) rewriteTxnIndex(gone func(producer.CompletedTxn) bool, maxOffset int64) error {
	t := &p.txns
	t.files.Lock()
	defer t.files.Unlock()
	if forgetAbortedIOHook != nil {
		forgetAbortedIOHook()
	}
	dir := p.Log.Dir()
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		digits, ok := strings.CutSuffix(e.Name(), txnIndexSuffix)
		if !ok {
			continue
		}
		base, err := strconv.ParseInt(digits, 10, 64)
		if err != nil || base > maxOffset {
			continue
		}
		path := filepath.Join(dir, e.Name())
		entries, err := readTxnIndex(path)
		if err != nil {
			continue // ignored by loads too
		}
		keep := slices.DeleteFunc(slices.Clone(entries), gone)
		switch {
		case len(keep) == len(entries):
			continue
		case len(keep) == 0:
			err = os.Remove(path)
		default:
			var b []byte
			for _, c := range keep {
				b = encodeTxnEntry(b, c, c.LastOffset+1)
			}
			err = atomicfile.WriteFile(path, b)
		}
		if err != nil {
			return err
		}
	}
	return atomicfile.SyncDir(dir)
}
