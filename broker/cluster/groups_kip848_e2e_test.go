package cluster_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testcluster"
)

// TestGroupSurvivesCoordinatorKillKIP848 is TestGroupSurvivesCoordinatorKill
// with the KIP-848 consumer protocol (group.protocol=consumer; franz-go's
// server-side assignment): three members commit after processing while
// the broker coordinating the group is killed with kill -9 in a 3-node
// cluster. The group goes on with the new coordinator (the leader of its
// __consumer_offsets partition, which loads the group's records): every
// record is consumed, none twice beyond what was uncommitted at a kill
// (at-least-once), and the committed offsets survive. TRIBUTARY_TEST_LONG=1
// (make test-long LONG=cluster) runs 60,000 records through three kills,
// the killed node restarted each time.
//
// That it is the consumer protocol, not franz-go's fallback to the
// classic one, is checked before and after each kill: ConsumerGroupDescribe
// (which refuses a classic group) shows the three members with their
// member epochs, the same members after the move. And no partition is
// ever owned by two members at once: the members' assign, revoke and
// lose callbacks record who owns what.
func TestGroupSurvivesCoordinatorKillKIP848(t *testing.T) {
	total, kills := 3000, 1
	if long() {
		total, kills = 60000, 3
	}
	const group = "g848"
	start := time.Now()
	c := testcluster.Start(t, 3, "group.consumer.heartbeat.interval.ms=500", "group.consumer.min.heartbeat.interval.ms=500")
	c.Controller(15 * time.Second)
	adm := c.Admin()
	waitBrokers(t, adm, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 6, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "q"); err != nil {
		t.Fatal(err)
	}
	c.Leaders("q", 10*time.Second)
	t.Logf("cluster up %v", time.Since(start).Round(time.Millisecond))

	var mu sync.Mutex
	seen := map[string]int{}
	consumed := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(seen)
	}
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	own := newOwners(t)
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...), kgo.ClientID(fmt.Sprintf("kip848-%d", i)),
			kgo.ConsumerGroup(group), kgo.ConsumeTopics("q"), kgo.ServerSideBalancer(),
			kgo.OnPartitionsAssigned(own.assigned(i)), kgo.OnPartitionsRevoked(own.gone(i)), kgo.OnPartitionsLost(own.gone(i)),
			kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.RetryTimeout(60*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for cctx.Err() == nil {
				pctx, pcancel := context.WithTimeout(cctx, time.Second)
				fs := cl.PollRecords(pctx, 100)
				pcancel()
				mu.Lock()
				fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
				mu.Unlock()
				// Commit after processing: what was read is committed
				// before the next poll, so a kill sends at most one
				// poll's worth per member to be read again.
				if err := cl.CommitUncommittedOffsets(cctx); err != nil && cctx.Err() == nil {
					t.Logf("commit: %v (retried with the next poll)", err)
				}
			}
		}()
	}
	// The records arrive steadily while the members consume them, so
	// each kill lands while records are being read and committed.
	var produced atomic.Int64
	prodDone := make(chan struct{})
	go func() {
		defer close(prodDone)
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...), kgo.DefaultProduceTopic("q"),
			kgo.RetryTimeout(60*time.Second))
		if err != nil {
			t.Error(err)
			return
		}
		defer cl.Close()
		const batch = 100
		for i := 0; i < total && ctx.Err() == nil; i += batch {
			var rs []*kgo.Record
			for j := i; j < i+batch && j < total; j++ {
				rs = append(rs, &kgo.Record{Key: []byte(fmt.Sprint(j)), Value: []byte(fmt.Sprintf("record-%d", j))})
			}
			if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
				t.Errorf("produce: %v", err)
				return
			}
			produced.Add(int64(len(rs)))
			time.Sleep(20 * time.Millisecond)
		}
	}()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			if ctx.Err() != nil {
				t.Fatalf("%s: consumed %d, produced %d of %d records", what, consumed(), produced.Load(), total)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	allowed := int64(0) // records that may be read twice: uncommitted at a kill
	for k := 0; k < kills; k++ {
		at := int64(total * (k + 1) / (kills + 1))
		waitFor("before the kill", func() bool { return produced.Load() >= at && int64(consumed()) >= at/2 })
		coord := coordinatorOf(t, adm, group)
		members := consumerGroupOf(t, c, group, 30*time.Second)
		before := committedOf(t, adm, group)
		n := consumed()
		c.Node(coord).Kill()
		killed := time.Now()
		allowed += int64(n) - before + 300 // and what the members held in polls (100 each)
		t.Logf("kill %d: coordinator %d killed; %d records produced, %d consumed, %d committed", k+1, coord, produced.Load(), n, before)
		// A late kill (slow restarts before it) can find the records all
		// produced and nearly all committed: the rest is then enough.
		waitFor("after the kill", func() bool {
			n, ok := committedNow(t, c, group)
			return ok && n >= min(before+101, int64(total))
		})
		t.Logf("kill %d: commits go on %v after it; new coordinator %d", k+1, time.Since(killed).Round(time.Millisecond), coordinatorOf(t, c.Admin(), group))
		if after := consumerGroupOf(t, c, group, 60*time.Second); after != members {
			t.Errorf("kill %d: members %s before, %s after the coordinator moved", k+1, members, after)
		}
		if k < kills-1 {
			c.Node(coord).Restart()
			waitBrokers(t, c.Admin(), 3)
		}
	}
	<-prodDone
	waitFor("at the end", func() bool { return consumed() >= total })
	t.Logf("all %d records consumed %v after the start", total, time.Since(start).Round(time.Millisecond))
	// Let the last commits land, then stop the members.
	waitFor("the last commits", func() bool { n, _ := committedNow(t, c, group); return n >= int64(total) })
	stop()
	wg.Wait()
	// A fresh client may first dial the killed node's seed and give up
	// for that call: ask again until one call answers.
	after, answered := int64(0), false
	for i := 0; i < 40 && !answered; i++ {
		after, answered = committedNow(t, c, group)
	}
	if after != int64(total) {
		t.Fatalf("committed offsets sum to %d at the end, want %d (answered: %v)", after, total, answered)
	}
	own.check()
	mu.Lock()
	defer mu.Unlock()
	dups := 0
	for i := 0; i < total; i++ {
		n := seen[fmt.Sprintf("record-%d", i)]
		if n == 0 {
			t.Fatalf("record-%d never consumed", i)
		}
		dups += n - 1
	}
	if int64(dups) > allowed {
		t.Errorf("%d records read twice: more than were uncommitted at the kills (%d)", dups, allowed)
	}
	t.Logf("read twice: %d (uncommitted at the kills: at most %d)", dups, allowed)
}

