package log

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"

	"github.com/tributary-io/tributary/broker/record"
)

// offsetMapBudget bounds the offset map, as log.cleaner.dedupe.buffer.size
// (Kafka's default, 128 MiB) does: a cleaning maps whole segments until the
// map has grown past it, and leaves the rest of the dirty range to the next
// cleaning. The first dirty segment is always mapped, however large, so a
// cleaning always makes progress.
const offsetMapBudget = 128 << 20

// offsetMapEntryOverhead estimates what a map entry costs beyond its key's
// bytes: the string header, the offset and the map's own bookkeeping.
const offsetMapEntryOverhead = 48

// offsetMap is the last offset of each key in the dirty range. Keys are kept
// whole rather than hashed (Kafka keeps an MD5): a collision would delete a
// live record, and the budget bounds the memory either way.
type offsetMap struct {
	last  map[string]int64
	bytes int64
}

// retain reports whether a keyed record at offset is the latest of its key
// in the map, or of a key the map has not seen.
func (m *offsetMap) retain(key []byte, offset int64) bool {
	last, ok := m.last[string(key)]
	return !ok || offset >= last
}

// buildOffsetMap maps the keyed records of segs[from:to], whole segments at
// a time until the map outgrows budget, and returns the index of the first
// segment it did not map.
// Control batches carry no keys of the partition's data and are skipped.
//
// Batches of aborted transactions (aborted, nil for none) are skipped too:
// their records are removed, and must not remove older ones.
func buildOffsetMap(ctx context.Context, segs []*segment, from, to int, budget int64, aborted func(record.Batch) bool) (*offsetMap, int, error) {
	m := &offsetMap{last: map[string]int64{}}
	for i := from; i < to; i++ {
		if i > from && m.bytes >= budget {
			return m, i, nil
		}
		err := forEachBatch(ctx, segs[i], func(b record.Batch, _ int64) error {
			if b.Control() || aborted != nil && aborted(b) {
				return nil
			}
			recs, err := b.DecodeRecords()
			if err != nil {
				// Kept as it is by filterBatch; its keys are unknown.
				return nil
			}
			for k := range recs {
				r := &recs[k]
				if r.Key == nil {
					continue
				}
				if _, seen := m.last[string(r.Key)]; !seen {
					m.bytes += int64(len(r.Key)) + offsetMapEntryOverhead
				}
				m.last[string(r.Key)] = b.RecordOffset(r)
			}
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
	}
	return m, to, nil
}

// forEachBatch reads the whole batches of an inactive segment in order,
// checking each one's CRC: the cleaner rewrites batches with a fresh CRC,
// which would otherwise turn corruption on disk into valid-looking data. The
// batch passed to fn is only valid during the call.
func forEachBatch(ctx context.Context, s *segment, fn func(b record.Batch, pos int64) error) error {
	end := s.size.Load()
	r := bufio.NewReaderSize(io.NewSectionReader(s.log, 0, end), 1<<20)
	var buf []byte
	for pos := int64(0); pos < end; {
		if err := ctx.Err(); err != nil {
			return err
		}
		buf = grow(buf, record.LogOverhead)
		if _, err := io.ReadFull(r, buf); err != nil {
			return fmt.Errorf("read %s at %d: %w", s.log.Name(), pos, err)
		}
		n := int64(record.Batch(buf).Length()) + record.LogOverhead
		if n < record.HeaderSize || pos+n > end {
			return fmt.Errorf("%w in %s at byte %d", errTornTail, s.log.Name(), pos)
		}
		buf = grow(buf, int(n))
		if _, err := io.ReadFull(r, buf[record.LogOverhead:]); err != nil {
			return fmt.Errorf("read %s at %d: %w", s.log.Name(), pos, err)
		}
		b := record.Batch(buf)
		if b.Magic() != record.Magic || b.CRC() != b.ComputeCRC() {
			return fmt.Errorf("%w in %s at byte %d", errTornTail, s.log.Name(), pos)
		}
		if err := fn(b, pos); err != nil {
			return err
		}
		pos += n
	}
	return nil
}

// groupSegments groups segs[:n] so that each group's segments fit one
// segment, as Kafka's groupSegmentsBySize does: their combined size within
// segment.bytes, their combined indexes within segment.index.bytes, and
// every offset within an int32 of the group's base, which the indexes'
// relative offsets need. The sizes are those before cleaning, an upper bound
// of the output (give or take recompression). segs[n] must exist: it bounds
// the offsets of segs[n-1].
func groupSegments(segs []*segment, n int, cfg *Config) [][]*segment {
	var groups [][]*segment
	indexBytes := func(s *segment) (int64, int64) {
		return int64(s.offsets.len() * entrySize), int64(s.times.len() * timeEntrySize)
	}
	for i := 0; i < n; {
		g := []*segment{segs[i]}
		size := segs[i].size.Load()
		offIdx, timeIdx := indexBytes(segs[i])
		for i++; i < n; i++ {
			s := segs[i]
			o, t := indexBytes(s)
			lastOffset := segs[i+1].base - 1
			fits := size+s.size.Load() <= cfg.SegmentBytes &&
				offIdx+o <= int64(cfg.SegmentIndexBytes) &&
				timeIdx+t <= int64(cfg.SegmentIndexBytes) &&
				// An empty segment adds no offsets; skipping the
				// check keeps it from being left alone forever.
				(s.size.Load() == 0 || lastOffset-g[0].base <= math.MaxInt32)
			if !fits {
				break
			}
			g = append(g, s)
			size += s.size.Load()
			offIdx += o
			timeIdx += t
		}
		groups = append(groups, g)
	}
	return groups
}
