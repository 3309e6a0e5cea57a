package log

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// The log cleaner compacts logs whose cleanup.policy includes compact: it
// keeps the last record of each key, as Apache Kafka's LogCleaner does.
//
// A log is cut in three at the time of a cleaning:
//
//	[log start ........ firstDirty ........ firstUncleanable ...... log end)
//	   clean: cleaned before   dirty: appended since   uncleanable: the active
//	                                                   segment, segments within
//	                                                   min.compaction.lag.ms,
//	                                                   offsets past upTo
//
// A cleaning builds a map key → last offset over the dirty segments, then
// rewrites every segment from the log start up to the end of the map, in
// groups that fit one segment, keeping a record only if no later record has
// its key. Offsets never change: compaction leaves gaps, which readers skip.
// Uncleanable segments are neither mapped nor rewritten, so a record stays
// readable for at least min.compaction.lag.ms and the active segment stays
// append-only.
//
// Each group is written beside the log as <base>.log.cleaned (+ .index.cleaned,
// .timeindex.cleaned) and fsynced; the commit point is the rename of the
// cleaned log to <base>.log.swap, made under Log.mu only after checking that
// retention or truncation has not changed the segments it replaces; then the
// old segments are renamed .deleted and the new files take their names. A
// crash before the commit point leaves .cleaned files, which load discards; a
// crash after it leaves a .log.swap, which load installs (completeSwaps). The
// cleaner reads the segments it cleans without Log.mu, since only retention
// and truncation change an inactive segment and the install step detects
// both; appends and reads go on while it works.
//
// The first dirty offset of each partition is kept in the log dir's
// cleaner-offset-checkpoint (CleanerCheckpointFile), written by the Dir's
// cleaner loop after each cleaning.

var (
	// ErrNotCompacted is Clean on a log whose cleanup.policy has no compact.
	ErrNotCompacted = errors.New("broker/log: cleanup.policy does not include compact")
	// ErrCleanerBusy is Clean on a log that is being cleaned already.
	ErrCleanerBusy = errors.New("broker/log: log is already being cleaned")
	// ErrCleanAborted is a cleaning whose segments retention, DeleteRecords
	// or truncation changed while it worked. Its output was discarded;
	// groups installed before the change stay, and the next cleaning
	// starts again from the same first dirty offset.
	ErrCleanAborted = errors.New("broker/log: segments changed during cleaning; output discarded")
)

// CleanResult describes one cleaning.
type CleanResult struct {
	// FirstDirty is the first offset not cleaned: what the caller
	// checkpoints and passes to the next Clean. It is the base of a segment.
	FirstDirty int64
	// FirstUncleanable is where the dirty range ended.
	FirstUncleanable int64

	SegmentsBefore, SegmentsAfter int   // segments rewritten and written
	BytesBefore, BytesAfter       int64 // their sizes
	RecordsRead, RecordsRemoved   int64
	TombstonesRemoved             int64
	MarkersRemoved                int64 // transaction markers, past their delete horizon
	BatchesCopied                 int64 // kept byte for byte
	BatchesRewritten              int64 // recompressed without the removed records
	BatchesDropped                int64 // no record survived
	Duration                      time.Duration
}

// Clean compacts the log once, whatever its dirty ratio (the Dir's cleaner
// loop is what applies min.cleanable.dirty.ratio). firstDirty is the offset
// the previous cleaning returned as CleanResult.FirstDirty, or the log start
// for a log never cleaned; a value outside the log is taken as the log start,
// as Kafka does after a truncation. upTo is the exclusive offset cleaning
// must not pass, the partition's last stable offset (at most its high
// watermark), so that records a new leader might truncate never make older
// ones disappear; negative means only the active segment and
// min.compaction.lag.ms bound it. now decides min.compaction.lag.ms and
// tombstone delete horizons.
//
// Clean reads and writes files for as long as the dirty range takes, without
// blocking appends and reads; ctx aborts it between batches.
func (l *Log) Clean(ctx context.Context, now time.Time, firstDirty, upTo int64) (CleanResult, error) {
	return l.clean(ctx, now, firstDirty, upTo, cleanKnobs{})
}

// cleaning holds the logs being cleaned: a second cleaner on the same log
// would write the same .cleaned files. (A map here rather than a Log field
// keeps the cleaner's state out of the appender's struct.)
var cleaning sync.Map // *Log → struct{}

