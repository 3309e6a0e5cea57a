package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker/share"
	"github.com/tributary-io/tributary/internal/testcluster"
)

// A share group keeps working through a kill -9 of its topic partition's
// leader: the share-partition state is in __share_group_state (replicated
// 3 times), which the new leader reads. Nothing whose acknowledgement the
// broker confirmed is delivered again, and every record is delivered.
func TestShareGroupSurvivesLeaderKill(t *testing.T) {
	c, _ := startQueue(t, 1)
	n, limit := 600, 90*time.Second
	if long() {
		n, limit = 6000, 10*time.Minute
	}
	leader := leaderOf(t, c, 0)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()

	var mu sync.Mutex
	delivered := map[string]int{} // value → deliveries
	acked := map[string]bool{}    // acknowledgements the broker confirmed
	afterAck := map[string]bool{} // delivered again after a confirmed ack
	var last time.Time            // of the latest delivery
	var errLogs atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		var ackErrs atomic.Int64 // failed acknowledgements, counted by the callback
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...), kgo.ShareGroup("sg"),
			kgo.ConsumeTopics("q"), kgo.ShareMaxRecords(20),
			kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
				if err := rs.Error(); err != nil {
					ackErrs.Add(1)
					t.Logf("acknowledgement failed: %v", err)
				}
			}))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				done := counted(acked) == n || counted(delivered) == n && time.Since(last) > 3*time.Second
				mu.Unlock()
				if done || ctx.Err() != nil {
					return
				}
				pctx, pcancel := context.WithTimeout(ctx, time.Second)
				fs := cl.PollRecords(pctx, 20)
				pcancel()
				fs.EachError(func(topic string, p int32, err error) {
					if errLogs.Add(1) < 20 {
						t.Logf("poll: %s-%d: %v", topic, p, err)
					}
				})
				var got []string
				fs.EachRecord(func(r *kgo.Record) {
					got = append(got, string(r.Value))
					cl.MarkAcks(kgo.AckAccept, r)
				})
				if len(got) == 0 {
					continue
				}
				mu.Lock()
				last = time.Now()
				for _, v := range got {
					delivered[v]++
					if acked[v] {
						afterAck[v] = true
					}
				}
				mu.Unlock()
				before := ackErrs.Load()
				fctx, fcancel := context.WithTimeout(ctx, 10*time.Second)
				ferr := cl.FlushAcks(fctx)
				fcancel()
				if ferr == nil && ackErrs.Load() == before {
					mu.Lock()
					for _, v := range got {
						acked[v] = true
					}
					mu.Unlock()
				}
			}
		}()
	}

	// share.auto.offset.reset is latest: a share partition starts at the
	// high watermark when the group first fetches it. Warm-up records go
	// in until one is delivered; the records counted come after.
	warm, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...), kgo.DefaultProduceTopic("q"))
	if err != nil {
		t.Fatal(err)
	}
	defer warm.Close()
	for i := 0; ; i++ {
		if err := warm.ProduceSync(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("warm-%d", i))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond)
		mu.Lock()
		started := len(delivered) > 0
		mu.Unlock()
		if started {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("no warm-up record delivered")
		}
	}
	produce(t, c.Bootstrap(), "q", 0, 2*n/3)

	// Kill the leader once a third of the records is acknowledged.
	for deadline := time.Now().Add(40 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		mu.Lock()
		k := counted(acked)
		mu.Unlock()
		if k >= n/3 {
			break
		}
		if time.Now().After(deadline) {
			for _, b := range c.Brokers() {
				for _, l := range strings.Split(b.Log(), "\n") {
					if strings.Contains(l, "share") || strings.Contains(l, "WARN") || strings.Contains(l, "ERROR") {
						t.Log(l)
					}
				}
			}
			t.Fatalf("only %d of %d records acknowledged before the kill", k, n/3)
		}
	}
	c.Node(leader).Kill()
	killed := time.Now()
	mu.Lock()
	t.Logf("killed leader %d of q-0 with %d records acknowledged", leader, counted(acked))
	mu.Unlock()
	produce(t, c.Bootstrap(), "q", 2*n/3, n-2*n/3)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	if counted(delivered) != n {
		t.Fatalf("%d of %d records delivered", counted(delivered), n)
	}
	// Records whose acknowledgement the client saw fail (the leader died
	// with it in flight) may have been acknowledged all the same; the
	// group's state in __share_group_state says: its start offset must be
	// past every record, nothing is left undelivered or in flight.
	end := c.Admin()
	ends, err := end.ListEndOffsets(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	hw, _ := ends.Lookup("q", 0)
	if spso := shareStartOffset(t, c, "sg", hw.Offset); spso != hw.Offset {
		var unconfirmed []string
		for v := range delivered {
			if strings.HasPrefix(v, "record-") && !acked[v] {
				unconfirmed = append(unconfirmed, v)
			}
		}
		t.Fatalf("share-partition start offset %d, want the end offset %d; unconfirmed acknowledgements: %v", spso, hw.Offset, unconfirmed)
	}
	t.Logf("all %d records delivered and finished %v after the kill (%d acknowledgements unconfirmed)", n, time.Since(killed).Round(time.Millisecond), n-counted(acked))
	if len(afterAck) > 0 {
		t.Errorf("%d records delivered again after their acknowledgement was confirmed", len(afterAck))
	}
	again := 0
	for v, d := range delivered {
		if strings.HasPrefix(v, "record-") {
			again += d - 1
		}
	}
	t.Logf("delivered more than once (unconfirmed at the kill): %d", again)
}

// counted counts the test's records (not the warm-up ones) in m.
func counted[V any](m map[string]V) int {
	n := 0
	for v := range m {
		if strings.HasPrefix(v, "record-") {
			n++
		}
	}
	return n
}

// shareStartOffset reads group's state of q-0 from __share_group_state as
// Kafka's records (the last ShareSnapshot of the key) until its start
// offset is want, or for 30 s, and returns the last one read. It used to
// read for a fixed 5 s, which a fresh client on a loaded machine can spend
// before it reaches the last snapshot.
func shareStartOffset(t *testing.T, c *testcluster.Cluster, group string, want int64) int64 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...), kgo.ConsumeTopics("__share_group_state"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	spso := int64(-1)
	for ctx.Err() == nil {
		if spso == want {
			t.Logf("share-partition start offset %d read after %v", spso, time.Since(start).Round(time.Millisecond))
			break
		}
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			k, update, err := share.ParseStateKey(r.Key)
			if err != nil || update || k.Group != group || r.Value == nil {
				return
			}
			if s, err := share.ParseSnapshot(r.Value); err == nil {
				spso = s.StartOffset
			}
		})
	}
	return spso
}
