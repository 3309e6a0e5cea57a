package collect

import (
	"hash/maphash"
	"sync"
	"time"
)

// dedupKey stands for a messageId of one source: two 64-bit hashes of it
// with seeds of that source. Keeping hashes rather than the ids makes the
// window's memory small (16 bytes an id) and free of pointers, which the
// garbage collector then never scans. Two different ids share a key with a
// probability of 2^-128, so no realistic traffic drops an event as the
// duplicate of another.
type dedupKey [2]uint64

type dedupSeeds [2]maphash.Seed

func newDedupSeeds() dedupSeeds { return dedupSeeds{maphash.MakeSeed(), maphash.MakeSeed()} }

func (s *dedupSeeds) key(id []byte) dedupKey {
	return dedupKey{maphash.Bytes(s[0], id), maphash.Bytes(s[1], id)}
}

// dedup remembers recent messageIds in two generations: an id is a
// duplicate while it is in either. The current generation becomes the
// previous one every window, or sooner when it holds max/2 ids, so an id
// is remembered for at least one window unless memory runs out first, and
// memory is bounded by max ids. A retired generation's map is cleared and
// reused, so that a busy collector does not grow a new one from nothing
// every window.
type dedup struct {
	mu        sync.Mutex
	cur, prev map[dedupKey]struct{}
	started   time.Time
	window    time.Duration
	max       int
}

func newDedup(window time.Duration, max int) *dedup {
	return &dedup{cur: map[dedupKey]struct{}{}, prev: map[dedupKey]struct{}{}, window: window, max: max}
}

// rotate; mu must be held.
func (d *dedup) rotate(now time.Time) {
	if d.started.IsZero() {
		d.started = now
	}
	if now.Sub(d.started) >= 2*d.window {
		clear(d.prev)
		clear(d.cur)
		d.started = now
	} else if now.Sub(d.started) >= d.window || len(d.cur) >= d.max/2 {
		clear(d.prev)
		d.prev, d.cur, d.started = d.cur, d.prev, now
	}
}

// seen reports whether k was marked within the window.
func (d *dedup) seen(k dedupKey, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rotate(now)
	if _, ok := d.cur[k]; ok {
		return true
	}
	_, ok := d.prev[k]
	return ok
}

// seenAll appends to seen whether each of keys was marked within the
// window, under one lock.
func (d *dedup) seenAll(keys []dedupKey, now time.Time, seen []bool) []bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.rotate(now)
	for _, k := range keys {
		_, ok := d.cur[k]
		if !ok {
			_, ok = d.prev[k]
		}
		seen = append(seen, ok)
	}
	return seen
}

// mark remembers keys, once their events are durable.
func (d *dedup) mark(keys []dedupKey, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, k := range keys {
		d.rotate(now)
		d.cur[k] = struct{}{}
	}
}
