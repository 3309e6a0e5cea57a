package deliver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/kafkacli"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/tracker"
	"github.com/tributary-io/tributary/tracker/spool"
)

const (
	topic      = "events"
	partitions = 3
)

func startBroker(t *testing.T) *testbroker.Broker {
	t.Helper()
	b := testbroker.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := kafkacli.Connect(ctx, b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	errs, err := c.CreateTopics(ctx, []kafka.TopicConfig{{Topic: topic, NumPartitions: partitions, ReplicationFactor: 1}})
	if err != nil || errs[topic] != nil {
		t.Fatalf("create topic: %v %v", err, errs)
	}
	return b
}

// event i of a run: the value starts with the message id.
func event(run string, i int) tracker.Event {
	id := fmt.Sprintf("%s-%07d", run, i)
	return tracker.Event{
		Topic:     topic,
		Key:       []byte(fmt.Sprintf("user-%d", i%97)),
		Value:     []byte(id + `|{"type":"track","event":"Clicked","properties":{"button":"buy"}}`),
		Timestamp: time.Now().UnixMilli(),
		MessageID: id,
	}
}

// consumeIDs reads the whole topic (up to the high watermarks) and counts
// the records of each message id.
func consumeIDs(t *testing.T, addr string) (map[string]int, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := kafkacli.Connect(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	ps := make([]int, partitions)
	for i := range ps {
		ps[i] = i
	}
	ranges, err := c.Offsets(ctx, topic, ps)
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, r := range ranges {
		total += r.End - r.Start
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ids := map[string]int{}
	var n int64
	for n < total {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records: %v", n, total, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			id, _, _ := bytes.Cut(r.Value, []byte("|"))
			ids[string(id)]++
			n++
			if r.Timestamp.IsZero() || time.Since(r.Timestamp) > time.Hour {
				t.Errorf("record timestamp %v", r.Timestamp)
			}
		})
	}
	return ids, int(n)
}

// TestBrokerDown: the broker is killed (kill -9), 50,000 events are
// submitted (acknowledged from the spool), it restarts; every acknowledged
// event is in the topic.
func TestBrokerDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the broker")
	}
	b := startBroker(t)
	reg := prometheus.NewRegistry()
	s, err := New(Config{Brokers: []string{b.Addr()}, SpoolDir: t.TempDir(), Registerer: reg, RetryMax: 500 * time.Millisecond,
		Spool: spool.Options{SegmentBytes: 1 << 20}}) // several segments, deleted as they are delivered
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()

	var acked sync.Map
	var nAcked atomic.Int64
	submit := func(from, to int) {
		var wg sync.WaitGroup
		const workers, batch = 8, 100
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := from + w*batch; i < to; i += workers * batch {
					evs := make([]tracker.Event, 0, batch)
					for j := i; j < min(i+batch, to); j++ {
						evs = append(evs, event("down", j))
					}
					if err := s.Submit(ctx, evs); err != nil {
						t.Errorf("Submit: %v", err)
						return
					}
					for _, e := range evs {
						acked.Store(e.MessageID, true)
					}
					nAcked.Add(int64(len(evs)))
				}
			}()
		}
		wg.Wait()
	}

	submit(0, 5000)

	// ack=broker: acknowledged by the broker itself, and refused while it
	// is down.
	sb, err := New(Config{Brokers: []string{b.Addr()}, SpoolDir: t.TempDir(), Ack: tracker.AckBroker})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	evs := make([]tracker.Event, 1000)
	for i := range evs {
		evs[i] = event("broker", i)
	}
	if err := sb.Submit(ctx, evs); err != nil {
		t.Fatalf("ack=broker Submit: %v", err)
	}
	for _, e := range evs {
		acked.Store(e.MessageID, true)
	}
	nAcked.Add(int64(len(evs)))

	b.Kill()
	bctx, bcancel := context.WithTimeout(ctx, 5*time.Second)
	if err := sb.Submit(bctx, evs[:1]); !errors.Is(err, ErrNotAcknowledged) {
		t.Errorf("ack=broker Submit with the broker down: %v, want ErrNotAcknowledged", err)
	}
	bcancel()
	start := time.Now()
	submit(5000, 55000)
	t.Logf("50,000 events spooled while the broker was down in %s", time.Since(start).Round(time.Millisecond))
	st := s.Spool().Stats()
	if pending := st.Appended - st.Committed; pending < 40000 {
		t.Fatalf("only %d events pending with the broker down: %+v", pending, st)
	}
	t.Logf("spool with the broker down: %+v", st)
	b.Restart()
	start = time.Now()
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.Flush(fctx); err != nil {
		t.Fatalf("Flush: %v (%+v)", err, s.Spool().Stats())
	}
	t.Logf("spool drained in %s after the restart", time.Since(start).Round(time.Millisecond))
	if st := s.Spool().Stats(); st.Segments > 2 {
		t.Errorf("delivered segments were not deleted: %+v", st)
	}

	ids, records := consumeIDs(t, b.Addr())
	missing, dups := 0, 0
	acked.Range(func(k, _ any) bool {
		if ids[k.(string)] == 0 {
			missing++
		}
		return true
	})
	for _, n := range ids {
		dups += n - 1
	}
	t.Logf("acknowledged %d, records %d, unique ids %d, duplicates %d", nAcked.Load(), records, len(ids), dups)
	if missing > 0 {
		t.Fatalf("%d acknowledged events are not in the topic", missing)
	}
	if len(ids) != int(nAcked.Load()) {
		t.Fatalf("%d unique ids in the topic, %d acknowledged", len(ids), nAcked.Load())
	}
	// Duplicates can only come from a produce request the broker wrote
	// but did not answer before it was killed (the batch is retried).
	if dups > 20000 {
		t.Fatalf("%d duplicates: more than one drain batch", dups)
	}

	mfs, _ := reg.Gather()
	got := map[string]float64{}
	for _, mf := range mfs {
		m := mf.GetMetric()[0]
		switch {
		case m.Counter != nil:
			got[mf.GetName()] = m.Counter.GetValue()
		case m.Gauge != nil:
			got[mf.GetName()] = m.Gauge.GetValue()
		case m.Histogram != nil:
			got[mf.GetName()] = float64(m.Histogram.GetSampleCount())
		}
	}
	if got["tributary_tracker_delivered_total"] < 55000 || got["tributary_tracker_delivery_failures_total"] == 0 ||
		got["tributary_tracker_produce_seconds"] == 0 || got["tributary_tracker_spool_events"] != 0 || got["tributary_tracker_spool_bytes"] <= 0 {
		t.Errorf("metrics: %v", got)
	}
}

