package iceberg

import (
	"fmt"
	"sync/atomic"

	"github.com/apache/arrow/go/v15/arrow/memory"
)

// DefaultDecodeBudget bounds the memory one data file's decoding holds at
// once (Catalog.DecodeBudget): a batch of decoded rows, the column
// chunks' read buffers and dictionaries. A file that needs more (one
// value of hundreds of MiB, or a dictionary page that expands so) is
// refused with an error naming it, instead of taking the jobs daemon's
// memory: a data file is input from whoever can write the warehouse, and
// a few KB of dictionary-encoded, compressed Parquet can decode to GiBs.
const DefaultDecodeBudget = 256 << 20

// decodeBatchRows is the rows of one decoded batch. Rows are decoded a
// batch at a time, never a row group whole (another engine writes row
// groups of 128 MiB and more on disk, many times that decoded).
const decodeBatchRows = 4096

// readBufferBytes is the buffer a column chunk is read through, instead
// of whole.
const readBufferBytes = 256 << 10

func (c *Catalog) decodeBudget() int64 {
	if c.DecodeBudget > 0 {
		return c.DecodeBudget
	}
	return DefaultDecodeBudget
}

// overBudget is the panic a budgetAllocator raises: Arrow's allocators
// cannot return an error, so dataFile.each recovers it into one.
type overBudget struct{ live, want, budget int64 }

func (o overBudget) Error() string {
	return fmt.Sprintf("decoding it needs more than %d bytes at once (%d held, %d more asked): over the decode budget (iceberg.Catalog.DecodeBudget)",
		o.budget, o.live, o.want)
}

// budgetAllocator is an Arrow allocator that refuses to hold more than
// budget bytes at once.
type budgetAllocator struct {
	mem    memory.Allocator
	live   atomic.Int64
	budget int64
}

func newBudgetAllocator(budget int64) *budgetAllocator {
	return &budgetAllocator{mem: memory.NewGoAllocator(), budget: budget}
}

func (a *budgetAllocator) take(n int64) {
	if live := a.live.Add(n); n > 0 && live > a.budget {
		a.live.Add(-n)
		panic(overBudget{live: live - n, want: n, budget: a.budget})
	}
}

func (a *budgetAllocator) Allocate(size int) []byte {
	a.take(int64(size))
	return a.mem.Allocate(size)
}

func (a *budgetAllocator) Reallocate(size int, b []byte) []byte {
	a.take(int64(size - len(b)))
	return a.mem.Reallocate(size, b)
}

func (a *budgetAllocator) Free(b []byte) {
	a.live.Add(-int64(len(b)))
	a.mem.Free(b)
}
