package server

import (
	"math/bits"
	"sync"
)

// Request bodies are reused rather than left to the garbage collector,
// which otherwise spends about a third of the broker's CPU on large
// produce requests sweeping and clearing them. Small fetch responses
// (files.go) are built in the same buffers.
//
// Only Produce and Fetch bodies go back. A decoded Produce request aliases
// its records into the body, but the log copies them into the segment file
// before the answer is written, and the producer state keeps numbers, not
// bytes. A Fetch request's names are copied out (kmsg's ReadFrom copies
// strings), and the fetch session keeps those. Other requests' decoded
// fields (JoinGroup metadata, SyncGroup assignments) may be kept after the
// answer, so their bodies are left to the collector.
//
// The pool is by power-of-two size class, from 4 KiB to 2 GiB (the
// largest socket.request.max.bytes). Bodies too large for the body pool
// to be worth it would still be worth reusing: a flood of large frames
// that never complete (mempool.go) otherwise allocates a new one for each
// connection it lets in, and the garbage, not the request pool, sets the
// broker's memory until the collector catches up.
const (
	minPooledBodyShift = 12
	maxPooledBodyShift = 31
)

var bodyPools [maxPooledBodyShift + 1]sync.Pool

// bodyClass is the smallest class holding n bytes, or -1 if n is not pooled.
func bodyClass(n int) int {
	if n <= 0 || n > 1<<maxPooledBodyShift {
		return -1
	}
	return max(bits.Len(uint(n-1)), minPooledBodyShift)
}

// bodyCap is the capacity getBody(n) allocates: what the body holds of
// the request pool (mempool.go).
func bodyCap(n int) int {
	if c := bodyClass(n); c >= 0 {
		return 1 << c
	}
	return n
}

// getBody returns a slice of n bytes whose contents are undefined.
func getBody(n int) []byte {
	c := bodyClass(n)
	if c < 0 {
		return make([]byte, n)
	}
	if p, ok := bodyPools[c].Get().(*[]byte); ok {
		return (*p)[:n]
	}
	return make([]byte, n, 1<<c)
}

// putBody gives b back once nothing refers to its bytes.
func putBody(b []byte) {
	c := bodyClass(cap(b))
	if c < 0 || cap(b) != 1<<c {
		return
	}
	b = b[:0]
	bodyPools[c].Put(&b)
}
