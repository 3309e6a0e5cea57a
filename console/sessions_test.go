package console

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// newTestSession is a session whose client never connects (kgo dials
// lazily), for the bookkeeping of sessions.
func newTestSession(t *testing.T, user string, created time.Time) *session {
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	return &session{user: user, cl: cl, created: created, used: time.Now()}
}

func (ss *sessions) count() int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return len(ss.m)
}

// TestSessions: one person cannot take every slot, signing in again ends
// their oldest session (review 6), and expired sessions are closed by the
// reaper without anyone presenting them (review 7).
func TestSessions(t *testing.T) {
	t.Parallel()
	t.Run("per user", func(t *testing.T) {
		ss, err := newSessions(Login{MaxSessions: 4, MaxPerUser: 2})
		if err != nil {
			t.Fatal(err)
		}
		defer ss.closeAll()
		now := time.Now()
		first, _ := ss.add(newTestSession(t, "a", now.Add(-3*time.Second)), "")
		second, _ := ss.add(newTestSession(t, "a", now.Add(-2*time.Second)), "")
		third, err := ss.add(newTestSession(t, "a", now.Add(-time.Second)), "")
		if err != nil {
			t.Fatal(err)
		}
		if ss.get(first) != nil || ss.get(second) == nil || ss.get(third) == nil || ss.count() != 2 {
			t.Errorf("a's sessions after 3 sign-ins with 2 per user: want the 2 newest, have %d", ss.count())
		}
		b1, err := ss.add(newTestSession(t, "b", now), "")
		if err != nil {
			t.Fatal(err)
		}
		// b signs in again in the same browser: the old session goes.
		b2, err := ss.add(newTestSession(t, "b", now), b1)
		if err != nil || ss.get(b1) != nil || ss.get(b2) == nil || ss.count() != 3 {
			t.Errorf("b's second sign-in: err %v, old session live %v, %d sessions", err, ss.get(b1) != nil, ss.count())
		}
		if n := ss.removeUser("a"); n != 2 || ss.get(third) != nil {
			t.Errorf("removeUser(a) ended %d sessions", n)
		}
	})
	t.Run("reaper", func(t *testing.T) {
		ss, err := newSessions(Login{Idle: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer ss.closeAll()
		if _, err := ss.add(newTestSession(t, "a", time.Now()), ""); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(30 * time.Second); ss.count() != 0; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("an expired session is still held after 30 s")
			}
		}
	})
}

// TestLoginLimiter: failures drain a key's bucket, other keys are not
// touched, and the table stays bounded whatever the keys (review 5).
func TestLoginLimiter(t *testing.T) {
	t.Parallel()
	l := newLimiter(2, time.Hour)
	l.fail("a")
	if l.wait("a") != 0 {
		t.Errorf("a refused after 1 failure of 2")
	}
	l.fail("a")
	if d := l.wait("a"); d <= 0 || d > time.Hour {
		t.Errorf("a after 2 failures waits %v", d)
	}
	if l.wait("b") != 0 {
		t.Errorf("b refused for a's failures")
	}
	for i := 0; i < limiterMaxEntries+100; i++ {
		l.fail(string(rune(i)) + "k")
	}
	if n := len(l.m); n > limiterMaxEntries {
		t.Errorf("%d keys held, bound %d", n, limiterMaxEntries)
	}
	ll := newLoginLimits()
	for i := 0; i < failuresPerAddr; i++ {
		ll.failed(string(rune('a'+i%26))+"user", "10.0.0.1")
	}
	if why := ll.refusal("fresh", "10.0.0.1"); why == "" {
		t.Errorf("no limit per address after %d failures", failuresPerAddr)
	}
	if why := ll.refusal("fresh", "10.0.0.2"); why != "" {
		t.Errorf("another address refused: %s", why)
	}
}

// TestFeaturesProbeBroker down: pages do not queue behind the features
// probe, and a failed probe is not retried on every page (review 13).
func TestFeaturesProbeBrokerDown(t *testing.T) {
	t.Parallel()
	// A broker that accepts connections and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	cl, err := kgo.NewClient(kgo.SeedBrokers(ln.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var f features
	start := time.Now()
	done := make(chan struct{})
	for range 5 {
		go func() { f.get(context.Background(), cl); done <- struct{}{} }()
	}
	for range 5 {
		<-done
	}
	// A probe times out after 3 s: queued behind it, 5 pages take 15 s; a
	// second probe takes 3 s. The bounds leave a loaded machine the rest.
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("5 concurrent pages took %v with the broker down: they queue behind the probe", d)
	}
	start = time.Now()
	f.get(context.Background(), cl)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("a page right after a failed probe took %v: probed again", d)
	}
}

// TestBrowseSlots: one person's stuck browse holds their own slot and one
// of the console's, not everyone's (review 15).
func TestBrowseSlots(t *testing.T) {
	t.Parallel()
	s := &Server{browsing: make(chan struct{}, maxBrowses)}
	a := context.WithValue(context.Background(), sessionKey{}, &session{user: "a", browsing: make(chan struct{}, 1)})
	b := context.WithValue(context.Background(), sessionKey{}, &session{user: "b", browsing: make(chan struct{}, 1)})
	relA, ok := s.acquireBrowse(a, nil)
	if !ok {
		t.Fatal("a's first browse refused")
	}
	if _, ok := s.acquireBrowse(a, time.After(50*time.Millisecond)); ok {
		t.Error("a ran two browses at once")
	}
	relB, ok := s.acquireBrowse(b, time.After(50*time.Millisecond))
	if !ok {
		t.Fatal("b waits for a's browse")
	}
	relB()
	relA()
	// Without login, maxBrowses at once, then a wait.
	var rels []func()
	for range maxBrowses {
		rel, ok := s.acquireBrowse(context.Background(), time.After(50*time.Millisecond))
		if !ok {
			t.Fatalf("browse %d of %d refused", len(rels)+1, maxBrowses)
		}
		rels = append(rels, rel)
	}
	if _, ok := s.acquireBrowse(context.Background(), time.After(50*time.Millisecond)); ok {
		t.Errorf("more than %d browses at once", maxBrowses)
	}
	for _, rel := range rels {
		rel()
	}
}
