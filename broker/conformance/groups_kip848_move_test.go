package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestGroupsKIP848CoordinatorMove: two franz-go KIP-848 members
// (kgo.ServerSideBalancer) in a Stable consumer group; kill -9 of the
// broker and a restart on the same data (the coordinator loads the group
// from __consumer_offsets): once both members heartbeat again, the group
// epoch and their member epochs are those before the crash, and they own
// what they owned. The coordinator persists the subscribed topics' hash
// and the assignment epochs, so the move is not a change of the group.
// Passes against Apache Kafka 4.4 too (TRIBUTARY_GROUPS_AGAINST_KAFKA=1).
func TestGroupsKIP848CoordinatorMove(t *testing.T) {
	t.Parallel() // franz-go members only, on a broker of its own
	var b groupsBroker
	if groupsAgainstKafka() {
		kb := testbroker.StartKafka(t)
		groupsWarmUp(t, kb.Addr())
		b = kb
	} else {
		eb := extBroker(t, "group.consumer.heartbeat.interval.ms=500", "group.consumer.min.heartbeat.interval.ms=500")
		groupsWarmUp(t, eb.Addr())
		b = eb
	}
	const topic, group = "kip848-move", "kip848-move-group"
	groupsCreateTopic(t, b.Addr(), topic, 6)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 1; i <= 2; i++ {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ClientID(fmt.Sprintf("move-%d", i)),
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(),
			kgo.RetryTimeout(60*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		go func() {
			for ctx.Err() == nil {
				cl.PollRecords(ctx, 100)
			}
		}()
	}
	before := kip848WaitStable(t, b.Addr(), group, 60*time.Second)
	t.Logf("before the crash: %s", before)
	b.Kill()
	b.Restart()
	after := kip848WaitStable(t, b.Addr(), group, 60*time.Second)
	// Both members heartbeat a few more times to the new coordinator.
	time.Sleep(2 * time.Second)
	after = kip848WaitStable(t, b.Addr(), group, 30*time.Second)
	t.Logf("after the restart: %s", after)
	if after != before {
		t.Errorf("after kill -9 and a restart: %s\nbefore: %s\n(a coordinator move must not change the group epoch, the member epochs or the assignment)", after, before)
	}
}

// kip848WaitStable waits until group is a Stable consumer group of two
// members owning 3 partitions each, and returns its epochs and owners.
func kip848WaitStable(t *testing.T, addr, group string, wait time.Duration) string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	last := ""
	for {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{group}
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && len(resp.Groups) == 1 {
			g := resp.Groups[0]
			last = fmt.Sprintf("error %d state %s epoch %d", g.ErrorCode, g.State, g.Epoch)
			ok := g.ErrorCode == 0 && g.State == "Stable" && len(g.Members) == 2
			owners := map[string]string{}
			for _, m := range g.Members {
				n := 0
				for _, tp := range m.Assignment.TopicPartitions {
					n += len(tp.Partitions)
				}
				ok = ok && n == 3 && m.MemberEpoch == g.Epoch && len(m.Assignment.TopicPartitions) == 1
				var parts []int32
				for _, tp := range m.Assignment.TopicPartitions {
					parts = append(parts, tp.Partitions...)
				}
				owners[m.MemberID] = fmt.Sprintf("epoch %d %v", m.MemberEpoch, parts)
			}
			last += fmt.Sprintf(" members %v", owners)
			if ok {
				return fmt.Sprintf("group epoch %d, members %v", g.Epoch, owners)
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("group %s not Stable with 2 members of 3 partitions within %v: %s (%v)", group, wait, last, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
