package conformance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestGoCrashIdempotentProducer kills the broker with SIGKILL three times
// under a franz-go producer with its defaults (idempotent, acks=all,
// unlimited retries), restarting it each time while the producer keeps
// going. Afterwards every acknowledged record must be in the log exactly
// once, at the offset it was acknowledged with, and each partition must hold
// the records in the order they were produced. A batch whose answer was
// lost in the kill is retried by the client with the same sequence numbers;
// the broker, having rebuilt its producer state from the log, must answer it
// as a duplicate instead of appending it again.
//
// The kill moments come from a seed that is logged; CONFORMANCE_SEED=<n>
// repeats a run.
func TestGoCrashIdempotentProducer(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("CONFORMANCE_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("CONFORMANCE_SEED=%q: %v", s, err)
		}
	}
	t.Logf("seed %d (CONFORMANCE_SEED=%d repeats this run)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, seed))

	b := goBroker(t)
	const topic = "crash"
	franzCreate(t, b.Addr(), topic)

	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	type ack struct {
		id int
		at goAck
	}
	var (
		mu       sync.Mutex
		acks     []ack
		failed   = map[int]error{}
		produced int
	)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		for id := 0; ctx.Err() == nil; id++ {
			r := &kgo.Record{
				Key:   []byte(fmt.Sprintf("user-%02d", id%50)),
				Value: []byte(fmt.Sprintf("crash/%09d|%s", id, strings.Repeat("x", id%64))),
			}
			cl.Produce(ctx, r, func(r *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					failed[id] = err
					return
				}
				acks = append(acks, ack{id, goAck{r.Partition, r.Offset}})
			})
			mu.Lock()
			produced = id + 1
			mu.Unlock()
			// About 20,000 records a second: enough to have batches in
			// flight at every kill, few enough to read back quickly.
			if id%100 == 99 {
				time.Sleep(5 * time.Millisecond)
			}
		}
	}()
	progress := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return produced, len(acks)
	}

	for round := 1; round <= 3; round++ {
		// Let the producer get going (again) before the next kill.
		waitAcked := time.Now().Add(60 * time.Second)
		_, before := progress()
		for _, n := progress(); n < before+1000; _, n = progress() {
			if time.Now().After(waitAcked) {
				t.Fatalf("round %d: no progress after the restart: %d acknowledged", round, n)
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(time.Duration(rng.Int64N(int64(1500*time.Millisecond))) + 100*time.Millisecond)
		b.Kill()
		p, a := progress()
		t.Logf("round %d: killed the broker with %d records produced, %d acknowledged", round, p, a)
		time.Sleep(time.Duration(rng.Int64N(int64(500 * time.Millisecond))))
		b.Restart()
	}
	// Some more after the last restart, then drain.
	_, before := progress()
	waitAcked := time.Now().Add(60 * time.Second)
	for _, n := progress(); n < before+5000; _, n = progress() {
		if time.Now().After(waitAcked) {
			t.Fatalf("no progress after the last restart: %d acknowledged", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	<-loopDone
	flushCtx, cancel := context.WithTimeout(context.Background(), goDeadline)
	defer cancel()
	if err := cl.Flush(flushCtx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	p, a := progress()
	t.Logf("produced %d records, %d acknowledged, %d failed", p, a, len(failed))

	mu.Lock()
	defer mu.Unlock()
	// Produce after stop() fails the records it was given with the
	// context's error; only those may fail.
	for id, err := range failed {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("record %d failed: %v", id, err)
		}
	}

	// Everything that is in the log, read back.
	end := map[int32]int64{}
	for _, a := range acks {
		end[a.at.Partition] = max(end[a.at.Partition], a.at.Offset+1)
	}
	goCheckEndOffsets(t, b.Addr(), topic, end)
	parts := map[int32]kgo.Offset{}
	for p := range end {
		parts[p] = kgo.NewOffset().At(0)
	}
	cons, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := franzPoll(t, cons, topic, end)

	// No value twice, acknowledged ids where they were acknowledged, ids
	// increasing in each partition.
	where := map[int]goAck{}
	lastID := map[int32]int{}
	bad := 0
	fail := func(format string, args ...any) {
		bad++
		if bad <= 10 {
			t.Errorf(format, args...)
		}
	}
	for _, c := range got {
		var id int
		if _, err := fmt.Sscanf(string(c.Value), "crash/%09d|", &id); err != nil {
			fail("%d/%d: value %q: %v", c.Partition, c.Offset, c.Value, err)
			continue
		}
		if prev, dup := where[id]; dup {
			fail("record %d is in the log twice: at %d/%d and %d/%d", id, prev.Partition, prev.Offset, c.Partition, c.Offset)
		}
		where[id] = goAck{c.Partition, c.Offset}
		if l, ok := lastID[c.Partition]; ok && id <= l {
			fail("partition %d: record %d at offset %d follows record %d", c.Partition, id, c.Offset, l)
		}
		lastID[c.Partition] = id
	}
	for _, a := range acks {
		if at, ok := where[a.id]; !ok {
			fail("record %d was acknowledged at %d/%d and is not in the log", a.id, a.at.Partition, a.at.Offset)
		} else if at != a.at {
			fail("record %d was acknowledged at %d/%d and is at %d/%d", a.id, a.at.Partition, a.at.Offset, at.Partition, at.Offset)
		}
	}
	if bad > 10 {
		t.Errorf("... %d problems in all", bad)
	}
	t.Logf("log holds %d records, %d of them acknowledged", len(got), len(acks))
}
