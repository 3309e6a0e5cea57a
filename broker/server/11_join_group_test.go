package server

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker/config"
)

// groupProps make rebalances quick in tests.
var groupProps = map[string]string{"group.initial.rebalance.delay.ms": "100", "offsets.topic.num.partitions": "5"}

// startBrokerIn is startBroker on a given data dir, without cleanup: the
// caller shuts it down, to restart on the same dir.
func startBrokerIn(t *testing.T, dir string, props map[string]string) *Server {
	t.Helper()
	all := map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir}
	for k, v := range props {
		all[k] = v
	}
	cfg, err := config.ParseBroker(all)
	if err != nil {
		t.Fatal(err)
	}
	s := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	return s
}

func shutdown(t *testing.T, s *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// TestConsumerGroupSharesTopicAndKeepsOffsets runs two franz-go group
// consumers on one topic: they split its partitions, consume everything
// once between them, commit, and the offsets survive a broker restart.
func TestConsumerGroupSharesTopicAndKeepsOffsets(t *testing.T) {
	dir := t.TempDir()
	s := startBrokerIn(t, dir, groupProps)
	stopped := false
	defer func() {
		if !stopped {
			shutdown(t, s)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	admCreateTopic(t, s, "orders", 4, nil)
	prod := admClient(t, s)
	const perPartition = 25
	for p := int32(0); p < 4; p++ {
		admProduce(t, prod, "orders", p, perPartition)
	}

	newMember := func(addr string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("g1"), kgo.ConsumeTopics("orders"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(),
			kgo.HeartbeatInterval(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	a, b := newMember(s.Addr("PLAINTEXT")), newMember(s.Addr("PLAINTEXT"))
	var mu sync.Mutex
	seen := map[string]int{}
	poll := func(cl *kgo.Client, done <-chan struct{}, wg *sync.WaitGroup) {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
			fs := cl.PollFetches(pctx)
			pcancel()
			fs.EachRecord(func(r *kgo.Record) {
				mu.Lock()
				seen[fmt.Sprintf("%d/%d", r.Partition, r.Offset)]++
				mu.Unlock()
			})
			if err := cl.CommitUncommittedOffsets(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("commit: %v", err)
			}
		}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go poll(a, done, &wg)
	go poll(b, done, &wg)

	adm := kadm.NewClient(prod)
	// Wait until both members are in a stable group and every record was consumed.
	for {
		if ctx.Err() != nil {
			t.Fatalf("group never settled: %v", ctx.Err())
		}
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		dg, err := adm.DescribeGroups(ctx, "g1")
		if err == nil && n == 4*perPartition && dg["g1"].State == "Stable" && len(dg["g1"].Members) == 2 {
			assigned := map[int32]bool{}
			for _, m := range dg["g1"].Members {
				ca, _ := m.Assigned.AsConsumer()
				if ca == nil || len(ca.Topics) == 0 {
					t.Fatalf("member %s has no partitions: %+v", m.MemberID, ca)
				}
				for _, at := range ca.Topics {
					for _, p := range at.Partitions {
						assigned[p] = true
					}
				}
			}
			if len(assigned) == 4 {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Let a last commit round finish.
	time.Sleep(300 * time.Millisecond)
	close(done)
	wg.Wait()
	for _, cl := range []*kgo.Client{a, b} {
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("final commit: %v", err)
		}
	}
	offsets, err := adm.FetchOffsets(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 4; p++ {
		o, ok := offsets.Lookup("orders", p)
		if !ok || o.At != perPartition || o.Err != nil {
			t.Fatalf("committed offset of orders/%d: %+v %v", p, o, ok)
		}
	}
	a.Close()
	b.Close()
	prod.Close()

	shutdown(t, s)
	stopped = true
	s2 := startBrokerIn(t, dir, groupProps)
	defer shutdown(t, s2)
	cl, err := kgo.NewClient(kgo.SeedBrokers(s2.Addr("PLAINTEXT")))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm2 := kadm.NewClient(cl)
	offsets, err = adm2.FetchOffsets(ctx, "g1")
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 4; p++ {
		if o, ok := offsets.Lookup("orders", p); !ok || o.At != perPartition {
			t.Fatalf("after restart, committed offset of orders/%d: %+v %v", p, o, ok)
		}
	}
	// A new member resumes from the committed offsets: only new records.
	admProduce(t, admClient(t, s2), "orders", 2, 3)
	c := newMember(s2.Addr("PLAINTEXT"))
	defer c.Close()
	var got []int64
	for len(got) < 3 {
		fs := c.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("resumed member got %v", got)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Partition != 2 || r.Offset < perPartition {
				t.Errorf("resumed member read %d/%d, before the committed offset", r.Partition, r.Offset)
			}
			got = append(got, r.Offset)
		})
	}
	lg, err := adm2.ListGroups(ctx)
	if err != nil || len(lg.Groups()) != 1 {
		t.Fatalf("list groups: %v %v", lg, err)
	}
}
