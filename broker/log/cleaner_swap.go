package log

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/internal/atomicfile"
)

// cleanPass is one cleaning of a log: the offset map and what it has done.
type cleanPass struct {
	log  *Log
	om   *offsetMap
	now  int64 // ms
	cfg  *Config
	hook cleanHook
	res  *CleanResult
	txns *txnCleaning
}

// cleanGroup writes the survivors of a group of segments, verify[:n], into
// one cleaned segment and installs it in their place. verify also holds the
// mapped segments after the group, which must be unchanged too: a record
// the map remembers makes older ones disappear only while it exists.
func (p *cleanPass) cleanGroup(ctx context.Context, verify []*segment, n int, marks map[*segment]segmentMark) error {
	l := p.log
	group := verify[:n]
	// Created under mu, so that a Delete (which marks the log closed under
	// mu, then removes its directory) either sees these files or stops us.
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	out, err := createCleaned(l.dir, group[0].base, int64(p.cfg.IndexIntervalBytes))
	l.mu.Unlock()
	if err != nil {
		return l.cleanFailed(err, verify, marks)
	}
	keep := false // the files must survive: committed, or left for a crash test
	defer func() {
		if !keep {
			out.discard()
		}
	}()
	var before int64
	var st filterStats
	changed := len(group) > 1 // merging segments is itself worth a swap
	var copied, rewritten, dropped int64
	for _, s := range group {
		before += s.size.Load()
		err := forEachBatch(ctx, s, func(b record.Batch, _ int64) error {
			kept, v, bs, err := filterBatch(b, p.om, p.now, p.cfg, p.txns.decide(b, p.now))
			if err != nil {
				return fmt.Errorf("batch at offset %d of %s: %w", b.BaseOffset(), s.log.Name(), err)
			}
			st.read += bs.read
			st.removed += bs.removed
			st.tombstonesRemoved += bs.tombstonesRemoved
			st.markersRemoved += bs.markersRemoved
			if bs.undecodable > 0 {
				l.logger.Warn("cleaner kept a batch whose records do not decode", "segment", s.log.Name(),
					"base_offset", b.BaseOffset())
			}
			switch v {
			case batchCopied:
				copied++
			case batchRewritten:
				rewritten++
				changed = true
			case batchDropped:
				dropped++
				changed = true
			}
			if kept == nil {
				return nil
			}
			return out.add(kept)
		})
		if err != nil {
			return l.cleanFailed(err, verify, marks)
		}
	}
	p.res.RecordsRead += st.read
	// Before the install: an index entry must never outlive its marker,
	// and this group's output may drop markers whose entries go here
	// (those found without batches in an earlier pass, or this one).
	if err := p.txns.forgetAborted(); err != nil {
		return fmt.Errorf("broker/log: cleaning %s: dropping aborted transactions from the index: %w", l.tp, err)
	}
	if !changed {
		// Nothing to remove: leave the segment and its readers alone.
		p.res.BatchesCopied += copied
		return nil
	}
	if err := out.finish(); err != nil {
		return l.cleanFailed(err, verify, marks)
	}
	after := out.size()
	if p.hook.stop(stageWritten) {
		keep = true
		return errSimulatedCrash
	}
	keep, err = l.replaceSegments(verify, n, marks, p.hook)
	if err != nil {
		return err
	}
	p.res.SegmentsBefore += len(group)
	p.res.SegmentsAfter++
	p.res.BytesBefore += before
	p.res.BytesAfter += after
	p.res.RecordsRemoved += st.removed
	p.res.TombstonesRemoved += st.tombstonesRemoved
	p.res.MarkersRemoved += st.markersRemoved
	p.res.BatchesCopied += copied
	p.res.BatchesRewritten += rewritten
	p.res.BatchesDropped += dropped
	l.logger.Debug("cleaned segments", "base_offset", group[0].base, "segments", len(group),
		"bytes_before", before, "bytes_after", after, "records_removed", st.removed)
	return nil
}

// replaceSegments installs the finished .cleaned output of a group,
// verify[:n], in its place. keep reports that the output files must stay:
// past the commit point recovery installs them, and a test hook's simulated
// crash wants them left.
//
// The order is what load's completeSwaps expects after a crash at any step:
//
//  1. Under mu, check that the group and the mapped segments after it are
//     still there as they were read; retention, DeleteRecords and
//     truncation take mu too, so nothing changes them from here on. If they
//     changed, the output is discarded: installing it would bring back
//     deleted data, or lose records whose newer version was truncated.
//  2. Rename <base>.log.cleaned to <base>.log.swap and fsync the directory:
//     the commit point. From here, a crash installs the swap and removes
//     the segments whose bases lie within its offsets; any other segment of
//     the group holds only records the cleaning removed, so keeping it
//     costs space, never correctness. (The directory fsyncs happen under
//     mu, as in Kafka's replaceSegments: an install is short and rare.)
//  3. Rename the old segments' files .deleted (deleteSegmentLocked): readers
//     holding them read on for file.delete.delay.ms.
//  4. Rename the cleaned indexes and then the swap to their final names,
//     and fsync the directory. A crash between the two leaves indexes
//     without a log, which load removes and rebuilds.
//  5. Open the new segment, sealed, and publish the new list.
func (l *Log) replaceSegments(verify []*segment, n int, marks map[*segment]segmentMark, hook cleanHook) (keep bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false, ErrClosed
	}
	if !l.unchangedLocked(verify, marks) {
		return false, ErrCleanAborted
	}
	group := verify[:n]
	if hook.stop(stageBeforeCommit) {
		return true, errSimulatedCrash
	}
	base := group[0].base
	name := func(suffix string) string { return filepath.Join(l.dir, segmentName(base)+suffix) }
	if err := os.Rename(name(logSuffix+cleanedSuffix), name(logSuffix+swapSuffix)); err != nil {
		return false, fmt.Errorf("broker/log: commit cleaned segment %d of %s: %w", base, l.tp, err)
	}
	// Past the commit point, a failure leaves the log for recovery to
	// finish: the swap is whole and load installs it.
	fail := func(err error) (bool, error) {
		l.logger.Error("installing a cleaned segment failed after its commit point; a restart completes it",
			"base_offset", base, "err", err)
		return true, fmt.Errorf("broker/log: install cleaned segment %d of %s: %w", base, l.tp, err)
	}
	if err := atomicfile.SyncDir(l.dir); err != nil {
		return fail(err)
	}
	if hook.stop(stageCommitted) {
		return true, errSimulatedCrash
	}
	for _, s := range group {
		if err := l.deleteSegmentLocked(s); err != nil {
			return fail(err)
		}
	}
	if hook.stop(stageOldDeleted) {
		return true, errSimulatedCrash
	}
	err = errors.Join(
		os.Rename(name(indexSuffix+cleanedSuffix), name(indexSuffix)),
		os.Rename(name(timeIndexSuffix+cleanedSuffix), name(timeIndexSuffix)),
	)
	if err == nil {
		err = os.Rename(name(logSuffix+swapSuffix), name(logSuffix))
	}
	if err == nil {
		err = atomicfile.SyncDir(l.dir)
	}
	if err != nil {
		return fail(err)
	}
	seg, err := openSegment(l.dir, base, false)
	if err != nil {
		return fail(err)
	}
	cur := l.segments()
	i := 0
	for cur[i] != group[0] {
		i++
	}
	segs := make([]*segment, 0, len(cur)-len(group)+1)
	segs = append(append(append(segs, cur[:i]...), seg), cur[i+len(group):]...)
	l.segs.Store(&segs)
	return true, nil
}
