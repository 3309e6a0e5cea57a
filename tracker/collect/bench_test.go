package collect

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-io/tributary/formats/decode"
)

// batchBodies returns n /v1/batch bodies of size events each, built from
// decode.ActivityEvent (about 400 B of JSON per event, every one with its
// own messageId, a context with a user agent and an IP).
func batchBodies(n, size int) [][]byte {
	out := make([][]byte, n)
	i := 0
	for b := range out {
		body := []byte(`{"sentAt":"2024-05-01T00:00:10.000Z","batch":[`)
		for e := range size {
			if e > 0 {
				body = append(body, ',')
			}
			body = decode.ActivityEvent(body, i)
			i++
		}
		out[b] = append(body, "]}"...)
	}
	return out
}

// benchServer is a collector with an in-memory Sink that forgets what it
// is given. The clock moves on by twice the dedup window every round of
// bodies, so that with dedup on every event is new (as on a live site)
// without the window's memory growing with b.N.
func benchServer(b *testing.B, dedup bool, rounds *int) *Server {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	s, err := New(Config{
		Sources:       []Source{{Name: "s", WriteKey: key, Topic: "events"}},
		DedupDisabled: !dedup,
		DedupWindow:   time.Minute,
		Now:           func() time.Time { return now.Add(time.Duration(*rounds) * 2 * time.Minute) },
	}, nullSink{})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// cpuTime is the CPU time the process used so far, garbage collection
// included: on a machine shared with other work it is steadier than the
// wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportEvents reports events/s (wall) and CPU ns per event from cpu0,
// the CPU time when the timed loop began.
func reportEvents(b *testing.B, events int, cpu0 time.Duration) {
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(events), "cpu-ns/event")
}

// BenchmarkBatch is /v1/batch in process (no network, a Sink that drops
// the events): the collector's own cost. events/s is wall time on however
// many cores the runtime used; cpu-ns/event is the whole process's CPU
// (garbage collection included, the benchmark's own request building too);
// B/s counts request body bytes.
func BenchmarkBatch(b *testing.B) {
	for _, size := range []int{1, 10, 100, 500} {
		for _, dedup := range []bool{false, true} {
			b.Run(fmt.Sprintf("events=%d/dedup=%v", size, dedup), func(b *testing.B) {
				bodies := batchBodies(64, size)
				rounds := 0
				s := benchServer(b, dedup, &rounds)
				b.SetBytes(int64(len(bodies[0])))
				b.ReportAllocs()
				i := 0
				cpu0 := cpuTime()
				for b.Loop() {
					r := httptest.NewRequest("POST", "/v1/batch", strings.NewReader(string(bodies[i])))
					r.SetBasicAuth(key, "")
					r.Header.Set("User-Agent", ua)
					w := httptest.NewRecorder()
					s.ServeHTTP(w, r)
					if w.Code != 200 {
						b.Fatalf("%d %s", w.Code, w.Body)
					}
					if i++; i == len(bodies) {
						i = 0
						rounds++
					}
				}
				reportEvents(b, b.N*size, cpu0)
			})
		}
	}
}

// BenchmarkSingle is /v1/track with one ActivityEvent.
func BenchmarkSingle(b *testing.B) {
	bodies := make([][]byte, 64)
	for i := range bodies {
		bodies[i] = decode.ActivityEvent(nil, i)
	}
	rounds := 0
	s := benchServer(b, true, &rounds)
	b.SetBytes(int64(len(bodies[0])))
	b.ReportAllocs()
	i := 0
	cpu0 := cpuTime()
	for b.Loop() {
		r := httptest.NewRequest("POST", "/v1/track", strings.NewReader(string(bodies[i])))
		r.SetBasicAuth(key, "")
		r.Header.Set("User-Agent", ua)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatalf("%d %s", w.Code, w.Body)
		}
		if i++; i == len(bodies) {
			i = 0
			rounds++
		}
	}
	reportEvents(b, b.N, cpu0)
}
