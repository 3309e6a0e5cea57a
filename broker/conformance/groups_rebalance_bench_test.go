package conformance

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// BenchmarkGroupRebalance50 measures, in one run, how long a 50-member
// group takes to settle when all 50 join at once, and when one of them
// then leaves, with the classic protocol (franz-go's default
// cooperative-sticky balancer, JoinGroup/SyncGroup) and the KIP-848
// consumer protocol (kgo.ServerSideBalancer, the broker's uniform
// assignor), against Tributary and Apache Kafka 4.4 with the same
// settings: 100 partitions, heartbeats every 500 ms for both protocols
// (group.consumer.heartbeat.interval.ms=500 on the brokers,
// kgo.HeartbeatInterval for classic members), no initial rebalance delay.
//
//	go test -run '^$' -bench GroupRebalance50 -benchtime 3x ./broker/conformance/
//
// join-ms: from starting the 50 clients until each owns 2 partitions (as
// their assigned/revoked callbacks say); leave-ms: from closing one (a
// LeaveGroup, or a heartbeat with epoch -1) until the other 49 own all
// 100. A partition owned by two members at once fails the run.
// TRIBUTARY_BENCH_NO_KAFKA=1 leaves Kafka out.
func BenchmarkGroupRebalance50(b *testing.B) {
	const members, partitions = 50, 100
	props := []string{"group.initial.rebalance.delay.ms=0", "group.consumer.heartbeat.interval.ms=500", "group.consumer.min.heartbeat.interval.ms=500"}
	type target struct {
		name string
		addr string
	}
	trib := testbroker.Start(b, props...)
	targets := []target{{"tributary", trib.Addr()}}
	if os.Getenv("TRIBUTARY_BENCH_NO_KAFKA") == "" {
		kb := testbroker.StartKafkaWith(b, props[1:]...)
		targets = append(targets, target{"kafka", kb.Addr()})
	}
	for _, tg := range targets {
		b.Run(tg.name, func(b *testing.B) {
			for _, proto := range []string{"classic", "consumer"} {
				b.Run(proto, func(b *testing.B) {
					var join, leave time.Duration
					for i := 0; i < b.N; i++ {
						topic := fmt.Sprintf("rb50-%s-%d-%d", proto, time.Now().UnixNano(), i)
						groupsCreateTopicTB(b, tg.addr, topic, partitions)
						j, l := rebalance50(b, tg.addr, topic, proto, members, partitions)
						join += j
						leave += l
						b.Logf("%s %s run %d: join %v, leave %v", tg.name, proto, i, j.Round(time.Millisecond), l.Round(time.Millisecond))
					}
					b.ReportMetric(float64(join.Milliseconds())/float64(b.N), "join-ms")
					b.ReportMetric(float64(leave.Milliseconds())/float64(b.N), "leave-ms")
				})
			}
		})
	}
}

func groupsCreateTopicTB(b *testing.B, addr, topic string, n int32) {
	b.Helper()
	adm, ctx := goAdmin(b, addr)
	resp, err := adm.CreateTopic(ctx, n, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		b.Fatalf("CreateTopic %s: %v", topic, err)
	}
}

// owners is who owns each partition, as the members' callbacks say.
type owners struct {
	mu     sync.Mutex
	owner  map[int32]int
	double string
}

func (o *owners) assigned(m int, ps map[string][]int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, parts := range ps {
		for _, p := range parts {
			if prev, ok := o.owner[p]; ok && prev != m && o.double == "" {
				o.double = fmt.Sprintf("partition %d given to member %d while member %d owns it", p, m, prev)
			}
			o.owner[p] = m
		}
	}
}

func (o *owners) released(m int, ps map[string][]int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, parts := range ps {
		for _, p := range parts {
			if o.owner[p] == m {
				delete(o.owner, p)
			}
		}
	}
}

// settled says whether every partition is owned, by none of the members
// in gone, each live member owning at least min.
func (o *owners) settled(partitions, members, min int, gone int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.owner) != partitions {
		return false
	}
	n := map[int]int{}
	for _, m := range o.owner {
		if m == gone {
			return false
		}
		n[m]++
	}
	for m := 0; m < members; m++ {
		if m != gone && n[m] < min {
			return false
		}
	}
	return true
}

func rebalance50(b *testing.B, addr, topic, proto string, members, partitions int) (join, leave time.Duration) {
	b.Helper()
	o := &owners{owner: map[int32]int{}}
	group := topic + "-group"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clients := make([]*kgo.Client, members)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		for _, cl := range clients {
			if cl != nil {
				cl.Close()
			}
		}
		wg.Wait()
	}()
	start := time.Now()
	for i := range members {
		opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID(fmt.Sprintf("rb-%d", i)),
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { o.assigned(i, ps) }),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { o.released(i, ps) }),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { o.released(i, ps) }),
		}
		if proto == "consumer" {
			opts = append(opts, kgo.ServerSideBalancer())
		} else {
			opts = append(opts, kgo.HeartbeatInterval(500*time.Millisecond))
		}
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			b.Fatal(err)
		}
		clients[i] = cl
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				cl.PollRecords(ctx, 10)
			}
		}()
	}
	wait := func(what string, cond func() bool) time.Duration {
		t0 := time.Now()
		for !cond() {
			if time.Since(t0) > 3*time.Minute {
				b.Fatalf("%s %s: %s not reached in 3 minutes", addr, proto, what)
			}
			time.Sleep(5 * time.Millisecond)
		}
		return time.Since(t0)
	}
	wait("all joined", func() bool { return o.settled(partitions, members, partitions/members, -1) })
	join = time.Since(start)
	clients[0].Close()
	clients[0] = nil
	leave = wait("one left", func() bool { return o.settled(partitions, members, partitions/members, 0) })
	if o.double != "" {
		b.Fatalf("%s %s: %s", addr, proto, o.double)
	}
	return join, leave
}
