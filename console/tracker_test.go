package console

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
)

const trackerWriteKey = "wk-console"

// startTracker runs the real `tributary tracker` binary in front of the
// broker, sending the events of trackerWriteKey to topic, and returns its
// URL and the URL of its admin endpoint (/metrics). It is stopped with
// SIGTERM and must exit cleanly, without a race or a panic in its log.
func startTracker(t *testing.T, bootstrap, topic string) (string, string) {
	t.Helper()
	addr, admin := freeAddr(t), freeAddr(t)
	var log bytes.Buffer
	var mu sync.Mutex
	cmd := exec.Command(testbroker.Binary(t), "tracker", "--write-key", trackerWriteKey, "--topic", topic,
		"--listen", addr, "--admin-listen", admin, "--bootstrap", bootstrap, "--spool-dir", filepath.Join(t.TempDir(), "spool"))
	w := lockedBuffer{&log, &mu}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	logText := func() string { mu.Lock(); defer mu.Unlock(); return log.String() }
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("tracker exited with %v after SIGTERM:\n%s", err, logText())
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Errorf("tracker did not stop within 30 s of SIGTERM:\n%s", logText())
		}
		if l := logText(); strings.Contains(l, "DATA RACE") || strings.Contains(l, "panic:") {
			t.Errorf("tracker log:\n%s", l)
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if res, err := http.Get("http://" + addr + "/tracker.js"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return "http://" + addr, "http://" + admin
			}
		}
		select {
		case err := <-exited:
			t.Fatalf("tracker exited (%v):\n%s", err, logText())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("tracker not serving after 30 s:\n%s", logText())
		}
	}
}

type lockedBuffer struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// track sends one event through the tracker's Segment-compatible API.
func track(t *testing.T, trackerURL, body string) int {
	t.Helper()
	res, err := http.Post(trackerURL+"/v1/track", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestTrackerRateAfterFailedScrape: after a failed scrape, the next rate
// divides by the time since the last good one, not since the failure, so
// it is not doubled (review 12).
func TestTrackerRateAfterFailedScrape(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	accepted, fail := 0, false
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintf(w, "tributary_tracker_events_accepted_total{source=\"web\"} %d\n", accepted)
	}))
	defer hs.Close()
	ts := newTrackerStats(hs.URL, time.Second)
	ctx := context.Background()
	start := time.Now()
	ts.once(ctx)
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	fail = true
	mu.Unlock()
	ts.once(ctx)
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	fail, accepted = false, 1000
	mu.Unlock()
	ts.once(ctx)
	span := time.Since(start).Seconds()
	ts.mu.Lock()
	last := ts.ring[len(ts.ring)-1]
	ts.mu.Unlock()
	// The true rate is 1000 over the whole span (a little less than it).
	if !last.OK || last.Accepted*span < 1000 || last.Accepted*span > 1500 {
		t.Errorf("rate %v/s over %.2f s: want about %v", last.Accepted, span, 1000/span)
	}
}

// TestTrackerURLCredentials: credentials in --tracker are sent as basic
// auth and shown nowhere (review 14).
func TestTrackerURLCredentials(t *testing.T) {
	t.Parallel()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "scraper" || p != "hunter2" {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		fmt.Fprintln(w, "tributary_tracker_events_accepted_total 5")
	}))
	defer hs.Close()
	ts := newTrackerStats(strings.Replace(hs.URL, "http://", "http://scraper:hunter2@", 1), time.Second)
	ts.once(context.Background())
	v := ts.view(time.Now())
	if v.Err != "" || v.Totals.Accepted != 5 {
		t.Errorf("scrape with the URL's credentials: err %q, accepted %v", v.Err, v.Totals.Accepted)
	}
	if strings.Contains(v.URL, "hunter2") || strings.Contains(v.URL, "scraper") {
		t.Errorf("the page shows %q", v.URL)
	}
}
