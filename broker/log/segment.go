package log

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/record"
)

// File suffixes of a segment. A segment is named by its base offset in 20
// digits, as Kafka names it: 00000000000000001200.log.
const (
	logSuffix       = ".log"
	indexSuffix     = ".index"
	timeIndexSuffix = ".timeindex"
	deletedSuffix   = ".deleted" // renamed for deletion, removed after file.delete.delay.ms
	cleanedSuffix   = ".cleaned" // cleaner output being written; discarded on recovery
	swapSuffix      = ".swap"    // cleaner output complete; installed on recovery
)

func segmentName(base int64) string { return fmt.Sprintf("%020d", base) }

// segment is one .log file and its two indexes.
//
// Readers use log (ReadAt is safe concurrently), size and the indexes'
// published entries. Everything else belongs to the owning Log's appender,
// under Log.mu.
type segment struct {
	base int64
	dir  string
	log  *os.File
	size atomic.Int64 // bytes of whole batches visible to readers

	offsets offsetIndex
	times   timeIndex
	// largestTs publishes maxTimestamp to readers; -1 until known.
	largestTs atomic.Int64

	bytesSinceIndex int64
	maxTimestamp    int64 // largest batch max timestamp, -1 for none
	maxTsOffset     int64 // last offset of the batch that carried it
	nextOffset      int64 // one past the last batch's last offset; base when empty
	firstTimestamp  int64 // first batch's max timestamp, for segment.ms; -1 when empty
	created         time.Time
	indexCorrupt    bool // found unreadable on open; load rebuilds it
	tail            tailRef

	// refs counts the segment's holders: the owning Log while the segment
	// is in its list or waiting out file.delete.delay.ms, plus every reader
	// inside it (lifetime.go). The files close when it reaches zero.
	refs atomic.Int64
	// ownerDropped makes the Log's reference droppable once only: Close
	// and Delete may both reach a segment.
	ownerDropped atomic.Bool
	// owner is set when the Log drops its reference; the last release
	// reports through it.
	owner *Log
}

func (s *segment) path(suffix string) string {
	return filepath.Join(s.dir, segmentName(s.base)+suffix)
}

