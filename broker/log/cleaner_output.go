package log

import (
	"errors"
	"os"
	"path/filepath"
)

// cleanedSegment is the cleaner's output for one group: a segment whose
// three files carry the .cleaned suffix until the install renames them.
// Only the cleaner touches it until then.
type cleanedSegment struct {
	seg      *segment
	buf      []byte // batches not yet written
	interval int64  // index.interval.bytes
}

// cleanerWriteBuffer is how much output the cleaner gathers per write.
const cleanerWriteBuffer = 1 << 20

func cleanedPath(dir string, base int64, suffix string) string {
	return filepath.Join(dir, segmentName(base)+suffix+cleanedSuffix)
}

// createCleaned starts the output of a group whose first segment is base,
// replacing leftovers of an earlier attempt.
func createCleaned(dir string, base int64, interval int64) (*cleanedSegment, error) {
	removeCleaned(dir, base)
	f, err := os.OpenFile(cleanedPath(dir, base, logSuffix), os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	oi, err := newIndex(cleanedPath(dir, base, indexSuffix), entrySize, true)
	if err != nil {
		f.Close()
		return nil, err
	}
	ti, err := newIndex(cleanedPath(dir, base, timeIndexSuffix), timeEntrySize, true)
	if err != nil {
		f.Close()
		oi.close()
		return nil, err
	}
	s := &segment{base: base, dir: dir, log: f, maxTimestamp: -1, maxTsOffset: -1, nextOffset: base, firstTimestamp: -1,
		offsets: offsetIndex{oi, base}, times: timeIndex{ti, base}}
	s.largestTs.Store(-1)
	return &cleanedSegment{seg: s, interval: interval}, nil
}

// add queues one batch; the segment indexes it as an append would, so the
// output's indexes are what a log holding only these batches would have.
func (c *cleanedSegment) add(b []byte) error {
	c.buf = append(c.buf, b...)
	if len(c.buf) >= cleanerWriteBuffer {
		return c.writeOut()
	}
	return nil
}

func (c *cleanedSegment) writeOut() error {
	if len(c.buf) == 0 {
		return nil
	}
	err := c.seg.appendBatches(c.buf, c.interval)
	c.buf = c.buf[:0]
	return err
}

// size is the bytes added so far.
func (c *cleanedSegment) size() int64 { return c.seg.size.Load() + int64(len(c.buf)) }

// finish writes what is queued, adds the final time index entry a sealed
// segment gets, fsyncs the three files and closes them: the install reopens
// them under their final names.
func (c *cleanedSegment) finish() error {
	if err := c.writeOut(); err != nil {
		return err
	}
	s := c.seg
	if s.maxTimestamp >= 0 {
		s.times.maybeAdd(s.maxTimestamp, s.maxTsOffset)
	}
	return errors.Join(s.sync(), s.close())
}

// discard closes and removes the output.
func (c *cleanedSegment) discard() {
	c.seg.close()
	removeCleaned(c.seg.dir, c.seg.base)
}

func removeCleaned(dir string, base int64) {
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		os.Remove(cleanedPath(dir, base, suf))
	}
}
