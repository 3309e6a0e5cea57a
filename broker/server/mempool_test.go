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

// Bodies above 64 MiB are reused by the pool itself, within its limit.
func TestRequestPoolReusesLargeBodies(t *testing.T) {
	p := newRequestPool(300<<20, newMetrics(prometheus.NewRegistry()))
	stop := make(chan struct{})
	a, ha, _ := p.get(100<<20, stop)
	b, hb, _ := p.get(70<<20, stop)
	if cap(a) != 128<<20 || ha != 128<<20 || hb != 128<<20 {
		t.Fatalf("bodies of 100 and 70 MiB: capacity %d, held %d and %d; want their 128 MiB class", cap(a), ha, hb)
	}
	p.put(a, ha, true)
	p.put(b, hb, false) // still referred to: not kept
	if p.freeBytes != 128<<20 || p.inUse() != 0 {
		t.Fatalf("after put: %d bytes kept, %d in use; want one body kept", p.freeBytes, p.inUse())
	}
	c, hc, _ := p.get(90<<20, stop)
	if &c[0] != &a[0] || p.freeBytes != 0 {
		t.Fatal("the kept body was not reused")
	}
	p.put(c, hc, true)
	// A frame of another class makes room by dropping what is kept.
	d, hd, _ := p.get(200<<20, stop)
	if cap(d) != 256<<20 || hd != 256<<20 || p.freeBytes != 0 {
		t.Fatalf("a 200 MiB body: capacity %d, held %d, %d bytes still kept; the kept 128 MiB must go", cap(d), hd, p.freeBytes)
	}
	p.put(d, hd, true)
	if p.inUse()+p.freeBytes > p.limit {
		t.Fatalf("%d in use and %d kept exceed the limit %d", p.inUse(), p.freeBytes, p.limit)
	}
}
