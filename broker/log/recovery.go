package log

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/tributary-io/tributary/broker/record"
)

// load opens the segments of the partition directory and brings them to a
// consistent state, the way Kafka's LogLoader does:
//
//  1. Leftovers of interrupted operations are finished or undone: .deleted
//     and .cleaned files are removed, .swap files (a cleaning that completed)
//     are installed, stray indexes without a log are removed.
//  2. After a clean shutdown nothing is scanned: the indexes are checked for
//     sanity and only the tail of the active segment, past its last index
//     entry, is read to find the log end.
//  3. After an unclean one, every segment from the one holding the recovery
//     point on is scanned batch by batch (length, magic, CRC, offsets); the
//     indexes are rebuilt from the scan, the first bad batch and everything
//     after it is truncated away, and later segments are deleted.
//  4. In both cases a segment whose index is missing or fails its sanity
//     check is rebuilt from its log (KAFKA-561).
func (l *Log) load(opt Options) error {
	if err := l.completeSwaps(); err != nil {
		return err
	}
	bases, err := l.listSegments()
	if err != nil {
		return err
	}
	if len(bases) == 0 {
		bases = []int64{max(opt.LogStartOffset, 0)}
	}
	segs := make([]*segment, 0, len(bases))
	for i, base := range bases {
		missing := indexMissing(l.dir, base)
		s, err := openSegment(l.dir, base, i == len(bases)-1)
		if err != nil {
			return err
		}
		segs = append(segs, s)
		l.segs.Store(&segs) // so closeSegments sees it on error
		if (missing || s.indexCorrupt) && s.size.Load() > 0 {
			l.logger.Warn("rebuilding missing or corrupt index", "segment", s.path(logSuffix))
			if err := errors.Join(s.offsets.reopenForAppend(), s.times.reopenForAppend()); err != nil {
				return err
			}
			if err := l.recoverSegment(s, nil); err != nil {
				return err
			}
			if i < len(bases)-1 {
				if err := s.seal(); err != nil {
					return err
				}
			}
		}
	}

	cfg := l.cfg.Load()
	interval := int64(cfg.IndexIntervalBytes)
	rp := opt.RecoveryPoint
	from := len(segs) // first segment to scan
	if !opt.CleanShutdown {
		from = sort.Search(len(segs), func(i int) bool { return segs[i].base > rp }) - 1
		from = max(from, 0)
	}
	for i := 0; i < min(from, len(segs)-1); i++ {
		s := segs[i]
		if err := errors.Join(s.offsets.check(s.size.Load()), s.times.check(segs[i+1].base-1)); err != nil {
			l.logger.Warn("rebuilding corrupt index", "err", err)
			if err := s.offsets.reopenForAppend(); err != nil {
				return err
			}
			if err := s.times.reopenForAppend(); err != nil {
				return err
			}
			if err := l.recoverSegment(s, nil); err != nil {
				return err
			}
			if err := s.seal(); err != nil {
				return err
			}
		}
	}
	if opt.CleanShutdown {
		act := segs[len(segs)-1]
		err := act.offsets.check(act.size.Load())
		if err == nil {
			err = act.loadTail(interval)
		}
		if err == nil {
			err = act.times.check(act.nextOffset - 1)
		}
		if err != nil {
			l.logger.Warn("active segment unreadable after a clean shutdown; scanning it", "err", err)
			from = len(segs) - 1
		}
	}
	// Every recovered batch extends the epoch cache, as in Kafka, because a
	// crash may have left the checkpoint behind the log; trusted segments
	// are walked only when the cache was lost altogether.
	var epochErr error // the first; a cache that cannot be written fails the load
	visit := func(b record.Batch) {
		if err := l.epochs.assign(b.PartitionLeaderEpoch(), b.BaseOffset()); err != nil && epochErr == nil {
			epochErr = err
		}
	}
	if len(l.epochs.snapshot()) == 0 {
		for _, s := range segs[:from] {
			walkHeaders(s, visit)
		}
	}
	for i := from; i < len(segs); i++ {
		s := segs[i]
		if i < len(segs)-1 {
			if err := errors.Join(s.offsets.reopenForAppend(), s.times.reopenForAppend()); err != nil {
				return err
			}
		}
		dropped, err := s.recover(interval, visit)
		if err != nil {
			return err
		}
		if dropped > 0 {
			l.logger.Warn("truncated corrupt or torn tail", "segment", s.path(logSuffix), "bytes", dropped, "valid_bytes", s.size.Load())
			// Anything after a corrupt batch cannot be trusted to follow
			// it in offset order; Kafka deletes it too.
			var errs []error
			for _, later := range segs[i+1:] {
				errs = append(errs, later.close())
				for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
					if err := os.Remove(later.path(suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
						errs = append(errs, err)
					}
				}
			}
			// Left on disk, they would come back at the next load as
			// segments after the truncation point.
			if err := errors.Join(errs...); err != nil {
				return fmt.Errorf("broker/log: removing segments after a truncated tail of %s: %w", l.tp, err)
			}
			segs = segs[:i+1]
			l.segs.Store(&segs)
			if err := errors.Join(s.offsets.reopenForAppend(), s.times.reopenForAppend()); err != nil {
				return err
			}
			break
		}
		if i < len(segs)-1 {
			if err := s.seal(); err != nil {
				return err
			}
		}
	}
	if epochErr != nil {
		return fmt.Errorf("broker/log: rebuilding the leader epochs of %s: %w", l.tp, epochErr)
	}
	act := segs[len(segs)-1]
	end := act.nextOffset
	if act.size.Load() == 0 {
		end = act.base
	}
	l.end.Store(end)
	l.start.Store(min(max(opt.LogStartOffset, segs[0].base), end))
	l.recoveryPoint.Store(min(rp, end))
	if opt.CleanShutdown {
		l.recoveryPoint.Store(end)
	}
	if cfg := l.cfg.Load(); cfg.RemoteStorage && !cfg.Compact {
		// The epochs below the local start describe the remote range
		// (EnforceRetention keeps them for a tiered log).
		return l.epochs.truncateFromEnd(end)
	}
	return errors.Join(l.epochs.truncateFromEnd(end), l.epochs.truncateFromStart(l.start.Load()))
}

