package conformance

// A broker crash in the middle of group consumption. See
// groups_setup_test.go for which broker this runs against.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupsCommitLog is what a group's members processed and what the broker
// acknowledged as committed.
type groupsCommitLog struct {
	mu        sync.Mutex
	acked     map[int32]int64 // highest acknowledged committed offset
	times     map[goAck]int
	values    map[string]bool
	processed int
	again     int
	bad       []string
	resumed   map[int32]int64 // first offset the "resume-" members processed
	// inflight counts the commits a member has decided to send and not
	// yet seen answered: one sent before commits were held back may land
	// after the restart (franz-go retries it), and is no held-back commit.
	inflight atomic.Int64
}

func (c *groupsCommitLog) process(member string, p int32, o int64, v string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.processed++
	at := goAck{p, o}
	c.times[at]++
	if c.times[at] > 1 {
		c.again++
		if o < c.acked[p] {
			c.bad = append(c.bad, fmt.Sprintf("%s processed %d/%d again, though offset %d of that partition was committed", member, p, o, c.acked[p]))
		}
	}
	c.values[v] = true
	if strings.HasPrefix(member, "resume-") {
		if _, ok := c.resumed[p]; !ok {
			c.resumed[p] = o
		}
	}
}

func (c *groupsCommitLog) committed(req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse) {
	c.mu.Lock()
	defer c.mu.Unlock()
	sent := map[int32]int64{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			sent[p.Partition] = p.Offset
		}
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode == 0 {
				c.acked[p.Partition] = max(c.acked[p.Partition], sent[p.Partition])
			}
		}
	}
}

func (c *groupsCommitLog) snapshot() (acked map[int32]int64, processed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	acked = map[int32]int64{}
	for p, o := range c.acked {
		acked[p] = o
	}
	return acked, c.processed
}

// TestGroupsCrash: two franz-go members consume a group (commit after
// process, each commit's answer recorded) while the broker is killed with
// SIGKILL and restarted. Commits are held back from the kill on, so that
// nothing overwrites what the broker had: every offset acknowledged before
// the kill must still be committed after the restart. The two members go
// on through the restart (reconnecting, rejoining if the broker lost
// them), then close (still without committing) and two new members join
// the group: they must resume exactly from the committed offsets read
// after the restart. Throughout, no record whose offset was committed is
// processed again; at the end every record was processed and the committed
// offsets are the end offsets.
func TestGroupsCrash(t *testing.T) {
	groupsCrash(t, groupsStart(t), "groups-crash", "crash-group")
}

