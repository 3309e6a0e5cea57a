package decode

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow/go/v15/arrow/memory"
)

// poolAllocator recycles the buffers of released batches for the next
// ones. Each batch of a decoder needs fresh buffers (a finished batch owns
// its builders' buffers), and from Go's heap these are new, zeroed, often
// never-touched pages: measured on activity events, about a tenth of the
// decoder's CPU time went to allocating, zeroing and faulting them in.
// Buffers are kept by power-of-two size in sync.Pools, so that the
// garbage collector may still drop them, and they are zeroed before reuse
// (arrow's builders zero what they grow into, but the Allocator contract
// is Go's: zeroed memory).
type poolAllocator struct {
	pools [64]sync.Pool
}

// pooled is the allocator of decoders given none.
var pooled = &poolAllocator{}

var _ memory.Allocator = pooled

const minPooled = 64

func class(size int) int {
	if size <= minPooled {
		return bits.Len(minPooled - 1)
	}
	return bits.Len(uint(size - 1))
}

func (p *poolAllocator) Allocate(size int) []byte {
	c := class(size)
	if b, ok := p.pools[c].Get().(*[]byte); ok {
		buf := (*b)[:size]
		clear(buf)
		return buf
	}
	return make([]byte, size, 1<<c)
}

func (p *poolAllocator) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		old := len(b)
		b = b[:size]
		if size > old {
			clear(b[old:])
		}
		return b
	}
	nb := p.Allocate(size)
	copy(nb, b)
	p.Free(b)
	return nb
}

func (p *poolAllocator) Free(b []byte) {
	c := bits.Len(uint(cap(b) - 1))
	if cap(b) < minPooled || cap(b) != 1<<c {
		return // not one of ours
	}
	b = b[:0]
	p.pools[c].Put(&b)
}