// cleanStage names the points of a group's install at which tests simulate
// a crash.
type cleanStage int

const (
	stageWritten      cleanStage = iota // output fsynced; Log.mu not held
	stageBeforeCommit                   // Log.mu held, segments verified, no .swap yet
	stageCommitted                      // .log.swap written, old segments untouched
	stageOldDeleted                     // old segments renamed .deleted, .swap not yet renamed
)

func (s cleanStage) String() string {
	switch s {
	case stageWritten:
		return "written"
	case stageBeforeCommit:
		return "before-commit"
	case stageCommitted:
		return "committed"
	case stageOldDeleted:
		return "old-deleted"
	}
	return fmt.Sprintf("stage(%d)", int(s))
}

// cleanHook is called at each stage; true stops the cleaning there, leaving
// the files as a crash would (errSimulatedCrash). Nil in production.
type cleanHook func(cleanStage) bool

var errSimulatedCrash = errors.New("broker/log: cleaner stopped by a test hook")

func (h cleanHook) stop(s cleanStage) bool { return h != nil && h(s) }

// cleanKnobs are what tests change in a cleaning; the zero value is
// production's.
type cleanKnobs struct {
	hook      cleanHook
	mapBudget int64 // 0 is offsetMapBudget
}

func (l *Log) clean(ctx context.Context, now time.Time, firstDirty, upTo int64, k cleanKnobs) (CleanResult, error) {
	if _, busy := cleaning.LoadOrStore(l, struct{}{}); busy {
		return CleanResult{FirstDirty: firstDirty}, ErrCleanerBusy
	}
	defer cleaning.Delete(l)
	began := time.Now()
	cfg := l.cfg.Load()
	if !cfg.Compact {
		return CleanResult{FirstDirty: firstDirty}, ErrNotCompacted
	}
	if l.isClosed() {
		return CleanResult{FirstDirty: firstDirty}, ErrClosed
	}
	// The segments are held for the whole pass: the cleaner reads them
	// without mu while retention or truncation may remove them.
	r, err := l.cleanableRange(now, firstDirty, upTo)
	if err != nil {
		return CleanResult{FirstDirty: firstDirty}, err
	}
	defer r.release()
	res := CleanResult{FirstDirty: r.firstDirty, FirstUncleanable: r.segs[r.uncleanable].base}
	if r.dirtyFrom >= r.uncleanable {
		return res, nil
	}
	// Marked before anything is read, so that a change made while the
	// cleaner reads is seen at install time.
	marks := make(map[*segment]segmentMark, r.uncleanable)
	for _, s := range r.segs[:r.uncleanable] {
		marks[s] = markSegment(s)
	}
	budget := k.mapBudget
	if budget == 0 {
		budget = offsetMapBudget
	}
	om, mapped, err := buildOffsetMap(ctx, r.segs, r.dirtyFrom, r.uncleanable, budget, l.abortedBatch)
	if err != nil {
		return res, l.cleanFailed(err, r.segs[r.dirtyFrom:r.uncleanable], marks)
	}
	groups := groupSegments(r.segs, mapped, cfg)
	p := &cleanPass{log: l, om: om, now: now.UnixMilli(), cfg: cfg, hook: k.hook, res: &res, txns: newTxnCleaning(l)}
	from := 0
	for _, g := range groups {
		// A group's output is only valid while the segments it was
		// read from and those the offset map was built from are
		// unchanged: the group's and every later mapped one.
		if err := p.cleanGroup(ctx, r.segs[from:mapped], len(g), marks); err != nil {
			return res, err
		}
		from += len(g)
	}
	res.FirstDirty = r.segs[mapped].base
	res.Duration = time.Since(began)
	logAt := slog.LevelInfo
	if res.SegmentsBefore == 0 {
		logAt = slog.LevelDebug // nothing was removed
	}
	l.logger.Log(ctx, logAt, "cleaned log",
		"first_dirty", res.FirstDirty,
		"segments_before", res.SegmentsBefore, "segments_after", res.SegmentsAfter,
		"bytes_before", res.BytesBefore, "bytes_after", res.BytesAfter,
		"records_read", res.RecordsRead, "records_removed", res.RecordsRemoved,
		"tombstones_removed", res.TombstonesRemoved, "markers_removed", res.MarkersRemoved,
		"batches_copied", res.BatchesCopied, "batches_rewritten", res.BatchesRewritten, "batches_dropped", res.BatchesDropped,
		"offset_map_keys", len(om.last), "duration", res.Duration)
	return res, nil
}

