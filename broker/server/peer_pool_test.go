package server

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"sync/atomic"
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

// TestPeerPoolNoResendAfterTimeout: a request that timed out on a pooled
// connection is not sent again: the peer may still be working on it, and
// a second copy (a transaction marker) could land after the transaction
// moved on. The peer here answers its connection's first request and then
// holds every later one.
func TestPeerPoolNoResendAfterTimeout(t *testing.T) {
	s := startBroker(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var got atomic.Int64
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				for n := 0; ; n++ {
					var size [4]byte
					if _, err := io.ReadFull(nc, size[:]); err != nil {
						return
					}
					body := make([]byte, binary.BigEndian.Uint32(size[:]))
					if _, err := io.ReadFull(nc, body); err != nil {
						return
					}
					got.Add(1)
					if n > 0 {
						continue // held: never answered
					}
					resp := kmsg.NewPtrApiVersionsResponse()
					resp.SetVersion(int16(binary.BigEndian.Uint16(body[2:])))
					out := append(make([]byte, 4, 64), body[4:8]...) // the correlation id
					out = resp.AppendTo(out)
					binary.BigEndian.PutUint32(out, uint32(len(out)-4))
					if _, err := nc.Write(out); err != nil {
						return
					}
				}
			}()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	addr := ln.Addr().String()
	if _, err := s.peerRoundTrip(ctx, addr, "pool-test", kmsg.NewPtrApiVersionsRequest(), 5*time.Second); err != nil {
		t.Fatalf("first request: %v", err)
	}
	if _, err := s.peerRoundTrip(ctx, addr, "pool-test", kmsg.NewPtrApiVersionsRequest(), 300*time.Millisecond); err == nil {
		t.Fatal("a request the peer never answers succeeded")
	}
	time.Sleep(500 * time.Millisecond)
	if n := got.Load(); n != 2 {
		t.Fatalf("the peer received %d requests, want 2: the one that timed out was sent again", n)
	}
}
