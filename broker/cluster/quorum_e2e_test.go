package cluster_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testcluster"
)

// Three nodes, each a broker and a voter of the controller quorum: topics
// spread their partitions over the brokers, clients are routed to each
// partition's leader, the quorum survives the loss of its active
// controller, a dead broker's partitions go offline and come back with it,
// and consumer groups work across the brokers.
func TestQuorumCluster(t *testing.T) {
	c := testcluster.Start(t, 3)
	first := c.Controller(15 * time.Second)
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	waitBrokers(t, adm, 3)
	if _, err := adm.CreateTopic(ctx, 6, 1, nil, "web"); err != nil {
		t.Fatal(err)
	}
	leaders := c.Leaders("web", 10*time.Second)
	per := map[int32]int{}
	for _, l := range leaders {
		per[l]++
	}
	if len(per) != 3 {
		t.Fatalf("partition leaders %v: want the partitions spread over the 3 brokers", leaders)
	}
	produce(t, c.Bootstrap(), "web", 0, 600)
	consumeAll(t, c.Bootstrap(), "web", 600)

	// The active controller dies: another takes over, and the metadata is
	// all there.
	c.Node(first).Kill()
	start := time.Now()
	second := c.Controller(10 * time.Second)
	t.Logf("controller %d killed; node %d active after %v", first, second, time.Since(start).Round(time.Millisecond))
	if second == first {
		t.Fatalf("node %d, killed, is still the controller", first)
	}
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "after"); err != nil {
		t.Fatalf("creating a topic after the failover: %v", err)
	}
	// The dead broker is fenced after its session: its partitions are
	// offline, the others still take writes.
	// The bound detects a hang: the session is 3 s, but a loaded machine
	// delays the heartbeats' expiry check and the fencing's commit.
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, err := adm.Metadata(ctx, "web")
		offline := 0
		if err == nil {
			for _, p := range m.Topics["web"].Partitions {
				if p.Leader < 0 {
					offline++
				}
			}
		}
		if offline == per[first] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d partitions offline %v after node %d died, want %d", offline, time.Since(start), first, per[first])
		}
		time.Sleep(100 * time.Millisecond)
	}

	out, err := exec.Command(testbroker.Binary(t), "cluster", "describe", "-b", c.Bootstrap()).CombinedOutput()
	if err != nil || !strings.Contains(string(out), fmt.Sprintf("CONTROLLER  %d\n", second)) ||
		!strings.Contains(string(out), fmt.Sprintf("(%d offline,", offline(t, adm))) || strings.Contains(string(out), "(0 offline,") {
		t.Errorf("tributary cluster describe (%v):\n%s", err, out)
	}
	t.Logf("tributary cluster describe:\n%s", out)

	// It comes back with its data and leads its partitions again.
	c.Node(first).Restart()
	c.Leaders("web", 20*time.Second)
	consumeAll(t, c.Bootstrap(), "web", 600)

	// A consumer group across the brokers commits its offsets.
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...), kgo.ConsumeTopics("web"),
		kgo.ConsumerGroup("cluster-group"), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := 0
	for got < 600 {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("group consumer: %v", err)
		}
		got += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}
	offs, err := adm.FetchOffsets(ctx, "cluster-group")
	if err != nil {
		t.Fatal(err)
	}
	var committed int64
	offs.Each(func(o kadm.OffsetResponse) { committed += o.At })
	if committed != 600 {
		t.Fatalf("the group committed offsets summing to %d, want 600", committed)
	}
}

func produce(t *testing.T, bootstrap, topic string, from, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var rs []*kgo.Record
	for i := from; i < from+n; i++ {
		rs = append(rs, &kgo.Record{Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("record-%d", i))})
	}
	if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
}

// consumeAll reads the topic from the start and checks that it holds
// exactly n distinct records.
func consumeAll(t *testing.T, bootstrap, topic string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seen := map[string]bool{}
	for len(seen) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records of %s", len(seen), n, topic)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if seen[string(r.Value)] {
				t.Fatalf("record %s read twice", r.Value)
			}
			seen[string(r.Value)] = true
		})
	}
}

// offline counts the partitions without a leader.
func offline(t *testing.T, adm *kadm.Client) int {
	m, err := adm.Metadata(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, td := range m.Topics {
		for _, p := range td.Partitions {
			if p.Leader < 0 {
				n++
			}
		}
	}
	return n
}

// A broker paused past its session (SIGSTOP) is fenced and its partitions
// go offline; when it resumes (SIGCONT) its next heartbeat unfences it and
// it leads them again, with a new leader epoch, and nothing it had is lost.
func TestQuorumPausedBrokerIsFencedThenBack(t *testing.T) {
	c := testcluster.Start(t, 3)
	ctrl := c.Controller(15 * time.Second)
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, "paused"); err != nil {
		t.Fatal(err)
	}
	leaders := c.Leaders("paused", 10*time.Second)
	produce(t, c.Bootstrap(), "paused", 0, 300)
	// Pause a broker that is not the controller, so the quorum keeps its
	// leader and only membership is tested.
	var victim, part int32 = -1, -1
	for p, l := range leaders {
		if l != ctrl {
			victim, part = l, p
			break
		}
	}
	before, err := adm.Metadata(ctx, "paused")
	if err != nil {
		t.Fatal(err)
	}
	epoch := before.Topics["paused"].Partitions[part].LeaderEpoch
	if err := c.Node(victim).Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			c.Node(victim).Signal(syscall.SIGCONT)
		}
	}()
	stopped := time.Now()
	for deadline := stopped.Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		m, err := adm.Metadata(ctx, "paused")
		if err == nil && m.Topics["paused"].Partitions[part].Leader < 0 {
			t.Logf("paused broker %d fenced %v after SIGSTOP", victim, time.Since(stopped).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("partition %d of paused broker %d still led 30 s after SIGSTOP", part, victim)
		}
	}
	c.Node(victim).Signal(syscall.SIGCONT)
	resumed = true
	got := c.Leaders("paused", 15*time.Second)
	if got[part] != victim {
		t.Fatalf("after SIGCONT partition %d is led by %d, want %d again", part, got[part], victim)
	}
	after, err := adm.Metadata(ctx, "paused")
	if err != nil {
		t.Fatal(err)
	}
	if e := after.Topics["paused"].Partitions[part].LeaderEpoch; e <= epoch {
		t.Fatalf("leader epoch %d after the fence and back, want more than %d", e, epoch)
	}
	consumeAll(t, c.Bootstrap(), "paused", 300)
}
