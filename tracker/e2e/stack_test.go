package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/kafkacli"
	"github.com/tributary-io/tributary/internal/testbroker"
)

const (
	topic      = "events"
	partitions = 3
	writeKey   = "wk-e2e"
)

// stack is a broker and a `tributary tracker` in front of it, both the real
// binary, and a consumer reading the topic from the start.
type stack struct {
	broker *testbroker.Broker
	// URL is the tracker's base URL (http://127.0.0.1:port) and admin the
	// base URL of its /metrics.
	URL, admin string
	records    *records
}

func startStack(t *testing.T) *stack {
	t.Helper()
	if testing.Short() {
		t.Skip("starts the broker and the tracker")
	}
	b := testbroker.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := kafkacli.Connect(ctx, b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	errs, err := c.CreateTopics(ctx, []kafka.TopicConfig{{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}})
	c.Close()
	if err != nil || errs[topic] != nil {
		t.Fatalf("create topic: %v %v", err, errs)
	}

	addr, adminAddr := freeAddr(t), freeAddr(t)
	s := &stack{broker: b, URL: "http://" + addr, admin: "http://" + adminAddr}
	var log bytes.Buffer
	var logMu sync.Mutex
	cmd := exec.Command(testbroker.Binary(t), "tracker", "--write-key", writeKey, "--topic", topic,
		"--listen", addr, "--admin-listen", adminAddr, "--bootstrap", b.Addr(), "--spool-dir", filepath.Join(t.TempDir(), "spool"))
	cmd.Stdout, cmd.Stderr = lockedWriter{&log, &logMu}, lockedWriter{&log, &logMu}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	trackerLog := func() string { logMu.Lock(); defer logMu.Unlock(); return log.String() }
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Errorf("tracker did not stop within 30s of SIGTERM:\n%s", trackerLog())
		}
		if t.Failed() {
			t.Logf("tracker log:\n%s", trackerLog())
		}
	})
	// Ready when it serves tracker.js, which is also what a page needs first.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		res, err := http.Get(s.URL + "/tracker.js")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				break
			}
		}
		select {
		case <-exited:
			t.Fatalf("tracker exited:\n%s", trackerLog())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("tracker not serving /tracker.js after 30s (%v):\n%s", err, trackerLog())
		}
	}
	s.records = consume(t, b.Addr())
	return s
}

type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
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

// record is one event read from the topic, and when the consumer saw it.
type record struct {
	Key     string
	Value   map[string]any
	Raw     []byte
	Arrived time.Time
}

// records is what the consumer has read so far.
type records struct {
	mu   sync.Mutex
	all  []record
	more chan struct{} // closed and replaced on every arrival
}

// consume reads the topic from the start with franz-go until the test ends,
// polling at most 50 ms apart so that Arrived is close to the truth.
func consume(t *testing.T, addr string) *records {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	rs := &records{more: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			now := time.Now()
			var got []record
			fs.EachRecord(func(r *kgo.Record) {
				rec := record{Key: string(r.Key), Raw: r.Value, Arrived: now}
				if err := json.Unmarshal(r.Value, &rec.Value); err != nil {
					t.Errorf("record at offset %d is not JSON: %v: %s", r.Offset, err, r.Value)
				}
				got = append(got, rec)
			})
			if len(got) > 0 {
				rs.mu.Lock()
				rs.all = append(rs.all, got...)
				close(rs.more)
				rs.more = make(chan struct{})
				rs.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		cl.Close()
	})
	return rs
}

// wait returns the first record for which match is true, waiting for it up
// to timeout; what says what was awaited, for the failure message.
func (rs *records) wait(t *testing.T, timeout time.Duration, what string, match func(record) bool) record {
	t.Helper()
	deadline := time.After(timeout)
	for {
		rs.mu.Lock()
		for _, r := range rs.all {
			if match(r) {
				rs.mu.Unlock()
				return r
			}
		}
		more := rs.more
		n := len(rs.all)
		rs.mu.Unlock()
		select {
		case <-more:
		case <-deadline:
			t.Fatalf("%s: not in the topic after %v; it holds %d records:\n%s", what, timeout, n, rs.dump())
		}
	}
}

// count is the number of records for which match is true.
func (rs *records) count(match func(record) bool) int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	n := 0
	for _, r := range rs.all {
		if match(r) {
			n++
		}
	}
	return n
}

func (rs *records) dump() string {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var b strings.Builder
	for _, r := range rs.all {
		fmt.Fprintf(&b, "  key %q: %s\n", r.Key, r.Raw)
	}
	return b.String()
}

// dig returns the value at a path of object keys, or nil.
func dig(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// metric is the sum of a counter's series whose labels contain all of
// labels (`name="value"` strings), read from the tracker's /metrics.
func (s *stack) metric(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	res, err := http.Get(s.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		ok := true
		for _, l := range labels {
			ok = ok && strings.Contains(line, l)
		}
		var v float64
		if i := strings.LastIndexByte(line, ' '); ok && i > 0 {
			if _, err := fmt.Sscan(line[i+1:], &v); err == nil {
				sum += v
			}
		}
	}
	return sum
}

// lookPath finds an executable: the environment variable env when set,
// else the first of names on PATH.
func lookPath(env string, names ...string) (string, error) {
	if p := os.Getenv(env); p != "" {
		return exec.LookPath(p)
	}
	var err error
	for _, n := range names {
		var p string
		if p, err = exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", err
}
