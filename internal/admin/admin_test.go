package admin

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestAdminEndpoint(t *testing.T) {
	reg := NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "tributary_test_events_total", Help: "test"})
	reg.MustRegister(c)
	c.Add(3)
	var ready atomic.Bool
	s, err := Listen("127.0.0.1:0", reg, func() error {
		if !ready.Load() {
			return errors.New("loading")
		}
		return nil
	}, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	base := "http://" + s.Addr()

	if code, body := get(t, base+"/healthz"); code != 200 || body != "ok\n" {
		t.Fatalf("/healthz: %d %q", code, body)
	}
	if code, body := get(t, base+"/readyz"); code != 503 || !strings.Contains(body, "loading") {
		t.Fatalf("/readyz before ready: %d %q, want 503 naming the reason", code, body)
	}
	ready.Store(true)
	if code, _ := get(t, base+"/readyz"); code != 200 {
		t.Fatalf("/readyz when ready: %d", code)
	}
	code, body := get(t, base+"/metrics")
	for _, want := range []string{"tributary_test_events_total 3", "go_goroutines", "process_resident_memory_bytes"} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics (%d) lacks %q", code, want)
		}
	}
}

func do(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// PUT /loglevel changes what every logger made from the process's handler
// writes, at once, and GET reports the level in force.
func TestLogLevel(t *testing.T) {
	var level slog.LevelVar
	var out syncBuffer
	logger := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: &level}))
	component := logger.With("component", "log") // made before the change, as daemons do at start
	s, err := Listen("127.0.0.1:0", NewRegistry(), func() error { return nil }, logger, WithLogLevel(&level))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(context.Background())
	url := "http://" + s.Addr() + "/loglevel"

	if code, body := get(t, url); code != 200 || body != "info\n" {
		t.Fatalf("GET /loglevel: %d %q, want 200 \"info\"", code, body)
	}
	component.Debug("segment rolled")
	if strings.Contains(out.String(), "segment rolled") {
		t.Fatal("a debug line was written at level info")
	}
	if code, body := do(t, http.MethodPut, url, "debug\n"); code != 200 || body != "debug\n" {
		t.Fatalf("PUT debug: %d %q", code, body)
	}
	component.Debug("segment rolled")
	if !strings.Contains(out.String(), "segment rolled") {
		t.Fatalf("no debug line after PUT debug; log:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "log level changed") {
		t.Errorf("the change itself was not logged:\n%s", out.String())
	}
	if code, _ := do(t, http.MethodPut, url+"?level=ERROR", ""); code != 200 {
		t.Fatalf("PUT ?level=ERROR: %d", code)
	}
	component.Warn("disk almost full")
	if strings.Contains(out.String(), "disk almost full") {
		t.Error("a warning was written at level error")
	}
	if code, body := do(t, http.MethodPut, url, "verbose"); code != 400 || !strings.Contains(body, "want debug, info, warn or error") {
		t.Errorf("PUT verbose: %d %q, want 400 naming the levels", code, body)
	}
	if code, body := get(t, url); body != "error\n" {
		t.Errorf("a refused PUT changed the level: %d %q", code, body)
	}
	if code, _ := do(t, http.MethodDelete, url, ""); code != 405 {
		t.Errorf("DELETE /loglevel: %d, want 405", code)
	}
}

// The profiler answers on a loopback address; on a wildcard address it is
// refused with a way to enable it, unless the daemon enabled it.
func TestPprofOnlyOnLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		opts    []Option
		allowed bool
	}{
		{"127.0.0.1:0", nil, true},
		{":0", nil, false},
		{":0", []Option{WithPprof(true)}, true},
	} {
		s, err := Listen(tc.addr, NewRegistry(), func() error { return nil }, slog.New(slog.DiscardHandler), tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(s.Addr())
		base := "http://127.0.0.1:" + port
		code, body := get(t, base+"/debug/pprof/goroutine?debug=1")
		switch {
		case tc.allowed && (code != 200 || !strings.Contains(body, "goroutine profile")):
			t.Errorf("%s %d options: /debug/pprof/goroutine answered %d %.80q, want a profile", tc.addr, len(tc.opts), code, body)
		case !tc.allowed && (code != 403 || !strings.Contains(body, "--admin-pprof")):
			t.Errorf("%s: /debug/pprof/goroutine answered %d %.80q, want 403 naming --admin-pprof", tc.addr, code, body)
		}
		if !tc.allowed {
			if code, _ := get(t, base+"/debug/pprof/heap"); code != 403 {
				t.Errorf("%s: /debug/pprof/heap answered %d, want 403", tc.addr, code)
			}
			if code, _ := get(t, base+"/metrics"); code != 200 {
				t.Errorf("%s: /metrics answered %d: the refusal must cover pprof only", tc.addr, code)
			}
		}
		s.Close(context.Background())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestBrokerAddr(t *testing.T) {
	for _, tc := range []struct {
		port int
		want string
	}{
		{9092, BrokerDefault},
		{9192, "127.0.0.1:9744"},
		{9193, "127.0.0.1:9745"},
		{0, "127.0.0.1:0"},
		{65000, "127.0.0.1:0"},
	} {
		if got := BrokerAddr(tc.port); got != tc.want {
			t.Errorf("BrokerAddr(%d) = %s, want %s", tc.port, got, tc.want)
		}
	}
}
