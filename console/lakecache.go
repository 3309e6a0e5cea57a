package console

import (
	"sync"
	"time"
)

// Every Pipeline view reads job states, plans, manifests and directory
// listings: hundreds of NameNode calls on HDFS. With the page refreshing
// itself every 10 s in every open tab, the view is read at most once per
// lakeCacheFor, by one request at a time, and shared by everyone (then
// filtered per person, lakeacl.go) (review 10). 5 s keeps the lake's load
// independent of how many watch it, and a finished load shows about as
// soon as the page's own refresh would show it.
const (
	lakeCacheFor = 5 * time.Second
	// lakeReads bounds the single-file reads running at once.
	lakeReads = 2
)

type lakeCache struct {
	mu      sync.Mutex
	v       lakeView
	at      time.Time
	have    bool
	loading chan struct{} // closed when the read under way ends
	reads   int           // views read, for tests
}

// cachedView is the lake's view, read anew when older than lakeCacheFor;
// concurrent callers wait for the one read under way.
func (l *lake) cachedView() lakeView {
	c := &l.cache
	c.mu.Lock()
	for {
		if c.have && time.Since(c.at) < lakeCacheFor {
			v := c.v
			c.mu.Unlock()
			return v
		}
		if c.loading == nil {
			break
		}
		ch := c.loading
		c.mu.Unlock()
		<-ch
		c.mu.Lock()
	}
	ch := make(chan struct{})
	c.loading = ch
	c.reads++
	c.mu.Unlock()
	v := l.view()
	c.mu.Lock()
	c.v, c.at, c.have, c.loading = v, time.Now(), true, nil
	c.mu.Unlock()
	close(ch)
	return v
}

// invalidate makes the next view read the lake: after a change made
// through the console (a job triggered), the person expects to see it.
func (l *lake) invalidate() {
	l.cache.mu.Lock()
	l.cache.have = false
	l.cache.mu.Unlock()
}
