package simulate_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/tracker"
	"github.com/tributary-io/tributary/tracker/collect"
	"github.com/tributary-io/tributary/tracker/simulate"
)

type memSink struct {
	mu     sync.Mutex
	events []tracker.Event
}

func (m *memSink) Submit(_ context.Context, evs []tracker.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, evs...)
	return nil
}

func (m *memSink) Close() error { return nil }

// The simulated traffic passes the tracker's own validation against the
// activity schema, at about the asked rate, and looks like a shop's: page
// views, searches, product views, sign-ups, from many visitors.
func TestTrafficIsValidActivity(t *testing.T) {
	sink := &memSink{}
	c, err := collect.New(collect.Config{Sources: []collect.Source{{Name: "demo", WriteKey: "k", Topic: "events"}}}, sink)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(c)
	defer ts.Close()
	// Run until 1,000 events went out: a loaded machine may send them
	// slower than asked, never faster (what a test can hold to; the rate
	// itself is the benchmarks' business).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var st simulate.Stats
	go func() {
		for ctx.Err() == nil && st.Events.Load() < 1000 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	start := time.Now()
	if err := simulate.Run(ctx, simulate.Config{URL: ts.URL, WriteKey: "k", Rate: 1000, Visitors: 50, Seed: 7}, &st); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	if st.Rejected.Load() != 0 || st.Failed.Load() != 0 {
		t.Fatalf("rejected %d, failed batches %d: the traffic must be valid", st.Rejected.Load(), st.Failed.Load())
	}
	n := st.Events.Load()
	if n < 1000 {
		t.Fatalf("%d events in a minute at 1000/s", n)
	}
	if took < 500*time.Millisecond {
		t.Fatalf("%d events in %v at 1000/s: the simulator does not pace itself", n, took)
	}
	// The batch in flight when the run ended was cancelled on the client's
	// side, and the tracker may have taken it all the same: wait for its
	// handler, then allow that one batch (50 events) beyond the count.
	ts.Close()
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if got := int64(len(sink.events)); got < n || got > n+50 {
		t.Fatalf("the tracker took %d events, the simulator counted %d (one cancelled batch of 50 may be taken uncounted)", got, n)
	}
	kinds := map[string]int{}
	visitors := map[string]bool{}
	for _, e := range sink.events {
		var m struct {
			Type, Event, AnonymousID string
		}
		if err := json.Unmarshal(e.Value, &m); err != nil {
			t.Fatal(err)
		}
		kinds[m.Type+" "+m.Event]++
		visitors[m.AnonymousID] = true
	}
	for _, k := range []string{"page ", "track Products Searched", "track Product Viewed", "identify ", "track Signed Up"} {
		if kinds[k] == 0 {
			t.Errorf("no %q in %v", k, kinds)
		}
	}
	if len(visitors) < 25 {
		t.Errorf("%d visitors, want most of 50", len(visitors))
	}
}