// openSegment opens the files of the segment at base, creating what is
// missing. It does not read the log: load or recover does.
func openSegment(dir string, base int64, active bool) (*segment, error) {
	s := &segment{base: base, dir: dir, maxTimestamp: -1, maxTsOffset: -1, nextOffset: base, firstTimestamp: -1}
	s.largestTs.Store(-1)
	s.refs.Store(1) // the Log's
	s.created = time.Now()
	f, err := os.OpenFile(s.path(logSuffix), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	s.log = f
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	s.size.Store(st.Size())
	oi, err := newIndex(s.path(indexSuffix), entrySize, active)
	if errors.Is(err, errCorruptIndex) {
		s.indexCorrupt = true
		// A failed truncate must not pass for a rebuilt index.
		if err = os.Truncate(s.path(indexSuffix), 0); err == nil {
			oi, err = newIndex(s.path(indexSuffix), entrySize, active)
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	ti, err := newIndex(s.path(timeIndexSuffix), timeEntrySize, active)
	if errors.Is(err, errCorruptIndex) {
		s.indexCorrupt = true
		if err = os.Truncate(s.path(timeIndexSuffix), 0); err == nil {
			ti, err = newIndex(s.path(timeIndexSuffix), timeEntrySize, active)
		}
	}
	if err != nil {
		f.Close()
		oi.close()
		return nil, err
	}
	s.offsets = offsetIndex{oi, base}
	s.times = timeIndex{ti, base}
	return s, nil
}

// header reads the batch header at pos. ok is false at the end of the
// segment or at a torn batch.
func (s *segment) header(pos, end int64, buf []byte) (record.Batch, bool) {
	if end-pos < record.HeaderSize {
		return nil, false
	}
	h := buf[:record.HeaderSize]
	if _, err := s.log.ReadAt(h, pos); err != nil {
		return nil, false
	}
	b := record.Batch(h)
	if n := int64(b.Length()) + record.LogOverhead; n < record.HeaderSize || pos+n > end || b.Magic() != record.Magic {
		return nil, false
	}
	return b, true
}

// find is the position of the first batch at or after startPos, before end,
// whose last offset is at least offset; found is false when there is none.
// Bytes that are not a batch header before end are an error wrapping
// kerr.CorruptMessage: skipping them would silently skip records.
func (s *segment) find(offset, startPos, end int64) (pos int64, h record.Batch, found bool, err error) {
	buf := make([]byte, record.HeaderSize)
	for pos = startPos; ; {
		b, ok := s.header(pos, end, buf)
		if !ok && pos < end {
			if startPos > 0 {
				// The index led into something that is not a batch:
				// distrust it and walk from the segment's start.
				pos, startPos = 0, 0
				continue
			}
			return pos, nil, false, s.corruptAt(pos)
		}
		if !ok {
			return pos, nil, false, nil
		}
		if b.LastOffset() >= offset {
			return pos, b, true, nil
		}
		pos += int64(b.Length()) + record.LogOverhead
	}
}

// next is the batch after the one h at pos; ok is false at the end, err
// set at bytes that are not a batch.
func (s *segment) next(pos int64, h record.Batch, end int64, buf []byte) (int64, record.Batch, bool, error) {
	pos += int64(h.Length()) + record.LogOverhead
	b, ok := s.header(pos, end, buf)
	if !ok && pos < end {
		return pos, nil, false, s.corruptAt(pos)
	}
	return pos, b, ok, nil
}

func (s *segment) corruptAt(pos int64) error {
	return &record.Error{Kafka: kerr.CorruptMessage, Reason: fmt.Sprintf("%s: no valid batch at byte %d", s.log.Name(), pos)}
}

// appendBatches writes whole, offset-assigned batches at the end and indexes
// them. Only the appender calls it.
func (s *segment) appendBatches(data []byte, intervalBytes int64) error {
	pos := s.size.Load()
	if _, err := s.log.WriteAt(data, pos); err != nil {
		return fmt.Errorf("broker/log: write %s: %w", s.log.Name(), err)
	}
	tail := s.tail.Load()
	if tail == nil {
		tail = new(tailBatches)
		s.tail.Store(tail)
	}
	for rest := data; len(rest) > 0; {
		b, r, _ := record.Split(rest)
		s.indexBatch(b, pos, intervalBytes)
		tail.add(batchExtent{b.BaseOffset(), b.LastOffset(), pos, int64(len(b))})
		pos += int64(len(b))
		rest = r
	}
	s.size.Store(pos)
	return nil
}

// indexBatch updates the indexes and timestamps for the batch at pos, the
// way Kafka's LogSegment.append does, so that our index files match the
// ones Kafka would have written for the same log.
func (s *segment) indexBatch(b record.Batch, pos, intervalBytes int64) {
	if ts := b.MaxTimestamp(); ts > s.maxTimestamp {
		s.maxTimestamp, s.maxTsOffset = ts, b.LastOffset()
		s.largestTs.Store(ts)
	}
	if s.firstTimestamp < 0 {
		s.firstTimestamp = b.MaxTimestamp()
	}
	if s.bytesSinceIndex > intervalBytes {
		s.offsets.add(b.LastOffset(), pos)
		s.times.maybeAdd(s.maxTimestamp, s.maxTsOffset)
		s.bytesSinceIndex = 0
	}
	s.bytesSinceIndex += int64(len(b))
	s.nextOffset = b.LastOffset() + 1
}

// errTornTail marks where a scan found something other than a valid batch.
var errTornTail = errors.New("broker/log: torn or corrupt batch")

// scan reads every batch from pos to the end, checking length, magic and
// CRC, and indexes each. It stops at the first batch that fails and returns
// its position with errTornTail; the caller truncates there.
func (s *segment) scan(pos, intervalBytes int64, visit func(record.Batch)) (validEnd int64, err error) {
	end := s.size.Load()
	r := bufio.NewReaderSize(io.NewSectionReader(s.log, pos, end-pos), 1<<20)
	var buf []byte
	prevNext := s.nextOffset
	for pos < end {
		if end-pos < record.HeaderSize {
			return pos, errTornTail
		}
		buf = grow(buf, record.LogOverhead)
		if _, err := io.ReadFull(r, buf[:record.LogOverhead]); err != nil {
			return pos, errTornTail
		}
		n := int64(record.Batch(buf).Length()) + record.LogOverhead
		if n < record.HeaderSize || pos+n > end {
			return pos, errTornTail
		}
		buf = grow(buf, int(n))
		if _, err := io.ReadFull(r, buf[record.LogOverhead:n]); err != nil {
			return pos, errTornTail
		}
		b := record.Batch(buf[:n])
		if b.Magic() != record.Magic || b.CRC() != b.ComputeCRC() || b.BaseOffset() < prevNext ||
			b.LastOffset() < b.BaseOffset() || b.LastOffset()-s.base > 1<<31-1 {
			return pos, errTornTail
		}
		s.indexBatch(b, pos, intervalBytes)
		if visit != nil {
			visit(b)
		}
		prevNext = s.nextOffset
		pos += n
	}
	return pos, nil
}

// grow returns b with length n, keeping its contents.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		nb := make([]byte, n, max(n, 2*cap(b)))
		copy(nb, b)
		return nb
	}
	return b[:n]
}

// recover rebuilds both indexes from the log and truncates a torn tail. It
// reports how many bytes it dropped.
func (s *segment) recover(intervalBytes int64, visit func(record.Batch)) (truncated int64, err error) {
	if err := s.offsets.reset(); err != nil {
		return 0, err
	}
	if err := s.times.reset(); err != nil {
		return 0, err
	}
	s.resetState()
	end := s.size.Load()
	valid, scanErr := s.scan(0, intervalBytes, visit)
	if scanErr != nil {
		if err := s.truncateFile(valid); err != nil {
			return 0, err
		}
	}
	return end - valid, nil
}

// loadTail restores the appender state of a segment whose indexes are
// trusted: it scans only from the last index entry to the end.
func (s *segment) loadTail(intervalBytes int64) error {
	from := int64(0)
	if _, pos, ok := s.offsets.last(); ok {
		from = pos
	}
	if ts, off, ok := s.times.last(); ok {
		s.maxTimestamp, s.maxTsOffset = ts, off
		s.largestTs.Store(ts)
	}
	// The tail past the last entry was indexed before the clean stop, so
	// the scan adds no entries; like Kafka, the byte count towards the next
	// entry restarts at zero.
	end, err := s.scan(from, math.MaxInt64, nil)
	if err != nil || end != s.size.Load() {
		return fmt.Errorf("%w in %s at byte %d", errTornTail, s.log.Name(), end)
	}
	s.bytesSinceIndex = 0
	if b, ok := s.header(0, s.size.Load(), make([]byte, record.HeaderSize)); ok {
		s.firstTimestamp = b.MaxTimestamp()
	}
	return nil
}

func (s *segment) truncateFile(size int64) error {
	s.tail.Store(nil)
	if err := s.log.Truncate(size); err != nil {
		return fmt.Errorf("broker/log: truncate %s: %w", s.log.Name(), err)
	}
	s.size.Store(size)
	return nil
}

// truncateTo removes the batches that end at or after offset and returns the
// new next offset of the segment.
func (s *segment) truncateTo(offset, intervalBytes int64) (int64, error) {
	end := s.size.Load()
	pos, _, found, err := s.find(offset, s.offsets.lookup(offset), end)
	if err != nil {
		// Not found because the bytes before it are not batches: the
		// records from offset on are still there, so this is no success.
		return 0, fmt.Errorf("broker/log: truncate %s to %d: %w", s.log.Name(), offset, err)
	}
	if !found {
		return s.nextOffset, nil
	}
	if err := s.truncateFile(pos); err != nil {
		return 0, err
	}
	if err := s.offsets.truncateTo(pos); err != nil {
		return 0, err
	}
	if err := s.times.truncateTo(offset); err != nil {
		return 0, err
	}
	s.resetState()
	if err := s.loadTail(intervalBytes); err != nil {
		return 0, err
	}
	return s.nextOffset, nil
}

// seal finishes the segment when a newer one becomes active: Kafka adds a
// last time index entry so that the segment's largest timestamp is in its
// index.
func (s *segment) seal() error {
	s.tail.Store(nil) // readers of an older segment are rare; its memory is not
	if s.maxTimestamp >= 0 {
		s.times.maybeAdd(s.maxTimestamp, s.maxTsOffset)
	}
	return errors.Join(s.offsets.seal(), s.times.seal())
}

func (s *segment) sync() error {
	return errors.Join(s.log.Sync(), s.offsets.sync(), s.times.sync())
}

func (s *segment) close() error {
	return errors.Join(s.offsets.close(), s.times.close(), s.log.Close())
}

// markDeleted renames the segment's files with the .deleted suffix, so a
// restart finishes the deletion, while open handles keep serving readers.
func (s *segment) markDeleted() error {
	var errs []error
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if err := os.Rename(s.path(suf), s.path(suf)+deletedSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// unlinkDeleted unlinks the files of a segment marked deleted. Open handles
// and mappings keep serving the readers still inside it.
func (s *segment) unlinkDeleted() error {
	var errs []error
	for _, suf := range []string{logSuffix, indexSuffix, timeIndexSuffix} {
		if err := os.Remove(s.path(suf) + deletedSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *segment) resetState() {
	s.bytesSinceIndex, s.maxTimestamp, s.maxTsOffset, s.nextOffset, s.firstTimestamp = 0, -1, -1, s.base, -1
	s.largestTs.Store(-1)
}

// largestTimestamp is the largest batch max timestamp in the segment, -1 for
// none; safe for readers.
func (s *segment) largestTimestamp() int64 {
	if ts := s.largestTs.Load(); ts >= 0 {
		return ts
	}
	if ts, _, ok := s.times.last(); ok {
		return ts
	}
	return -1
}
