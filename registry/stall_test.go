package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// stall sends the headers of a POST whose body never finishes, as a slow
// or hostile client does, and keeps the connection open.
func stall(t *testing.T, addr, path string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"sche", path)
}

// A client that stalls in the middle of its body holds no lock: other
// clients are served, and the tail (which takes mu) is not held up.
func TestStalledBodyBlocksNobody(t *testing.T) {
	t.Parallel()
	r := &Registry{st: newState(), ready: make(chan struct{})}
	r.cfg.defaults()
	close(r.ready)
	r.st.apply(schemaKey("a", 1), val("a", 1, 1, `"int"`))
	srv := httptest.NewServer(r.Handler())
	t.Cleanup(srv.Close) // after the stalled connections close: it waits for their requests
	addr := strings.TrimPrefix(srv.URL, "http://")
	for _, p := range []string{"/subjects/a/versions", "/subjects/a", "/compatibility/subjects/a/versions/latest"} {
		stall(t, addr, p)
	}
	time.Sleep(100 * time.Millisecond) // let the handlers reach their body reads
	cl := &http.Client{Timeout: 3 * time.Second}
	res, err := cl.Get(srv.URL + "/subjects")
	if err != nil {
		t.Fatalf("another client, while three stall mid-body: %v", err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if string(b) != "[\"a\"]\n" {
		t.Fatalf("GET /subjects: %s", b)
	}
	done := make(chan struct{})
	go func() {
		r.mu.Lock()
		r.mu.Unlock()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the state lock is held by a stalled request")
	}
}

// Close returns promptly even when a client stalls mid-body and the
// caller gives no deadline (the broker stopping on SIGTERM).
func TestCloseWithStalledClient(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nobody := ln.Addr().String()
	ln.Close() // a broker that never answers: the registry is not ready
	r, err := Start(Config{Brokers: []string{nobody}, Listen: "127.0.0.1:0", ShutdownTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	stall(t, r.Addr(), "/subjects/a/versions")
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	closed := make(chan error, 1)
	go func() { closed <- r.Close(context.Background()) }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close still waits for the stalled client after 30 s")
	}
	t.Logf("closed in %v", time.Since(start))
}

// A schema nested too deep is refused with 42201 before any check runs,
// and the answer does not echo the (large) schema back.
func TestDeepSchemaRefused(t *testing.T) {
	t.Parallel()
	r := &Registry{st: newState(), ready: make(chan struct{})}
	r.cfg.defaults()
	close(r.ready)
	r.st.apply(schemaKey("a", 1), val("a", 1, 1, `"int"`))
	deep := strings.Repeat(`{"type":"array","items":`, 2000) + `"int"` + strings.Repeat(`}`, 2000)
	body, _ := json.Marshal(map[string]string{"schema": deep})
	for _, p := range []string{"/subjects/a", "/compatibility/subjects/a/versions/latest"} {
		rec := httptest.NewRecorder()
		r.Handler().ServeHTTP(rec, httptest.NewRequest("POST", p, bytes.NewReader(body)))
		var e apiError
		if json.Unmarshal(rec.Body.Bytes(), &e) != nil || rec.Code != 422 || e.Code != 42201 ||
			!strings.Contains(e.Message, "schema nested too deep") || len(e.Message) > 200 {
			t.Fatalf("POST %s: %d %.300s", p, rec.Code, rec.Body)
		}
	}
}
