package server

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// requestPool is queued.max.request.bytes: the bytes of request frames the
// broker holds in memory at once, over every connection. A connection takes
// its frame's size from the pool after reading the 4-byte size and before
// allocating the body; when the pool cannot hold it, the connection stops
// reading its socket and waits (Kafka mutes the channel), so that the
// kernel's receive window, not the heap, absorbs what clients send. The
// bytes go back when the body is freed: to the body pool after a Produce or
// Fetch (bodies.go), to the collector after any other request.
//
// Frames of smallFrame bytes or less never wait. Each connection reads one
// frame at a time, so they hold at most smallFrame per connection, a cost
// of the connection like its read buffer, which max.connections bounds.
// Exempting them is what keeps the broker deadlock-free and its control
// plane responsive when the pool is full:
//
//   - A request that holds pool bytes may wait on another connection's
//     request: an acks=all Produce waits for the followers' Fetch, a
//     JoinGroup for the other members' JoinGroup, a long-polling Fetch for a
//     Produce. The requests waited on (Fetch, JoinGroup, Heartbeat) are small
//     frames, which are always read, so the wait ends. The only cycle left
//     is a large Produce waiting for a follower whose Fetch names so many
//     partitions that it is larger than smallFrame; the produce's own
//     timeout ends that wait and frees its bytes.
//   - Heartbeats, metadata, offset commits and fetches keep flowing while
//     senders of large frames wait, so a flood of large produces neither
//     fences group members nor stalls consumers.
//
// A frame's bytes are held until its handler returns, not until its answer
// is written: a client that does not read its answers would otherwise hold
// them for the write's whole deadline. Nothing an answer is written from
// refers to the request's body (bodies.go).
//
// A sender that declares a large frame and then stops sending holds its
// bytes until the body's read deadline (requestTimeout) closes it.
type requestPool struct {
	limit int64 // -1: unbounded, nothing waits

	mu   sync.Mutex
	used int64
	// free are released bodies above bigBodyShift kept for reuse, by size
	// class, and freeBytes their capacity; used + freeBytes <= limit.
	free      [maxPooledBodyShift + 1][][]byte
	freeBytes int64
	// wake is closed, and replaced, whenever bytes come back.
	wake chan struct{}

	// waits counts the frames that had to wait, as they start waiting;
	// waitSeconds how long they waited, once they stop.
	waits, waitSeconds prometheus.Counter
}

// smallFrame is the largest frame read without taking from the pool: the
// size of a connection's read buffer.
const smallFrame = 64 << 10

func newRequestPool(limit int64, m *metrics) *requestPool {
	return &requestPool{limit: limit, wake: make(chan struct{}), waits: m.poolWaits, waitSeconds: m.poolWaitSeconds}
}

// acquire takes n bytes, waiting while the pool cannot hold them, and
// returns how many it took (0 for a small frame or an unbounded pool) to
// give to release. It gives up, taking nothing, when stop closes.
//
// The config refuses a limit below socket.request.max.bytes, and larger
// frames are refused before this, but n is a body's capacity, rounded up
// to its size class (bodies.go): a frame whose class is larger than the
// whole pool takes all of it.
func (p *requestPool) acquire(n int64, stop <-chan struct{}) (int64, bool) {
	if n <= smallFrame {
		return 0, true
	}
	if p.limit >= 0 {
		n = min(n, p.limit)
	}
	var start time.Time
	defer func() {
		if !start.IsZero() {
			p.waitSeconds.Add(time.Since(start).Seconds())
		}
	}()
	for {
		p.mu.Lock()
		if p.limit < 0 || p.used+n <= p.limit {
			p.used += n
			p.mu.Unlock()
			return n, true
		}
		wake := p.wake
		p.mu.Unlock()
		if start.IsZero() {
			start = time.Now()
			p.waits.Inc()
		}
		select {
		case <-wake:
		case <-stop:
			return 0, false
		}
	}
}

// release gives back what acquire took.
func (p *requestPool) release(n int64) {
	if n == 0 {
		return
	}
	p.mu.Lock()
	p.used -= n
	p.wakeAll()
	p.mu.Unlock()
}

// wakeAll lets every waiter look again; p.mu must be held.
func (p *requestPool) wakeAll() {
	close(p.wake)
	p.wake = make(chan struct{})
}

// bigBodyShift: bodies of a larger size class than 1<<bigBodyShift are
// kept for reuse by a bounded pool itself, not by the body pool
// (bodies.go): a sync.Pool is emptied by every other garbage collection,
// so a steady stream of large frames would allocate a new body for most of
// them and leave the old ones as garbage, which the pool does not count and
// the collector returns late; under -race it also drops a quarter of what
// it is given. Kept here, reused bodies plus bodies in use never exceed the
// limit.
const bigBodyShift = 26

// get takes a body of n bytes, waiting for the pool as acquire does, and
// returns it with what to give back to put.
func (p *requestPool) get(n int, stop <-chan struct{}) (body []byte, held int64, ok bool) {
	held, ok = p.acquire(int64(bodyCap(n)), stop)
	if !ok {
		return nil, 0, false
	}
	c := bodyClass(n)
	if held == 0 || p.limit < 0 || c <= bigBodyShift {
		return getBody(n), held, true
	}
	p.mu.Lock()
	if k := len(p.free[c]); k > 0 {
		body = p.free[c][k-1][:n]
		p.free[c][k-1] = nil
		p.free[c] = p.free[c][:k-1]
		p.freeBytes -= int64(cap(body))
	}
	// What acquire took may be what other classes' bodies are kept in:
	// drop them, to the collector.
	for i := len(p.free) - 1; i > bigBodyShift && p.used+p.freeBytes > p.limit; i-- {
		for len(p.free[i]) > 0 && p.used+p.freeBytes > p.limit {
			k := len(p.free[i])
			p.freeBytes -= int64(cap(p.free[i][k-1]))
			p.free[i][k-1] = nil
			p.free[i] = p.free[i][:k-1]
		}
	}
	p.mu.Unlock()
	if body == nil {
		body = make([]byte, n, 1<<c)
	}
	return body, held, true
}

// put gives back a body from get and its bytes. Only a body nothing refers
// to any more may be reused; otherwise it is left to the collector.
func (p *requestPool) put(body []byte, held int64, reuse bool) {
	c := bodyClass(cap(body))
	if !reuse || held == 0 || p.limit < 0 || c <= bigBodyShift {
		if reuse {
			putBody(body)
		}
		p.release(held)
		return
	}
	p.mu.Lock()
	p.used -= held
	if size := int64(cap(body)); size == 1<<c && p.used+p.freeBytes+size <= p.limit {
		p.free[c] = append(p.free[c], body[:0])
		p.freeBytes += size
	}
	p.wakeAll()
	p.mu.Unlock()
}

// inUse is the bytes held now.
func (p *requestPool) inUse() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used
}
