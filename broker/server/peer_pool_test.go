package server

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPeerPoolReuses: the transaction requests to another broker reuse
// their connections: serial requests to one destination dial once,
// concurrent ones at most once each, and a connection the peer closed is
// replaced on the next request without failing it. The peer here is a
// real broker's listener (this broker's own).
func TestPeerPoolReuses(t *testing.T) {
	s := startBroker(t, nil)
	addr := s.Addr("PLAINTEXT")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	call := func() {
		t.Helper()
		resp, err := s.peerRoundTrip(ctx, addr, "pool-test", kmsg.NewPtrApiVersionsRequest(), 5*time.Second)
		if err != nil {
			t.Fatalf("peerRoundTrip: %v", err)
		}
		if len(resp.(*kmsg.ApiVersionsResponse).ApiKeys) == 0 {
			t.Fatal("empty ApiVersions")
		}
	}
	for range 5 {
		call()
	}
	if d := s.peerConns.dials.Load(); d != 1 {
		t.Fatalf("5 serial requests dialed %d connections, want 1", d)
	}

	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() { defer wg.Done(); call() }()
	}
	wg.Wait()
	if d := s.peerConns.dials.Load(); d > 3 {
		t.Fatalf("after 3 concurrent requests %d dials, want at most 3", d)
	}
	before := s.peerConns.dials.Load()
	for range 5 {
		call()
	}
	if d := s.peerConns.dials.Load(); d != before {
		t.Fatalf("serial requests after the burst dialed %d more", d-before)
	}

	// The peer closes the idle connections (its idle timeout, a restart):
	// the next request still succeeds, on a new one.
	s.peerConns.mu.Lock()
	for _, cs := range s.peerConns.idle {
		for _, c := range cs {
			c.Close()
		}
	}
	s.peerConns.mu.Unlock()
	call()
	if d := s.peerConns.dials.Load(); d != before+1 {
		t.Fatalf("after the connections were closed: %d dials, want %d", d, before+1)
	}
}