func (l *Log) isClosed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.closed
}

// cleanFailed explains an error met while reading segments without Log.mu:
// it is expected when the log was closed or the segments were deleted under
// the cleaner, and a real failure otherwise.
func (l *Log) cleanFailed(err error, segs []*segment, marks map[*segment]segmentMark) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if !l.unchangedLocked(segs, marks) {
		return fmt.Errorf("%w (%v)", ErrCleanAborted, err)
	}
	return fmt.Errorf("broker/log: cleaning %s: %w", l.tp, err)
}

// cleanRange is a snapshot of the log's segments cut at the cleaner's
// offsets.
type cleanRange struct {
	segs        []*segment
	firstDirty  int64
	dirtyFrom   int // index of the segment holding firstDirty
	uncleanable int // index of the first segment that may not be cleaned
	cleanBytes  int64
	dirtyBytes  int64
}

// dirtyRatio is Kafka's cleanable ratio: dirty bytes over the bytes of the
// clean and dirty segments.
func (r cleanRange) dirtyRatio() float64 {
	if r.dirtyBytes == 0 {
		return 0
	}
	return float64(r.dirtyBytes) / float64(r.cleanBytes+r.dirtyBytes)
}

// release lets the range's segments close.
func (r cleanRange) release() { releaseAll(r.segs) }

// cleanableRange cuts the log as Kafka's LogCleanerManager.cleanableOffsets
// does. Safe without Log.mu: it reads the published segment list, every
// segment of which it acquires; the caller releases them (r.release).
func (l *Log) cleanableRange(now time.Time, firstDirty, upTo int64) (cleanRange, error) {
	segs, err := l.acquireSegments()
	if err != nil {
		return cleanRange{}, err
	}
	cfg := l.cfg.Load()
	start, end := l.start.Load(), l.end.Load()
	active := len(segs) - 1
	// The cleaner only ever checkpoints a segment base at or below the
	// active segment's, so anything above it means the log was truncated
	// (or recreated) since: clean it all again, as Kafka does for an
	// offset outside the log.
	if firstDirty < start || firstDirty > end || firstDirty > segs[active].base {
		firstDirty = start
	}
	r := cleanRange{segs: segs, firstDirty: firstDirty, uncleanable: active}
	for r.dirtyFrom+1 < len(segs) && segs[r.dirtyFrom+1].base <= firstDirty {
		r.dirtyFrom++
	}
	lag := cfg.MinCompactionLagMs.Milliseconds()
	for i := r.dirtyFrom; i < active; i++ {
		tooNew := lag > 0 && segs[i].largestTimestamp() > now.UnixMilli()-lag
		pastUpTo := upTo >= 0 && segs[i+1].base > upTo
		if tooNew || pastUpTo {
			r.uncleanable = i
			break
		}
	}
	for i, s := range segs[:r.uncleanable] {
		if i < r.dirtyFrom {
			r.cleanBytes += s.size.Load()
		} else {
			r.dirtyBytes += s.size.Load()
		}
	}
	return r, nil
}

// segmentMark identifies the state of an inactive segment. Truncation and
// recovery replace an index's published entries (reopenForAppend,
// truncateEntries, reset), and close empties them, so the same entry
// pointers and size mean the segment was left alone.
type segmentMark struct {
	size           int64
	offsets, times *[]byte
}

func markSegment(s *segment) segmentMark {
	// Map the indexes first, so the pointers are those of the mapping.
	s.offsets.entries()
	s.times.entries()
	return segmentMark{size: s.size.Load(), offsets: s.offsets.data.Load(), times: s.times.data.Load()}
}

// unchangedLocked reports whether segs are still, in order, inactive
// segments of the log, in the state marked. mu must be held.
func (l *Log) unchangedLocked(segs []*segment, marks map[*segment]segmentMark) bool {
	cur := l.segments()
	i := 0
	for i < len(cur) && cur[i] != segs[0] {
		i++
	}
	if i+len(segs) >= len(cur) { // missing, or reaching the active segment
		return false
	}
	for k, s := range segs {
		m, ok := marks[s]
		if cur[i+k] != s || !ok || markSegment(s) != m {
			return false
		}
	}
	return true
}
