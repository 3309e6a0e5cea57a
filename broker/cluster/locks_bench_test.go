package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testcluster"
)

// benchClients is how many clients commit at once, each with its own
// connections: a broker answers one connection's requests in order, so
// concurrency across groups needs connections.
const benchClients = 32

// BenchmarkGroupCommits measures OffsetCommit throughput and latency with
// 1,000 consumer groups on a 3-node cluster, __consumer_offsets at RF 3:
// every commit waits for the ISR (acks=all), so a coordinator that holds
// one lock across that wait serializes the groups it coordinates.
//
//	go test -run '^$' -bench GroupCommits -benchtime 20000x ./broker/cluster/
//
// Each op is one OffsetCommit of 3 partitions (generation -1, a "simple"
// commit as kafka-consumer-groups --reset-offsets and Flink send); the
// benchClients clients take the groups round robin.
func BenchmarkGroupCommits(b *testing.B) {
	c := testcluster.Start(b, 3, "offsets.topic.replication.factor=3")
	c.Controller(15 * time.Second)
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "bench"); err != nil {
		b.Fatal(err)
	}
	c.Leaders("bench", 10*time.Second)
	const groups = 1000
	clients := make([]*kgo.Client, benchClients)
	for i := range clients {
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...), kgo.MaxVersions(commitsByName()))
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		clients[i] = cl
	}
	var offset atomic.Int64
	commit := func(cl *kgo.Client, group int) error {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = fmt.Sprintf("bench-%04d", group), -1
		t := kmsg.NewOffsetCommitRequestTopic()
		t.Topic = "bench"
		o := offset.Add(1)
		for p := range int32(3) {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset = p, o
			t.Partitions = append(t.Partitions, rp)
		}
		req.Topics = append(req.Topics, t)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return err
		}
		for _, t := range resp.Topics {
			for _, p := range t.Partitions {
				if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
					return err
				}
			}
		}
		return nil
	}
	// Warm up: every client learns every group's coordinator, and the
	// groups exist.
	var wg sync.WaitGroup
	for i, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := i; g < groups; g += len(clients) {
				for try := 0; ; try++ {
					err := commit(cl, g)
					if err == nil {
						break
					}
					if try > 50 {
						b.Errorf("warm-up commit of group %d: %v", g, err)
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	b.Run(fmt.Sprintf("groups=%d/clients=%d", groups, len(clients)), func(b *testing.B) {
		lat := make([][]time.Duration, len(clients))
		var next atomic.Int64
		var failed atomic.Int64
		b.ResetTimer()
		start := time.Now()
		for i, cl := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					n := next.Add(1) - 1
					if n >= int64(b.N) {
						return
					}
					t0 := time.Now()
					if err := commit(cl, int(n%groups)); err != nil {
						failed.Add(1)
						continue
					}
					lat[i] = append(lat[i], time.Since(t0))
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		b.StopTimer()
		all := slices.Concat(lat...)
		slices.Sort(all)
		if len(all) == 0 {
			b.Fatal("no commit succeeded")
		}
		q := func(f float64) float64 { return float64(all[int(f*float64(len(all)-1))]) / 1e6 }
		b.ReportMetric(float64(len(all))/elapsed.Seconds(), "commits/s")
		b.ReportMetric(q(0.5), "p50-ms")
		b.ReportMetric(q(0.99), "p99-ms")
		b.ReportMetric(float64(failed.Load()), "failed")
	})
}

// BenchmarkProduceWhileCreatingTopic measures acks=all produce latency on a
// 3-node cluster while a topic of many partitions (RF 3) is created: the
// metadata change creates hundreds of logs on every node, which must not
// stall the partitions that already exist.
//
//	go test -run '^$' -bench ProduceWhileCreatingTopic -benchtime 1x ./broker/cluster/
//
// It reports the produce p99 and the longest produce before and during the
// creation, and how long the creation took.
func BenchmarkProduceWhileCreatingTopic(b *testing.B) {
	c := testcluster.Start(b, 3)
	c.Controller(15 * time.Second)
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "busy"); err != nil {
		b.Fatal(err)
	}
	c.Leaders("busy", 10*time.Second)
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...), kgo.DefaultProduceTopic("busy"),
		kgo.ProducerLinger(0))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	type sample struct {
		at  time.Time
		lat time.Duration
	}
	measure := func(stop <-chan struct{}) []sample {
		var out []sample
		for {
			select {
			case <-stop:
				return out
			default:
			}
			t0 := time.Now()
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte("x")}).FirstErr(); err != nil {
				b.Errorf("produce: %v", err)
				return out
			}
			out = append(out, sample{t0, time.Since(t0)})
		}
	}
	stats := func(ss []sample) (p99, worst float64) {
		ls := make([]time.Duration, len(ss))
		for i, s := range ss {
			ls[i] = s.lat
		}
		slices.Sort(ls)
		if len(ls) == 0 {
			return 0, 0
		}
		return float64(ls[int(0.99*float64(len(ls)-1))]) / 1e6, float64(ls[len(ls)-1]) / 1e6
	}
	const partitions = 1000
	for i := range b.N {
		stop := make(chan struct{})
		done := make(chan []sample)
		go func() { done <- measure(stop) }()
		time.Sleep(2 * time.Second)
		created := time.Now()
		name := fmt.Sprintf("wide-%d", i)
		if _, err := adm.CreateTopic(ctx, partitions, 3, nil, name); err != nil {
			b.Fatal(err)
		}
		c.Leaders(name, 2*time.Minute)
		took := time.Since(created)
		time.Sleep(time.Second)
		close(stop)
		ss := <-done
		var before, during []sample
		for _, s := range ss {
			if s.at.Before(created) {
				before = append(before, s)
			} else if s.at.Before(created.Add(took)) {
				during = append(during, s)
			}
		}
		bp99, bmax := stats(before)
		dp99, dmax := stats(during)
		b.ReportMetric(bp99, "idle-p99-ms")
		b.ReportMetric(bmax, "idle-max-ms")
		b.ReportMetric(dp99, "during-p99-ms")
		b.ReportMetric(dmax, "during-max-ms")
		b.ReportMetric(float64(len(during)), "during-produces")
		b.ReportMetric(float64(took)/1e6, "create-ms")
	}
}