// TestTrackerCrash runs a sink in a child process (this test binary again),
// which prints the id of each acknowledged event; the child is killed with
// SIGKILL while its spool holds undelivered events, and a new sink on the
// same spool delivers every acknowledged event.
func TestTrackerCrash(t *testing.T) {
	if os.Getenv("TRIBUTARY_DELIVER_CHILD") != "" {
		crashChild()
		return
	}
	if testing.Short() {
		t.Skip("starts the broker")
	}
	b := startBroker(t)
	dir := t.TempDir()
	b.Kill() // the child's first events pile up in its spool

	cmd := exec.Command(os.Args[0], "-test.run=^TestTrackerCrash$")
	cmd.Env = append(os.Environ(), "TRIBUTARY_DELIVER_CHILD=1", "CHILD_BROKER="+b.Addr(), "CHILD_SPOOL="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var childErr bytes.Buffer
	cmd.Stderr = &childErr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		mu        sync.Mutex
		acked     = map[string]bool{}
		committed uint64
		pending   uint64
	)
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			mu.Lock()
			switch {
			case len(f) == 2 && f[0] == "ack":
				acked[f[1]] = true
			case len(f) == 3 && f[0] == "stat":
				a, _ := strconv.ParseUint(f[1], 10, 64)
				committed, _ = strconv.ParseUint(f[2], 10, 64)
				pending = a - committed
			}
			mu.Unlock()
		}
	}()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			mu.Lock()
			ok := cond()
			mu.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				cmd.Process.Kill()
				t.Fatalf("child: no %s after 30s; stderr:\n%s", what, childErr.String())
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	waitFor("20,000 acknowledged events", func() bool { return len(acked) >= 20000 })
	b.Restart()
	restarted := time.Now()
	waitFor("delivery with events still pending", func() bool { return committed >= 10000 && pending > 0 })
	// The drainer has just committed and produces its next batch; a few
	// milliseconds later that batch may be in the broker but not yet
	// committed in the spool, which is what makes duplicates.
	time.Sleep(time.Duration(rand.IntN(20)) * time.Millisecond)
	t.Logf("killing the child %s after the broker restarted", time.Since(restarted).Round(time.Millisecond))
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	<-scanned
	mu.Lock()
	t.Logf("child killed with %d events acknowledged; last stat: %d committed, %d pending", len(acked), committed, pending)
	mu.Unlock()

	s, err := New(Config{Brokers: []string{b.Addr()}, SpoolDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t.Logf("spool reopened: %+v, recovery %+v", s.Spool().Stats(), s.Spool().Recovery())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	ids, records := consumeIDs(t, b.Addr())
	missing, dups, unacked := 0, 0, 0
	for id := range acked {
		if ids[id] == 0 {
			missing++
		}
	}
	for id, n := range ids {
		dups += n - 1
		if !acked[id] {
			unacked++
		}
	}
	// Duplicates: the child's drainer had a batch acknowledged by the
	// broker but was killed before it committed the spool position, so the
	// new sink produced that batch again. Unacknowledged-but-delivered:
	// events fsynced by the child whose "ack" line it did not print before
	// it died; at least once covers them too.
	t.Logf("acknowledged %d; in the topic: %d records, %d unique ids, %d duplicates, %d delivered but never acknowledged",
		len(acked), records, len(ids), dups, unacked)
	if missing > 0 {
		t.Fatalf("%d acknowledged events are not in the topic", missing)
	}
}

// crashChild is the child process of TestTrackerCrash: it submits events
// until it is killed, printing "ack <id>" for each acknowledged one and
// "stat <appended> <committed>" for the spool.
func crashChild() {
	s, err := New(Config{Brokers: []string{os.Getenv("CHILD_BROKER")}, SpoolDir: os.Getenv("CHILD_SPOOL"),
		RetryMax: 200 * time.Millisecond, DrainBatch: 2000})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	deadline := time.Now().Add(60 * time.Second)
	var buf bytes.Buffer
	for i := 0; time.Now().Before(deadline); i += 100 {
		evs := make([]tracker.Event, 100)
		for j := range evs {
			evs[j] = event("crash", i+j)
		}
		if err := s.Submit(context.Background(), evs); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		buf.Reset()
		for _, e := range evs {
			fmt.Fprintf(&buf, "ack %s\n", e.MessageID)
		}
		st := s.Spool().Stats()
		fmt.Fprintf(&buf, "stat %d %d\n", st.Appended, st.Committed)
		os.Stdout.Write(buf.Bytes())
		time.Sleep(time.Millisecond)
	}
	os.Exit(3)
}

func TestPayloadRoundTrip(t *testing.T) {
	for _, e := range []tracker.Event{
		event("rt", 1),
		{Topic: "t", Value: []byte("v"), Timestamp: -1},                       // no key
		{Topic: "t", Key: []byte{}, Value: nil, MessageID: "m", Timestamp: 5}, // empty key
	} {
		got, err := decodeEvent(encode(&e))
		if err != nil {
			t.Fatal(err)
		}
		if got.Topic != e.Topic || !bytes.Equal(got.Key, e.Key) || (got.Key == nil) != (e.Key == nil) ||
			!bytes.Equal(got.Value, e.Value) || got.Timestamp != e.Timestamp || got.MessageID != e.MessageID {
			t.Fatalf("round trip of %+v gave %+v", e, got)
		}
	}
}

func FuzzDecodeEvent(f *testing.F) {
	e := event("fz", 1)
	f.Add(encode(&e))
	f.Add([]byte{1})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEvent(b)
		if err == nil {
			if again, err := decodeEvent(encode(&e)); err != nil || again.MessageID != e.MessageID || !bytes.Equal(again.Value, e.Value) {
				t.Fatalf("re-encoding %+v: %v", e, err)
			}
		}
	})
}

func TestAckBrokerUnreachable(t *testing.T) {
	s, err := New(Config{Brokers: []string{"127.0.0.1:1"}, SpoolDir: t.TempDir(), Ack: tracker.AckBroker})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = s.Submit(ctx, []tracker.Event{event("ab", 1)})
	if err == nil || !strings.Contains(err.Error(), ErrNotAcknowledged.Error()) {
		t.Fatalf("Submit with no broker in ack=broker mode: %v", err)
	}
	if st := s.Spool().Stats(); st.Appended != 0 {
		t.Fatalf("ack=broker spooled: %+v", st)
	}
}

func TestSpoolFull(t *testing.T) {
	s, err := New(Config{Brokers: []string{"127.0.0.1:1"}, SpoolDir: t.TempDir(),
		Spool: spool.Options{SegmentBytes: 16 << 10, MaxBytes: 64 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := 0; ; i++ {
		err := s.Submit(context.Background(), []tracker.Event{event("full", i)})
		if errors.Is(err, spool.ErrSpoolFull) {
			break
		}
		if err != nil || i > 10000 {
			t.Fatalf("Submit %d: %v", i, err)
		}
	}
}
