package log

import (
	"sync"
	"sync/atomic"
)

// tailBoundaries remembers where the newest batches of the active segment
// end: the position at which each of the last few offsets past a batch
// begins. A reader at the tail (a caught-up consumer, a follower, the high
// watermark that bounds a consumer's read) then starts at its batch
// instead of reading every batch header from the last index entry, which
// is up to 4 KiB (index.interval.bytes) of small batches behind.
type tailBoundaries struct {
	mu   sync.Mutex
	at   [tailBoundariesKept]boundary
	next int // where the next boundary goes in at
	n    int
}

const tailBoundariesKept = 32

type boundary struct{ offset, pos int64 }

func (t *tailBoundaries) add(offset, pos int64) {
	t.mu.Lock()
	t.at[t.next] = boundary{offset, pos}
	t.next = (t.next + 1) % tailBoundariesKept
	t.n = min(t.n+1, tailBoundariesKept)
	t.mu.Unlock()
}

// before is the kept boundary with the largest offset at or below offset.
func (t *tailBoundaries) before(offset int64) (boundary, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := 1; i <= t.n; i++ {
		b := t.at[(t.next-i+tailBoundariesKept)%tailBoundariesKept]
		if b.offset <= offset {
			return b, true
		}
	}
	return boundary{}, false
}

// tail is s's boundaries, nil for a segment that took no appends since it
// was opened or sealed.
type tailRef = atomic.Pointer[tailBoundaries]

// startFor is where a walk to the batch holding offset may start: the
// nearer of the offset index's entry and a kept tail boundary, never past
// end.
func (s *segment) startFor(offset, end int64) int64 {
	pos := s.offsets.lookup(offset)
	if t := s.tail.Load(); t != nil {
		if b, ok := t.before(offset); ok && b.pos > pos && b.pos <= end {
			pos = b.pos
		}
	}
	return pos
}

// boundaryAt is the position where offset begins, if a batch ends right
// before it among the kept boundaries.
func (s *segment) boundaryAt(offset, end int64) (int64, bool) {
	t := s.tail.Load()
	if t == nil {
		return 0, false
	}
	b, ok := t.before(offset)
	return b.pos, ok && b.offset == offset && b.pos <= end
}
