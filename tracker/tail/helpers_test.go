package tail

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/segmentio/kafka-go"
)

// producer is a fake broker: it keeps what it acknowledged. gate, when
// set, holds every call until a value is sent on it; fail fails the next
// calls.
type producer struct {
	mu    sync.Mutex
	msgs  []kafka.Message
	gate  chan struct{}
	fail  int
	calls int
}

func (p *producer) WriteMessages(ctx context.Context, msgs ...kafka.Message) error {
	p.mu.Lock()
	gate := p.gate
	p.calls++
	p.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fail > 0 {
		p.fail--
		return errors.New("broker away")
	}
	p.msgs = append(p.msgs, msgs...)
	return nil
}

func (p *producer) values() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, len(p.msgs))
	for i, m := range p.msgs {
		out[i] = string(m.Value)
	}
	return out
}

func (p *producer) messages() []kafka.Message {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]kafka.Message(nil), p.msgs...)
}

// waitValues waits until the producer holds at least n records.
func (p *producer) waitValues(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v := p.values()
		if len(v) >= n {
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d records after 30 s, want %d: %q", len(v), n, v)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// testConfig is fast: scans every 20 ms, polls every 5 ms.
func testConfig(dir string, in ...Input) Config {
	for i := range in {
		if in[i].Topic == "" {
			in[i].Topic = "logs"
		}
	}
	return Config{
		Inputs:        in,
		PositionsFile: filepath.Join(dir, "positions.json"),
		ScanInterval:  20 * time.Millisecond,
		PollInterval:  5 * time.Millisecond,
		RotateWait:    100 * time.Millisecond,
		Registerer:    prometheus.NewRegistry(),
	}
}

// run starts a tailer; the returned function stops it and waits.
func run(t *testing.T, cfg Config, p *producer) (*Tailer, func()) {
	t.Helper()
	tl, err := New(cfg, p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tl.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return tl, stop
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// lines is "<prefix>-<i>\n" for i in [from, to).
func lines(prefix string, from, to int) string {
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "%s-%04d\n", prefix, i)
	}
	return b.String()
}

func want(prefix string, from, to int) []string {
	return strings.Fields(lines(prefix, from, to))
}

func equal(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("records:\n got %q\nwant %q", got, want)
	}
}

func counter(t *testing.T, c prometheus.Collector) float64 {
	t.Helper()
	return testutil.ToFloat64(c)
}

func savedPositions(t *testing.T, path string) []position {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var doc positionsDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Files
}
