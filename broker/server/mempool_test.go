package server

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func TestRequestPoolWaitsAndWakes(t *testing.T) {
	m := newMetrics(prometheus.NewRegistry())
	p := newRequestPool(1<<20, m)
	stop := make(chan struct{})

	if n, ok := p.acquire(smallFrame, stop); n != 0 || !ok {
		t.Fatalf("a small frame took %d bytes of the pool", n)
	}
	a, _ := p.acquire(600<<10, stop)
	// A second large frame does not fit: it waits until the first is
	// released, and a small frame meanwhile does not wait.
	got := make(chan int64)
	go func() { n, _ := p.acquire(600<<10, stop); got <- n }()
	select {
	case n := <-got:
		t.Fatalf("a frame that does not fit took %d bytes at once", n)
	case <-time.After(50 * time.Millisecond):
	}
	if _, ok := p.acquire(100, stop); !ok {
		t.Fatal("a small frame waited")
	}
	p.release(a)
	b := <-got
	if p.inUse() != 600<<10 {
		t.Fatalf("in use %d, want one frame", p.inUse())
	}
	// A frame whose size class is larger than the whole pool takes all of
	// it, once the pool is empty, rather than waiting forever.
	go func() { n, _ := p.acquire(2<<20, stop); got <- n }()
	p.release(b)
	if n := <-got; n != 1<<20 {
		t.Fatalf("a frame larger than the pool took %d bytes, want the whole pool", n)
	}
	// Shutdown ends a wait.
	go func() { n, ok := p.acquire(600<<10, stop); got <- n; _ = ok }()
	close(stop)
	if n := <-got; n != 0 {
		t.Fatalf("a wait ended by shutdown took %d bytes", n)
	}
}
