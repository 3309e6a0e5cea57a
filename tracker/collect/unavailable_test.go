package collect

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/tracker"
	"github.com/tributary-io/tributary/tracker/deliver"
	"github.com/tributary-io/tributary/tracker/spool"
)

// A real delivery Sink whose broker is away fills its spool; the collector
// then answers 503 with Retry-After and says why, counts the events as
// unavailable, and is not ready until RetryAfter has passed.
func TestSpoolFull503AndNotReady(t *testing.T) {
	sink, err := deliver.New(deliver.Config{Brokers: []string{"127.0.0.1:1"}, SpoolDir: t.TempDir(),
		Spool: spool.Options{SegmentBytes: 16 << 10, MaxBytes: 64 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	now := testNow
	s, err := New(Config{Sources: []Source{{Name: "s", WriteKey: key, Topic: "events"}}, Now: func() time.Time { return now }}, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(); err != nil {
		t.Fatalf("ready before any event: %v", err)
	}
	var w *httptest.ResponseRecorder
	for i := 0; ; i++ {
		body := fmt.Sprintf(`{"batch":[{"type":"track","userId":"u","event":"E","messageId":"m-%d","properties":{"p":"%s"}}]}`, i, strings.Repeat("x", 1000))
		r := httptest.NewRequest("POST", "/v1/batch", strings.NewReader(body))
		r.SetBasicAuth(key, "")
		w = httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != 200 || i > 1000 {
			break
		}
	}
	if w.Code != 503 || w.Header().Get("Retry-After") != "5" {
		t.Fatalf("spool full: %d %v %s", w.Code, w.Header(), w.Body)
	}
	if b := w.Body.String(); !strings.Contains(b, `"code":"unavailable"`) || !strings.Contains(b, "disk spool is full") {
		t.Fatalf("spool full: %s", b)
	}
	if got := counter(t, s.m.rejected.WithLabelValues("s", ReasonUnavailable)); got != 1 {
		t.Errorf("unavailable counted %v", got)
	}
	err = s.Ready()
	if err == nil || !strings.Contains(err.Error(), "spool full") {
		t.Fatalf("ready with a full spool: %v", err)
	}
	// Not ready is not forever: a balancer that stopped sending tries again.
	now = now.Add(DefaultRetryAfter)
	if err := s.Ready(); err != nil {
		t.Fatalf("ready after Retry-After: %v", err)
	}
}

// ack=broker: the broker not acknowledging is a 503 that says so.
func TestNotAcknowledged503(t *testing.T) {
	f := newFixture(t, nil)
	f.sink.fail = fmt.Errorf("%w: %w", deliver.ErrNotAcknowledged, context.DeadlineExceeded)
	r := f.do(t, "POST", "/v1/track", key, `{"userId":"u","event":"E"}`, nil)
	if r.code != 503 || r.hdr.Get("Retry-After") != "5" || r.body["code"] != ReasonUnavailable ||
		!strings.Contains(r.body["error"].(string), "broker did not acknowledge") {
		t.Fatalf("%d %v %s", r.code, r.hdr, r.raw)
	}
	if err := f.s.Ready(); err == nil {
		t.Fatal("ready right after the broker failed")
	}
	// One accepted request makes it ready again.
	f.sink.fail = nil
	if r := f.do(t, "POST", "/v1/track", key, `{"userId":"u","event":"E"}`, nil); r.code != 200 {
		t.Fatalf("%d %s", r.code, r.raw)
	}
	if err := f.s.Ready(); err != nil {
		t.Fatalf("ready after a success: %v", err)
	}
}

type readySink struct {
	memSink
	err error
}

func (s *readySink) Ready() error { return s.err }

// A Sink that knows it cannot take events makes the collector not ready
// before any sender is refused.
func TestReadyAsksTheSink(t *testing.T) {
	sink := &readySink{err: spool.ErrSpoolFull}
	s, err := New(Config{Sources: []Source{{WriteKey: key, Topic: "events"}}}, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Ready(); !errors.Is(err, spool.ErrSpoolFull) {
		t.Fatalf("%v", err)
	}
	sink.err = nil
	if err := s.Ready(); err != nil {
		t.Fatalf("%v", err)
	}
	var _ tracker.Sink = sink
}
