package fsys_test

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
)

// silentServer accepts connections, reads what they send and never
// answers: a hung NameNode. closed counts the connections the client
// closed.
type silentServer struct {
	ln       net.Listener
	accepted atomic.Int32
	closed   atomic.Int32
	mu       sync.Mutex
	conns    []net.Conn
}

func startSilent(t *testing.T) *silentServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &silentServer{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.accepted.Add(1)
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
			go func() {
				io.Copy(io.Discard, c) // returns once the client closes
				s.closed.Add(1)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range s.conns {
			c.Close()
		}
	})
	return s
}

// TestOpenTimesOutOnSilentNameNode: a NameNode that accepts and never
// answers fails fsys.Open within its IOTimeout, with ErrTimeout, and the
// client closes the connection it waited on. Before, Open waited for
// ever (colinmarc/hdfs sets no deadline; the dial timeout covers the
// connect alone).
func TestOpenTimesOutOnSilentNameNode(t *testing.T) {
	t.Parallel()
	s := startSilent(t)
	const timeout = 300 * time.Millisecond
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		fs, err := fsys.Open("hdfs://"+s.ln.Addr().String()+"/x", fsys.Options{User: "tributary", IOTimeout: timeout})
		if err == nil {
			fs.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Open succeeded against a NameNode that never answers")
		}
		if !errors.Is(err, fsys.ErrTimeout) || !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("Open: %v, want fsys.ErrTimeout", err)
		}
		t.Logf("Open failed after %v: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(30 * time.Second):
		t.Fatalf("Open still waits after 30 s with IOTimeout %v", timeout)
	}
	// The connection it waited on is closed, not left to the OS.
	deadline := time.Now().Add(10 * time.Second)
	for s.closed.Load() < s.accepted.Load() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if a, c := s.accepted.Load(), s.closed.Load(); a == 0 || c < a {
		t.Errorf("%d connections accepted, %d closed by the client", a, c)
	}
}