func (l *Log) recoverSegment(s *segment, visit func(record.Batch)) error {
	dropped, err := s.recover(int64(l.cfg.Load().IndexIntervalBytes), visit)
	if err != nil {
		return err
	}
	if dropped > 0 {
		l.logger.Warn("truncated corrupt batches while rebuilding an index", "segment", s.path(logSuffix), "bytes", dropped)
	}
	return nil
}

// walkHeaders calls visit with each batch header of s, without reading
// records; for rebuilding the leader-epoch cache of trusted segments.
func walkHeaders(s *segment, visit func(record.Batch)) {
	walkHeadersUntil(s, s.size.Load(), visit)
}

func walkHeadersUntil(s *segment, end int64, visit func(record.Batch)) {
	buf := make([]byte, record.HeaderSize)
	for pos := int64(0); ; {
		b, ok := s.header(pos, end, buf)
		if !ok {
			return
		}
		visit(b)
		pos += int64(b.Length()) + record.LogOverhead
	}
}

func indexMissing(dir string, base int64) bool {
	for _, suf := range []string{indexSuffix, timeIndexSuffix} {
		if _, err := os.Stat(filepath.Join(dir, segmentName(base)+suf)); err != nil {
			return true
		}
	}
	return false
}

// listSegments removes leftovers and returns the base offsets of the .log
// files, ascending.
func (l *Log) listSegments() ([]int64, error) {
	ents, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, err
	}
	logs := map[int64]bool{}
	var indexes []string
	for _, e := range ents {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, deletedSuffix), strings.HasSuffix(name, cleanedSuffix), strings.HasSuffix(name, ".tmp"):
			// Gone already is fine: a delayed delete of an earlier
			// instance of this log (in the same process) may win the race.
			if err := os.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, err
			}
		case strings.HasSuffix(name, logSuffix):
			base, err := parseBase(name, logSuffix)
			if err != nil {
				return nil, err
			}
			logs[base] = true
		case strings.HasSuffix(name, indexSuffix), strings.HasSuffix(name, timeIndexSuffix):
			indexes = append(indexes, name)
		}
	}
	for _, name := range indexes {
		base, err := parseBase(name, filepath.Ext(name))
		if err == nil && !logs[base] {
			// A stray index left would be taken for the index of a later
			// segment with this base.
			if err := os.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, err
			}
		}
	}
	bases := make([]int64, 0, len(logs))
	for b := range logs {
		bases = append(bases, b)
	}
	sort.Slice(bases, func(i, j int) bool { return bases[i] < bases[j] })
	return bases, nil
}

func parseBase(name, suffix string) (int64, error) {
	digits := strings.TrimSuffix(name, suffix)
	base, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || len(digits) != 20 || base < 0 {
		return 0, fmt.Errorf("broker/log: %q is not a segment file name (20-digit base offset)", name)
	}
	return base, nil
}

// completeSwaps installs the output of a cleaning that crashed after its
// commit point and before it replaced the segments it cleaned. The cleaner
// writes its output as .cleaned files, and its commit point is the rename of
// the cleaned log to .log.swap, so a .log.swap is always whole. Its base
// offset is that of the first segment it replaces; every other segment whose
// base lies within the swap's offsets is one it replaces too. The indexes of
// an installed swap are dropped and rebuilt from it, which is cheaper to get
// right than ordering three renames.
func (l *Log) completeSwaps() error {
	ents, err := os.ReadDir(l.dir)
	if err != nil {
		return err
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, swapSuffix) {
			continue
		}
		if !strings.HasSuffix(name, logSuffix+swapSuffix) {
			// An index's swap: rebuilt instead.
			if err := os.Remove(filepath.Join(l.dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			continue
		}
		base, err := parseBase(strings.TrimSuffix(name, swapSuffix), logSuffix)
		if err != nil {
			return err
		}
		last, err := lastOffsetIn(filepath.Join(l.dir, name), base)
		if err != nil {
			return fmt.Errorf("broker/log: install %s: %w", name, err)
		}
		bases, err := l.listSegments()
		if err != nil {
			return err
		}
		for _, b := range bases {
			if b >= base && b <= last {
				// A replaced segment left beside the swap would be loaded
				// with it: its records twice, the removed ones back.
				for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
					if err := os.Remove(filepath.Join(l.dir, segmentName(b)+suf)); err != nil && !errors.Is(err, os.ErrNotExist) {
						return fmt.Errorf("broker/log: install %s: %w", name, err)
					}
				}
			}
		}
		final := strings.TrimSuffix(name, swapSuffix)
		if err := os.Rename(filepath.Join(l.dir, name), filepath.Join(l.dir, final)); err != nil {
			return fmt.Errorf("broker/log: install %s: %w", name, err)
		}
		l.logger.Info("installed cleaned segment left by an interrupted swap", "file", final)
	}
	return nil
}

// lastOffsetIn walks the batch headers of a log file and returns the last
// offset of its last whole batch, or base-1 for none.
func lastOffsetIn(path string, base int64) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	s := &segment{base: base, log: f}
	last := base - 1
	walkHeadersUntil(s, st.Size(), func(b record.Batch) { last = b.LastOffset() })
	return last, nil
}
