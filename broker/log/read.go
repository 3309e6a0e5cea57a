package log

import (
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/tributary-io/tributary/broker/record"
)

// Slice is a byte range of one segment file: what a fetch sends to the
// socket with sendfile(2). It starts at a batch boundary; like Kafka's, it
// may end inside a batch when MaxBytes cuts it, and clients drop that partial
// batch.
//
// A non-empty slice holds its segment open (lifetime.go): File stays valid,
// whatever retention, compaction, truncation or DeleteTopics do meanwhile,
// until Release, which the holder must call exactly once when done with the
// bytes (after the sendfile, not before).
type Slice struct {
	File        *os.File
	Pos, Size   int64
	FirstOffset int64 // base offset of the first batch; -1 when empty

	seg *segment // held; nil for an empty slice
}

// Release lets the slice's segment close. File must not be used after it.
// Releasing an empty or already released slice does nothing.
func (s *Slice) Release() {
	if s.seg != nil {
		s.seg.release()
		s.seg = nil
	}
}

// ReadAll copies the slice into memory, for callers that are not sockets.
func (s Slice) ReadAll() ([]byte, error) {
	if s.Size == 0 {
		return nil, nil
	}
	buf := make([]byte, s.Size)
	n, err := s.File.ReadAt(buf, s.Pos)
	if err == io.EOF {
		err = nil // a truncation raced with this read; what was read is whole batches or a tail clients drop
	}
	return buf[:n], err
}

// ReadOptions bound a read.
type ReadOptions struct {
	// MaxBytes bounds the slice, except that MinOneBatch lets the first
	// batch exceed it (KIP-74).
	MaxBytes    int
	MinOneBatch bool
	// UpTo is the exclusive upper offset a reader may see, the high
	// watermark for consumers; negative means the log end.
	UpTo int64
}

// Read returns the batches from the one holding offset, within one segment.
// An offset equal to the upper bound returns an empty slice; one outside
// [LogStartOffset, LogEndOffset] is ErrOffsetOutOfRange.
func (l *Log) Read(offset int64, opt ReadOptions) (Slice, error) {
	for {
		s, closed, err := l.read(offset, opt)
		if !closed {
			return s, err
		}
		if l.shut.Load() {
			return Slice{FirstOffset: -1}, ErrClosed
		}
		// A segment of the list we read closed under us: it left the
		// list, so the next look finds its successor, or the offset out
		// of range.
	}
}

// read is one attempt of Read; closed reports a segment found closed.
func (l *Log) read(offset int64, opt ReadOptions) (_ Slice, closed bool, _ error) {
	empty := Slice{FirstOffset: -1}
	start, end := l.start.Load(), l.end.Load()
	if offset < start || offset > end {
		return empty, false, fmt.Errorf("%w: offset %d, log %s holds [%d, %d)", ErrOffsetOutOfRange, offset, l.tp, start, end)
	}
	upTo := opt.UpTo
	if upTo < 0 || upTo > end {
		upTo = end
	}
	if offset >= upTo {
		return empty, false, nil
	}
	segs := l.segments()
	i := max(sort.Search(len(segs), func(i int) bool { return segs[i].base > offset })-1, 0)
	for ; i < len(segs); i++ {
		s := segs[i]
		if !s.acquire() {
			return empty, true, nil
		}
		segEnd := s.size.Load()
		b, found, err := s.locate(offset, segEnd)
		if err != nil || !found || b.base >= upTo {
			s.release()
		}
		if err != nil {
			return empty, false, err
		}
		if !found {
			continue // offset fell in a gap the cleaner left at the segment's end
		}
		if b.base >= upTo {
			return empty, false, nil
		}
		limit := segEnd
		if i+1 == len(segs) || segs[i+1].base > upTo {
			// The read ends at the batch holding upTo, if this segment
			// has it.
			if u, ok, _ := s.locate(upTo, segEnd); ok && u.pos >= b.pos {
				limit = u.pos
			}
		}
		size := min(limit-b.pos, int64(opt.MaxBytes))
		if opt.MinOneBatch && size < b.size {
			size = min(b.size, limit-b.pos)
		}
		if size <= 0 {
			s.release()
			return empty, false, nil
		}
		return Slice{File: s.log, Pos: b.pos, Size: size, FirstOffset: b.base, seg: s}, false, nil
	}
	return empty, false, nil
}

// OffsetForTimestamp is ListOffsets by timestamp: the first record whose
// timestamp is at least ts, with that timestamp. ok is false when every
// record is older.
func (l *Log) OffsetForTimestamp(ts int64) (offset, timestamp int64, ok bool, err error) {
	// Every segment is held: its time index is read until one answers.
	segs, err := l.acquireSegments()
	if err != nil {
		return 0, 0, false, err
	}
	defer releaseAll(segs)
	start := l.start.Load()
	for _, s := range segs {
		if s.largestTimestamp() < ts {
			continue
		}
		from := max(s.times.lookup(ts), start)
		end := s.size.Load()
		pos, h, found, err := s.find(from, s.offsets.lookup(from), end)
		buf := make([]byte, record.HeaderSize)
		for ; found && err == nil; pos, h, found, err = s.next(pos, h, end, buf) {
			if h.MaxTimestamp() >= ts && h.LastOffset() >= start {
				batch, err := readBatch(s, pos, h)
				if err != nil {
					return 0, 0, false, err
				}
				return firstAtOrAfter(batch, ts, start)
			}
		}
		if err != nil {
			return 0, 0, false, err
		}
	}
	return 0, 0, false, nil
}

func readBatch(s *segment, pos int64, h record.Batch) (record.Batch, error) {
	b := make(record.Batch, int64(h.Length())+record.LogOverhead)
	if _, err := s.log.ReadAt(b, pos); err != nil {
		return nil, fmt.Errorf("broker/log: read %s at %d: %w", s.log.Name(), pos, err)
	}
	return b, nil
}

func firstAtOrAfter(b record.Batch, ts, start int64) (int64, int64, bool, error) {
	if b.LogAppendTime() {
		return max(b.BaseOffset(), start), b.MaxTimestamp(), true, nil
	}
	recs, err := b.DecodeRecords()
	if err != nil {
		return 0, 0, false, err
	}
	for i := range recs {
		r := &recs[i]
		o, t := b.RecordOffset(r), b.RecordTimestamp(r)
		if t >= ts && o >= start {
			return o, t, true, nil
		}
	}
	return 0, 0, false, nil
}

// MaxTimestamp is ListOffsets' MAX_TIMESTAMP: the offset and timestamp of
// the record with the largest timestamp (the first such record on a tie).
func (l *Log) MaxTimestamp() (offset, timestamp int64, ok bool, err error) {
	segs, err := l.acquireSegments()
	if err != nil {
		return 0, 0, false, err
	}
	defer releaseAll(segs)
	var best *segment
	for _, s := range segs {
		if ts := s.largestTimestamp(); ts >= 0 && (best == nil || ts > best.largestTimestamp()) {
			best = s
		}
	}
	if best == nil {
		return 0, 0, false, nil
	}
	ts := best.largestTimestamp()
	end := best.size.Load()
	start := l.start.Load()
	buf := make([]byte, record.HeaderSize)
	pos, h, found, err := best.find(start, 0, end)
	for ; found && err == nil; pos, h, found, err = best.next(pos, h, end, buf) {
		if h.MaxTimestamp() != ts {
			continue
		}
		b, err := readBatch(best, pos, h)
		if err != nil {
			return 0, 0, false, err
		}
		return firstAtOrAfter(b, ts, start)
	}
	return 0, 0, false, err
}
