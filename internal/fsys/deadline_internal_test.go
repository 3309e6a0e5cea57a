package fsys

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// silentConn dials, through deadlineDialer(timeout), a listener that
// accepts and never writes.
func silentConn(t *testing.T, timeout time.Duration) net.Conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
			go io.Copy(io.Discard, c)
		}
	}()
	c, err := deadlineDialer(timeout)(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestDeadlineConn: our timeout fails the read with ErrTimeout and closes
// the connection; a caller's earlier deadline (colinmarc's
// FileReader.SetDeadline) wins and leaves the connection open, as it would
// without the wrapper.
func TestDeadlineConn(t *testing.T) {
	t.Parallel()
	c := silentConn(t, 200*time.Millisecond)
	start := time.Now()
	_, err := c.Read(make([]byte, 1))
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read from a silent peer: %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the read returned after %v with a 200ms timeout", d)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write after our timeout: %v, want the connection closed", err)
	}

	c = silentConn(t, time.Minute)
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	start = time.Now()
	_, err = c.Read(make([]byte, 1))
	if errors.Is(err, ErrTimeout) || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the caller's deadline: %v, want the plain deadline error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the caller's 100ms deadline returned after %v", d)
	}
	if _, err := c.Write([]byte("x")); err != nil {
		t.Errorf("write after the caller's deadline passed: %v, want the connection open", err)
	}
}
