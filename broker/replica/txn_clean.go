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
// from the in-memory index and from the .txnindex files, which are
// rewritten and fsynced before it returns: the cleaner removes their
// markers only after that, and an entry read back after a crash whose
// marker is gone would make read_committed consumers drop the producer's
// later transactional batches.
func (p *Partition) forgetAborted(keys [][2]int64) error {
	drop := make(map[[2]int64]bool, len(keys))
	for _, k := range keys {
		drop[k] = true
	}
	t := &p.txns
	t.mu.Lock()
	defer t.mu.Unlock()
	onDisk := false
	for k := range drop {
		onDisk = onDisk || t.onDisk[k]
		delete(t.onDisk, k)
	}
	gone := func(c producer.CompletedTxn) bool { return drop[[2]int64{c.ProducerID, c.LastOffset}] }
	t.aborted = slices.DeleteFunc(t.aborted, gone)
	for pid, cs := range t.byPID {
		if cs = slices.DeleteFunc(cs, gone); len(cs) == 0 {
			delete(t.byPID, pid)
		} else {
			t.byPID[pid] = cs
		}
	}
	if !onDisk {
		return nil
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
		if _, err := strconv.ParseInt(digits, 10, 64); err != nil {
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