// groupsCrash is TestGroupsCrash's scenario on b, its members franz-go
// clients with opts added.
func groupsCrash(t *testing.T, b groupsBroker, topic, group string, opts ...kgo.Opt) {
	groupsCreateTopic(t, b.Addr(), topic, groupsPartitions)
	prod := newGroupsProducer(t, b.Addr(), topic)
	prod.produce(4000)

	cl := &groupsCommitLog{acked: map[int32]int64{}, times: map[goAck]int{}, values: map[string]bool{}, resumed: map[int32]int64{}}
	var holdCommits atomic.Bool
	var errMu sync.Mutex
	var clientErrs []string
	// members starts two members named prefix-1 and prefix-2; the
	// function it returns stops (closes) them.
	members := func(prefix string) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for i := 1; i <= 2; i++ {
			name := fmt.Sprintf("%s-%d", prefix, i)
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := groupsCrashMember(ctx, b.Addr(), topic, group, name, cl, &holdCommits, opts...)
				if err != nil {
					errMu.Lock()
					clientErrs = append(clientErrs, name+": "+err.Error())
					errMu.Unlock()
				}
			}()
		}
		return func() {
			cancel()
			wg.Wait()
		}
	}
	stopFirst := members("crash")
	defer stopFirst()
	state := func() string {
		acked, n := cl.snapshot()
		return fmt.Sprintf("processed %d, acknowledged commits %v, %d records not processed", n, acked, prod.count()-len(cl.values))
	}
	groupsWait(t, "1,500 records processed and commits in every partition", groupsDeadline, func() bool {
		acked, n := cl.snapshot()
		return n >= 1500 && len(acked) == groupsPartitions
	}, state)

	holdCommits.Store(true)
	b.Kill()
	acked, n := cl.snapshot()
	t.Logf("killed the broker with %d records processed, acknowledged commits %v", n, acked)
	time.Sleep(300 * time.Millisecond)
	restart := time.Now()
	b.Restart()
	t.Logf("restarted in %v", time.Since(restart).Round(time.Millisecond))
	groupsWait(t, "the commits sent before the kill to be answered", groupsDeadline, func() bool { return cl.inflight.Load() == 0 }, state)
	got := groupsCommitted(t, b.Addr(), group, topic)
	for p, o := range acked {
		if got[p] < o {
			t.Errorf("partition %d: committed offset %d after the restart, but %d was acknowledged before the kill (a committed offset was lost)", p, got[p], o)
		}
	}
	t.Logf("committed offsets after the restart: %v", got)
	prod.produce(1000)
	// The first members go on a little after the restart, then close
	// without committing; new members take over from the committed offsets.
	time.Sleep(500 * time.Millisecond)
	stopFirst()
	if again := groupsCommitted(t, b.Addr(), group, topic); fmt.Sprint(again) != fmt.Sprint(got) {
		t.Fatalf("committed offsets changed from %v to %v while commits were held back", got, again)
	}
	holdCommits.Store(false)
	stopResume := members("resume")
	defer stopResume()
	missing := func() int {
		cl.mu.Lock()
		defer cl.mu.Unlock()
		prod.mu.Lock()
		defer prod.mu.Unlock()
		n := 0
		for id := range prod.acks {
			if !cl.values[fmt.Sprintf("%s/%d", topic, id)] {
				n++
			}
		}
		return n
	}
	groupsWait(t, "every record processed", 90*time.Second, func() bool { return missing() == 0 }, state)
	end := prod.ends()
	groupsWait(t, "commits up to the end offsets", 30*time.Second, func() bool {
		acked, _ := cl.snapshot()
		for p, e := range end {
			if acked[p] < e {
				return false
			}
		}
		return true
	}, state)
	stopResume()
	groupsCheckCommittedAtEnd(t, b.Addr(), group, topic, end)
	cl.mu.Lock()
	defer cl.mu.Unlock()
	for p := range end {
		if cl.resumed[p] != got[p] {
			t.Errorf("partition %d: the new members started at offset %d, the committed offset is %d", p, cl.resumed[p], got[p])
		}
	}
	t.Logf("the new members started at %v", cl.resumed)
	t.Logf("%d records, processed %d times, %d again (not committed at the kill)", prod.count(), cl.processed, cl.again)
	for i, s := range cl.bad {
		if i == 10 {
			t.Errorf("... %d in all", len(cl.bad))
			break
		}
		t.Error(s)
	}
	for _, e := range clientErrs {
		t.Error(e)
	}
}

// groupsCrashMember is a franz-go group member that processes slowly (so
// that the kill finds it mid-topic: at most 50 records a poll, 50ms a
// poll) and commits after each poll with CommitOffsetsSync, recording the
// answer; while hold is set it does not commit.
func groupsCrashMember(ctx context.Context, addr, topic, group, member string, log *groupsCommitLog, hold *atomic.Bool, opts ...kgo.Opt) error {
	commit := func(ctx context.Context, cl *kgo.Client) {
		// Counted before the check: a commit that passes it is in
		// flight by the time the test reads the count.
		log.inflight.Add(1)
		defer log.inflight.Add(-1)
		if hold.Load() {
			return
		}
		cl.CommitOffsetsSync(ctx, cl.UncommittedOffsets(), func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err == nil {
				log.committed(req, resp)
			}
		})
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(addr), kgo.ClientID(member),
		kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(),
		kgo.HeartbeatInterval(500 * time.Millisecond),
		kgo.SessionTimeout(30 * time.Second),
		kgo.RetryTimeout(60 * time.Second),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, _ map[string][]int32) { commit(ctx, cl) }),
	}, opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollRecords(ctx, 50)
		// Fetch errors while the broker is down are expected: the
		// client retries. What matters is what is processed.
		fs.EachRecord(func(r *kgo.Record) { log.process(member, r.Partition, r.Offset, string(r.Value)) })
		if ctx.Err() == nil {
			commit(ctx, cl)
		}
		cl.AllowRebalance()
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}
