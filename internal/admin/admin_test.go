package admin

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
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