// consumerGroupOf waits up to wait for ConsumerGroupDescribe to show group
// as a KIP-848 consumer group (a classic one is refused) with three
// members, each at a positive member epoch, and returns the member ids
// in order.
func consumerGroupOf(t *testing.T, c *testcluster.Cluster, group string, wait time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		got := func() string {
			cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...)}, c.ClientOpts...)...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			req := kmsg.NewPtrConsumerGroupDescribeRequest()
			req.Groups = []string{group}
			resp, err := req.RequestWith(ctx, cl)
			if err != nil || len(resp.Groups) != 1 {
				return fmt.Sprintf("describe: %v", err)
			}
			g := resp.Groups[0]
			if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
				return fmt.Sprintf("describe: %v", err)
			}
			var ids []string
			for _, m := range g.Members {
				if m.MemberEpoch <= 0 {
					return fmt.Sprintf("member %s at epoch %d", m.MemberID, m.MemberEpoch)
				}
				ids = append(ids, m.MemberID)
			}
			if len(ids) != 3 || g.Epoch <= 0 {
				return fmt.Sprintf("%d members at group epoch %d", len(ids), g.Epoch)
			}
			sort.Strings(ids)
			return "ok " + strings.Join(ids, ",")
		}()
		if strings.HasPrefix(got, "ok ") {
			return strings.TrimPrefix(got, "ok ")
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is not a consumer-protocol group of 3 members: %s", group, got)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// owners records which member owns each partition, from the members'
// callbacks, and fails the test when a partition is assigned to a member
// while another still owns it.
type owners struct {
	t   *testing.T
	mu  sync.Mutex
	of  map[int32]int
	bad []string
}

func newOwners(t *testing.T) *owners { return &owners{t: t, of: map[int32]int{}} }

func (o *owners) assigned(member int) func(context.Context, *kgo.Client, map[string][]int32) {
	return func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, p := range ps["q"] {
			if prev, ok := o.of[p]; ok && prev != member {
				o.bad = append(o.bad, fmt.Sprintf("partition %d assigned to member %d while member %d owns it", p, member, prev))
			}
			o.of[p] = member
		}
	}
}

func (o *owners) gone(member int) func(context.Context, *kgo.Client, map[string][]int32) {
	return func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, p := range ps["q"] {
			if o.of[p] == member {
				delete(o.of, p)
			}
		}
	}
}

func (o *owners) check() {
	o.t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, b := range o.bad {
		o.t.Error(b)
	}
}

// committedNow sums group's committed offsets of topic q, if they can be
// fetched now. Each call is a new client: one that looked up the
// coordinator before a kill keeps dialing the dead one (franz-go forgets
// a coordinator on an error code, not on a refused dial).
func committedNow(t *testing.T, c *testcluster.Cluster, group string) (int64, bool) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...)}, c.ClientOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	offs, err := kadm.NewClient(cl).FetchOffsets(ctx, group)
	if err != nil {
		t.Logf("committed offsets of %s: %v", group, err)
		time.Sleep(500 * time.Millisecond)
		return 0, false
	}
	var sum int64
	offs.Each(func(o kadm.OffsetResponse) {
		if o.Topic == "q" && o.Err == nil {
			sum += o.At
		}
	})
	return sum, true
}

// coordinatorOf is the node coordinating group.
func coordinatorOf(t *testing.T, adm *kadm.Client, group string) int32 {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		r := adm.FindGroupCoordinators(ctx, group)
		cancel()
		if res, ok := r[group]; ok && res.Err == nil {
			return res.NodeID
		}
		if time.Now().After(deadline) {
			t.Fatalf("no coordinator for %s: %v", group, r)
		}
	}
}
