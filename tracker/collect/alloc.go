package collect

import (
	"math/bits"

	"github.com/apache/arrow/go/v15/arrow/memory"
)

// recycler is the memory.Allocator of a validator's decoder. The decoder
// builds Arrow columns only to check events, and a validator releases them
// every flushRows rows; with Go's allocator each round would then grow its
// buffers from nothing again, which made Arrow most of the collector's
// garbage. recycler keeps released buffers, by power-of-two size, for the
// next round.
//
// It is not safe for concurrent use: it belongs to one decoder, which one
// request at a time borrows.
type recycler struct {
	free [48][][]byte // by bits.Len of the capacity - 1
	kept int          // bytes in free
}

// maxRecycled bounds what a recycler keeps, well above one round's needs
// (flushRows events of a few KB).
const maxRecycled = 8 << 20

var _ memory.Allocator = (*recycler)(nil)

func sizeClass(size int) int { return bits.Len(uint(size - 1)) }

// Allocate returns zeroed memory, as Go's allocator does: builders count
// on zeroed validity bitmaps.
func (r *recycler) Allocate(size int) []byte {
	if size <= 0 {
		return []byte{}
	}
	c := sizeClass(size)
	if l := r.free[c]; len(l) > 0 {
		b := l[len(l)-1]
		l[len(l)-1] = nil
		r.free[c] = l[:len(l)-1]
		r.kept -= cap(b)
		b = b[:size]
		clear(b)
		return b
	}
	return make([]byte, size, 1<<c)
}

func (r *recycler) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		return b[:size]
	}
	n := r.Allocate(size)
	copy(n, b)
	r.Free(b)
	return n
}

func (r *recycler) Free(b []byte) {
	c := cap(b)
	if c == 0 || c&(c-1) != 0 || r.kept+c > maxRecycled {
		return // not one of ours, or enough kept: the garbage collector's
	}
	r.free[sizeClass(c)] = append(r.free[sizeClass(c)], b[:0])
	r.kept += c
}
