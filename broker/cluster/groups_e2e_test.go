package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// 7. A consumer group keeps consuming, from its committed offsets, across a
// kill -9 of the broker that coordinates it: __consumer_offsets is
// replicated, and its new leader loads the group.
func TestGroupSurvivesCoordinatorKill(t *testing.T) {
	c, adm := startQueue(t, 3)
	produce(t, c.Bootstrap(), "q", 0, 3000)
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...), kgo.ConsumerGroup("g"),
		kgo.ConsumeTopics("q"), kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seen := map[string]int{}
	poll := func(until int) {
		for len(seen) < until {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil {
				t.Fatalf("consumed %d of %d records", len(seen), until)
			}
			fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				t.Logf("commit: %v (retried with the next poll)", err)
			}
		}
	}
	poll(1500)
	before := committed(t, adm)
	described, err := adm.DescribeGroups(ctx, "g")
	if err != nil {
		t.Fatal(err)
	}
	coordinator := described["g"].Coordinator.NodeID
	c.Node(coordinator).Kill()
	killed := time.Now()
	t.Logf("killed coordinator %d with %d offsets committed", coordinator, before)

	produce(t, c.Bootstrap(), "q", 3000, 3000)
	poll(6000)
	t.Logf("all 6000 records consumed %v after the kill", time.Since(killed).Round(time.Millisecond))
	var dups int
	for _, n := range seen {
		dups += n - 1
	}
	// A client that knew the dead coordinator keeps dialing it (franz-go
	// forgets a coordinator on an error code, not on a refused dial).
	after := committed(t, c.Admin())
	if after < before || after != 6000 {
		t.Fatalf("committed offsets sum to %d after the kill (%d before), want 6000", after, before)
	}
	if int64(dups) > 3000-before {
		t.Errorf("%d records read twice: more than were uncommitted at the kill (%d)", dups, 3000-before)
	}
	t.Logf("read twice: %d (uncommitted at the kill: at most %d)", dups, 3000-before)
}

// committed sums group g's committed offsets of topic q.
func committed(t *testing.T, adm *kadm.Client) int64 {
	t.Helper()
	return committedOf(t, adm, "g")
}

// committedOf sums group's committed offsets of topic q.
func committedOf(t *testing.T, adm *kadm.Client, group string) int64 {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		offs, err := adm.FetchOffsets(ctx, group)
		cancel()
		if err == nil {
			var sum int64
			offs.Each(func(o kadm.OffsetResponse) {
				if o.Topic == "q" && o.Err == nil {
					sum += o.At
				}
			})
			return sum
		}
		if time.Now().After(deadline) {
			t.Fatalf("fetching the committed offsets of %s: %v", group, err)
		}
	}
}
