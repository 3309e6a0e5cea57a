package log

import (
	"context"
	"errors"
	"path/filepath"
	"time"
)

// CleanerCheckpointFile is Kafka's per-log-dir checkpoint of the first dirty
// offset of each compacted partition (the checkpoint.go text format).
const CleanerCheckpointFile = "cleaner-offset-checkpoint"

// DefaultCleanerBackoff is log.cleaner.backoff.ms's default: how long the
// cleaner sleeps when no log needs cleaning.
const DefaultCleanerBackoff = 15 * time.Second

// dirCleaner is the state of a log dir's cleaner loop, owned by its
// goroutine: like Kafka's single cleaner thread (log.cleaner.threads=1), it
// cleans one log at a time, the dirtiest.
type dirCleaner struct {
	d *Dir
	// firstDirty is each partition's checkpointed first dirty offset, with
	// the Log it belongs to, so that a partition deleted and created again
	// starts over. Entries read from the checkpoint file have no Log yet.
	firstDirty map[TopicPartition]dirtyOffset
	// uncleanable are logs whose cleaning failed, skipped until restart as
	// Kafka does, so that one broken log does not stop the others.
	uncleanable map[*Log]bool
}

type dirtyOffset struct {
	log    *Log
	offset int64
}

func (d *Dir) newCleaner() *dirCleaner {
	c := &dirCleaner{d: d, firstDirty: map[TopicPartition]dirtyOffset{}, uncleanable: map[*Log]bool{}}
	offsets, err := ReadOffsetCheckpoint(filepath.Join(d.cfg.Path, CleanerCheckpointFile))
	if err != nil {
		// Losing it costs one cleaning of every log from its start.
		d.logger.Warn("ignoring unreadable cleaner checkpoint", "err", err)
	}
	for tp, o := range offsets {
		c.firstDirty[tp] = dirtyOffset{offset: o}
	}
	return c
}

// runCleaner is the cleaner loop: clean the dirtiest log whose dirty ratio
// is over its min.cleanable.dirty.ratio, and sleep log.cleaner.backoff.ms
// when there is none.
func (d *Dir) runCleaner() {
	defer d.done.Done()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-d.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	c := d.newCleaner()
	for {
		if !c.cleanDirtiest(ctx) {
			backoff := d.cfg.CleanerBackoff
			if d.cfg.CleanerBackoffNow != nil {
				backoff = d.cfg.CleanerBackoffNow()
			}
			if backoff <= 0 {
				backoff = DefaultCleanerBackoff
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// offsetFor is where l's dirty range starts.
func (c *dirCleaner) offsetFor(l *Log) int64 {
	e, ok := c.firstDirty[l.tp]
	switch {
	case !ok || e.log != nil && e.log != l:
		return l.LogStartOffset()
	case e.log == nil:
		c.firstDirty[l.tp] = dirtyOffset{l, e.offset}
	}
	return e.offset
}

// cleanDirtiest cleans the compacted log with the highest dirty ratio over
// its threshold, and reports whether it cleaned one.
func (c *dirCleaner) cleanDirtiest(ctx context.Context) bool {
	if c.d.Offline() != nil {
		return false // a failed dir is never written again
	}
	var best *Log
	var bestRatio float64
	for _, l := range c.d.Logs() {
		cfg := l.Config()
		if !cfg.Compact || c.uncleanable[l] {
			continue
		}
		r, err := l.cleanableRange(l.now(), c.offsetFor(l), l.cleanBound())
		if err != nil {
			continue // closed: deleted or moved meanwhile
		}
		r.release()
		if ratio := r.dirtyRatio(); r.dirtyBytes > 0 && ratio > cfg.MinCleanableDirtyRatio && ratio > bestRatio {
			best, bestRatio = l, ratio
		}
	}
	if best == nil {
		return false
	}
	// Bounded by the partition's last stable offset (its high watermark
	// when no transaction is open), besides the active segment and
	// min.compaction.lag.ms.
	res, err := best.Clean(ctx, best.now(), c.offsetFor(best), best.cleanBound())
	switch {
	case err == nil:
		c.firstDirty[best.tp] = dirtyOffset{best, res.FirstDirty}
		if err := c.writeCheckpoint(); err != nil {
			c.d.logger.Error("writing the cleaner checkpoint failed", "err", err)
		}
		return true
	case errors.Is(err, ErrClosed), errors.Is(err, context.Canceled):
	case errors.Is(err, ErrCleanAborted), errors.Is(err, ErrCleanerBusy):
		c.d.logger.Info("cleaning postponed", "partition", best.tp.String(), "reason", err)
	default:
		c.uncleanable[best] = true
		c.d.logger.Error("cleaning failed; not cleaning this partition again until restart",
			"partition", best.tp.String(), "err", err)
	}
	return false
}

// writeCheckpoint saves the first dirty offsets of the logs still open.
func (c *dirCleaner) writeCheckpoint() error {
	offsets := map[TopicPartition]int64{}
	for _, l := range c.d.Logs() {
		if e, ok := c.firstDirty[l.tp]; ok && (e.log == nil || e.log == l) {
			offsets[l.tp] = e.offset
		}
	}
	for tp := range c.firstDirty {
		if _, ok := offsets[tp]; !ok {
			delete(c.firstDirty, tp)
		}
	}
	return WriteOffsetCheckpoint(filepath.Join(c.d.cfg.Path, CleanerCheckpointFile), offsets, true)
}
