package log

import (
	"sync"
	"sync/atomic"

	"github.com/tributary-io/tributary/broker/record"
)

// tailBatches remembers where the newest batches of the active segment are:
// offsets, position and size of each of the last few appended. A reader at
// the tail (a caught-up consumer or follower, and the high watermark that
// bounds a consumer's read) then knows its batch and its read's end without
// reading any batch header, where the offset index would send it up to
// 4 KiB (index.interval.bytes) of small batches back, a pread each.
type tailBatches struct {
	mu   sync.Mutex
	at   [tailBatchesKept]batchExtent
	next int // where the next batch goes in at
	n    int
}

const tailBatchesKept = 32

// batchExtent is one batch of a segment.
type batchExtent struct {
	base, last int64 // its first and last offsets
	pos, size  int64 // where it is in the segment file, header included
}

func (t *tailBatches) add(b batchExtent) {
	t.mu.Lock()
	t.at[t.next] = b
	t.next = (t.next + 1) % tailBatchesKept
	t.n = min(t.n+1, tailBatchesKept)
	t.mu.Unlock()
}

// holding is the first batch before end whose last offset is at least
// offset, what find would return; known is false when the kept batches do
// not reach back to offset. The kept batches lie end to end up to the
// newest append, and end is a batch boundary, so when none of those before
// end holds offset, no batch before end does.
func (t *tailBatches) holding(offset, end int64) (b batchExtent, found, known bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 || offset < t.at[(t.next-t.n+tailBatchesKept)%tailBatchesKept].base {
		return batchExtent{}, false, false // in a batch before the kept ones
	}
	for i := t.n; i >= 1; i-- {
		b := t.at[(t.next-i+tailBatchesKept)%tailBatchesKept]
		if b.pos+b.size > end {
			break // appended after the reader looked at the segment's size
		}
		if b.last >= offset {
			return b, true, true
		}
	}
	return batchExtent{}, false, true
}

// tailRef is a segment's kept batches, nil for a segment that took no
// appends since it was opened or sealed.
type tailRef = atomic.Pointer[tailBatches]

// locate is the batch holding offset (or the first after it), before end:
// from the kept tail batches when they reach back that far, else by
// walking batch headers from the offset index's entry. A reader bounded
// by the log end asks for the batch holding the end, which is none: the
// kept batches answer that too, where a walk would read every header from
// the index entry to the end.
func (s *segment) locate(offset, end int64) (batchExtent, bool, error) {
	if t := s.tail.Load(); t != nil {
		if b, found, known := t.holding(offset, end); known {
			return b, found, nil
		}
	}
	pos, h, found, err := s.find(offset, s.offsets.lookup(offset), end)
	if !found || err != nil {
		return batchExtent{}, found, err
	}
	return batchExtent{h.BaseOffset(), h.LastOffset(), pos, int64(h.Length()) + record.LogOverhead}, true, nil
}
