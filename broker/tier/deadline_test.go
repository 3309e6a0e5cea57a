package tier_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/broker/tier"
	"github.com/tributary-io/tributary/internal/testcluster"
)

// syncBuffer is a log sink the manager's goroutines write to.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestPassTimeoutOnSilentNameNode: a "NameNode" that accepts connections
// and never answers (internal/fsys has only a dial timeout). A pass
// gives up on the partition after PassTimeout and logs it, the next pass
// skips it while the stuck call runs rather than queueing behind it, and
// DeleteRecords answers within CallTimeout. Before, the
// pass never returned: no partition of the broker uploaded again.
func TestPassTimeoutOnSilentNameNode(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conns []net.Conn
	var connMu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			connMu.Lock()
			conns = append(conns, c)
			connMu.Unlock()
			go io.Copy(io.Discard, c) // read, never answer
		}
	}()
	defer func() {
		connMu.Lock()
		defer connMu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}()

	cfg := log.DefaultConfig()
	cfg.SegmentBytes = 2048
	cfg.RemoteStorage = true
	l, err := log.Open(filepath.Join(t.TempDir(), "t-0"), cfg, log.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	opts := record.DefaultBuildOptions()
	opts.BaseTimestamp = time.Now().UnixMilli()
	for range 30 {
		b, _ := record.Build(opts, record.NewRecords(record.KV{Value: bytes.Repeat([]byte{1}, 200)}))
		if _, err := l.AppendAsLeader(b, 0); err != nil {
			t.Fatal(err)
		}
	}
	var logs syncBuffer
	m := tier.New(tier.Config{URI: fmt.Sprintf("hdfs://%s/silent", ln.Addr()), User: "tributary",
		Interval: 100 * time.Millisecond, PassTimeout: 500 * time.Millisecond, CallTimeout: 500 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	defer m.Close()
	target := tier.Target{TP: l.TopicPartition(), TopicID: "id", Log: l, Bound: l.LogEndOffset(), LeaderEpoch: 0}
	start := time.Now()
	m.Pass([]tier.Target{target}, nil)
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("the pass took %v with PassTimeout 500ms", d)
	}
	if !strings.Contains(logs.String(), "remote storage did not answer") {
		t.Fatalf("the pass did not report the timeout; its log:\n%s", logs.String())
	}
	start = time.Now()
	// Nothing is known remote here, so nil is right too; what matters is
	// that it answers.
	if err := m.DeleteRecords(l.TopicPartition(), 5); err != nil && !errors.Is(err, tier.ErrUnavailable) {
		t.Errorf("DeleteRecords while the pass is stuck: %v, want nil or ErrUnavailable", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("DeleteRecords took %v with CallTimeout 500ms", d)
	}
	time.Sleep(time.Second) // past the backoff
	start = time.Now()
	m.Pass([]tier.Target{target}, nil)
	if d := time.Since(start); d > 400*time.Millisecond {
		t.Errorf("a later pass took %v: it waited on the stuck one", d)
	}
	if !strings.Contains(logs.String(), "an earlier pass's remote call has not returned") {
		t.Errorf("a later pass did not skip the stuck partition; the log:\n%s", logs.String())
	}
	if l.LogStartOffset() != 0 {
		t.Errorf("local log start %d with nothing uploaded", l.LogStartOffset())
	}
}

// silentNameNode listens, accepts, reads and never answers; closed counts
// the connections the client closed.
func silentNameNode(t *testing.T) (addr string, accepted, closed *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted, closed = new(atomic.Int32), new(atomic.Int32)
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go func() {
				io.Copy(io.Discard, c)
				closed.Add(1)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return ln.Addr().String(), accepted, closed
}

// TestStuckCallReturnsOnSilentNameNode: with the store's IOTimeout, the
// remote call a pass gave up on returns too, closing its connection, and
// the next pass works on the partition again rather than skipping it
// ("an earlier pass's remote call has not returned"): before, the call,
// its goroutine and its connection stayed until the OS gave up on the
// socket, and the partition was skipped all that time.
func TestStuckCallReturnsOnSilentNameNode(t *testing.T) {
	t.Parallel()
	addr, accepted, closed := silentNameNode(t)
	l := silentTestLog(t)
	var logs syncBuffer
	m := tier.New(tier.Config{URI: fmt.Sprintf("hdfs://%s/silent", addr), User: "tributary",
		Interval: 100 * time.Millisecond, PassTimeout: 500 * time.Millisecond, CallTimeout: 500 * time.Millisecond,
		IOTimeout: time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	defer m.Close()
	target := tier.Target{TP: l.TopicPartition(), TopicID: "id", Log: l, Bound: l.LogEndOffset(), LeaderEpoch: 0}
	m.Pass([]tier.Target{target}, nil)
	if !strings.Contains(logs.String(), "remote storage did not answer") {
		t.Fatalf("the pass did not time out; its log:\n%s", logs.String())
	}
	deadline := time.Now().Add(15 * time.Second)
	for (accepted.Load() == 0 || closed.Load() < accepted.Load()) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if a, c := accepted.Load(), closed.Load(); a == 0 || c < a {
		t.Fatalf("%d connections to the silent NameNode, %d closed: the stuck call still waits", a, c)
	}
	// The stuck goroutine still has to return up the stack (fsys.Open
	// closes its client, Pass's deferred clear of busy) and the backoff
	// to pass: pass again until one works on the partition, within the
	// hang bound. A pass that found it busy says "has not returned", one
	// that worked on it "will retry" (the NameNode is still silent).
	var later string
	for deadline := time.Now().Add(testcluster.HangBound); ; time.Sleep(100 * time.Millisecond) {
		before := len(logs.String())
		m.Pass([]tier.Target{target}, nil)
		later = logs.String()[before:]
		if strings.Contains(later, "will retry") && !strings.Contains(later, "has not returned") || time.Now().After(deadline) {
			break
		}
	}
	if strings.Contains(later, "has not returned") || !strings.Contains(later, "will retry") {
		t.Errorf("no pass worked on the partition after the stuck call returned; the last one's log:\n%s", later)
	}
	if !strings.Contains(logs.String(), "remote storage is failing for the partition") {
		t.Errorf("the manager did not log that remote storage is failing; its log:\n%s", logs.String())
	}
	if n := m.FailingPartitions(); n != 1 {
		t.Errorf("FailingPartitions = %d, want 1", n)
	}
}

// TestAuxStateTimeoutOnSilentNameNode: a follower's read of the remote
// state it rebuilds from gives up after PassTimeout with ErrUnavailable,
// even with no deadline in the store (IOTimeout negative): before, the
// follower's fetcher waited for ever.
func TestAuxStateTimeoutOnSilentNameNode(t *testing.T) {
	t.Parallel()
	addr, _, _ := silentNameNode(t)
	l := silentTestLog(t)
	m := tier.New(tier.Config{URI: fmt.Sprintf("hdfs://%s/silent", addr), User: "tributary",
		PassTimeout: 500 * time.Millisecond, IOTimeout: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer m.Close()
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := m.AuxState(l.TopicPartition(), "id", 10)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, tier.ErrUnavailable) {
			t.Errorf("AuxState: %v, want ErrUnavailable", err)
		}
		t.Logf("AuxState gave up after %v: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(20 * time.Second):
		t.Fatal("AuxState still waits after 20 s with PassTimeout 500ms")
	}
}

// silentTestLog is a tiered log of a few closed segments.
func silentTestLog(t *testing.T) *log.Log {
	t.Helper()
	cfg := log.DefaultConfig()
	cfg.SegmentBytes = 2048
	cfg.RemoteStorage = true
	l, err := log.Open(filepath.Join(t.TempDir(), "t-0"), cfg, log.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	opts := record.DefaultBuildOptions()
	opts.BaseTimestamp = time.Now().UnixMilli()
	for range 30 {
		b, _ := record.Build(opts, record.NewRecords(record.KV{Value: bytes.Repeat([]byte{1}, 200)}))
		if _, err := l.AppendAsLeader(b, 0); err != nil {
			t.Fatal(err)
		}
	}
	return l
}
