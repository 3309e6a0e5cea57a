package server

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestShareGroupSurvivesRestart: a share group's membership is in
// __consumer_offsets. After kill -9 of its only broker and a restart the
// group is listed and described at the epoch it had, a member still
// holding that epoch goes on with it (no rejoin, no new epoch), and
// consumers that join again take the rest of the records with none they
// acknowledged before the kill delivered again.
func TestShareGroupSurvivesRestart(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t,
		"group.share.min.heartbeat.interval.ms=200", "group.share.heartbeat.interval.ms=500",
		"group.share.min.session.timeout.ms=3000", "group.share.session.timeout.ms=30000",
		"group.share.record.lock.duration.ms=30000")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	if r, err := adm.CreateTopic(ctx, 2, 1, nil, "q"); err != nil || r.Err != nil {
		t.Fatalf("create: %v %v", err, r.Err)
	}
	setGroupEarliest(ctx, t, cl, "sg")
	const n = 200
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: "q", Value: []byte(strconv.Itoa(i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	acked := map[string]bool{}
	again := 0
	consume := func(max int) {
		t.Helper()
		c, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ShareGroup("sg"), kgo.ConsumeTopics("q"), kgo.ShareMaxRecords(10))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		for ctx.Err() == nil {
			mu.Lock()
			done := len(acked) >= max
			mu.Unlock()
			if done {
				return
			}
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			fs := c.PollRecords(pctx, 10)
			pcancel()
			var got []*kgo.Record
			fs.EachRecord(func(r *kgo.Record) {
				got = append(got, r)
				c.MarkAcks(kgo.AckAccept, r)
			})
			if len(got) == 0 {
				continue
			}
			if err := c.FlushAcks(ctx); err != nil {
				t.Fatalf("acknowledging: %v", err)
			}
			mu.Lock()
			for _, r := range got {
				if acked[string(r.Value)] {
					again++
				}
				acked[string(r.Value)] = true
			}
			mu.Unlock()
		}
		t.Fatalf("consumed %d of %d", len(acked), max)
	}
	consume(n / 2)

	// A member that stays through the kill, heartbeating by hand.
	hb := func(epoch int32) *kmsg.ShareGroupHeartbeatResponse {
		t.Helper()
		for {
			r := kmsg.NewPtrShareGroupHeartbeatRequest()
			r.GroupID, r.MemberID, r.MemberEpoch = "sg", "stayer-0000000000000000000000000", epoch
			if epoch == 0 {
				r.SubscribedTopicNames = []string{"q"}
			}
			resp, err := r.RequestWith(ctx, cl)
			if err == nil && resp.ErrorCode == 0 {
				return resp
			}
			code := int16(-1)
			if err == nil {
				code = resp.ErrorCode
			}
			if ctx.Err() != nil || err == nil && code != kerr.CoordinatorLoadInProgress.Code && code != kerr.CoordinatorNotAvailable.Code && code != kerr.NotCoordinator.Code {
				t.Fatalf("heartbeat at epoch %d: %v %v", epoch, err, kerr.ErrorForCode(code))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	stayer := hb(0)
	// The closed consumer's leave may land after the stayer's join (a
	// new epoch the stayer takes at its next heartbeat): poll until the
	// stayer is alone at the group epoch.
	before := describeShare(ctx, t, adm, "sg")
	for before.GroupEpoch != stayer.MemberEpoch || len(before.Members) != 1 {
		if ctx.Err() != nil {
			t.Fatalf("before the kill: %+v, stayer at epoch %d", before, stayer.MemberEpoch)
		}
		time.Sleep(100 * time.Millisecond)
		if r := hb(stayer.MemberEpoch); r.MemberEpoch != stayer.MemberEpoch {
			stayer = r
		}
		before = describeShare(ctx, t, adm, "sg")
	}

	b.Kill()
	b.Restart()

	listed, err := adm.ListGroupsByType(ctx, []string{"share"})
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := listed["sg"]; !ok || g.GroupType != "share" || g.State != "Stable" {
		t.Fatalf("after the restart, share groups listed: %+v", listed)
	}
	after := describeShare(ctx, t, adm, "sg")
	if after.GroupEpoch != before.GroupEpoch || len(after.Members) != 1 || after.Members[0].MemberEpoch != stayer.MemberEpoch {
		t.Fatalf("after the restart: epoch %d members %+v; want epoch %d with the stayer", after.GroupEpoch, after.Members, before.GroupEpoch)
	}
	if r := hb(stayer.MemberEpoch); r.MemberEpoch != stayer.MemberEpoch {
		t.Fatalf("the stayer's heartbeat after the restart: epoch %d, want %d", r.MemberEpoch, stayer.MemberEpoch)
	}
	// The restarted coordinator took the group's partitions as
	// initialized from its type-15 record: a member joining now gets
	// partitions on its first heartbeat, not after a round of
	// initialization (as a new group's members do), and the group epoch
	// moves only for its join (a round of initialization would move it
	// too).
	nc := kmsg.NewPtrShareGroupHeartbeatRequest()
	nc.GroupID, nc.MemberID, nc.MemberEpoch, nc.SubscribedTopicNames = "sg", "newcomer-00000000000000000000000", 0, []string{"q"}
	if resp, err := nc.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 || resp.Assignment == nil || len(resp.Assignment.TopicPartitions) == 0 || resp.MemberEpoch != before.GroupEpoch+1 {
		t.Fatalf("a member joining after the restart: %v %+v, want partitions on its first heartbeat at epoch %d", err, resp, before.GroupEpoch+1)
	}
	for _, id := range []string{"stayer-0000000000000000000000000", "newcomer-00000000000000000000000"} {
		r := kmsg.NewPtrShareGroupHeartbeatRequest()
		r.GroupID, r.MemberID, r.MemberEpoch = "sg", id, -1
		if resp, err := r.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 {
			t.Fatalf("%s leaving: %v %+v", id, err, resp)
		}
	}

	consume(n)
	if again != 0 {
		t.Fatalf("%d records acknowledged before the kill were delivered again", again)
	}
	if d := describeShare(ctx, t, adm, "sg"); d.GroupEpoch <= before.GroupEpoch {
		t.Fatalf("group epoch went back: %d after %d", d.GroupEpoch, before.GroupEpoch)
	}

	// Deleted, the group goes with its records and its share state: not
	// back after another restart, and the same name reads from the start.
	for {
		dg, err := adm.DeleteGroup(ctx, "sg")
		if err == nil && dg.Err == nil {
			break
		}
		// The consumers' sessions may not have ended yet.
		if ctx.Err() != nil || err == nil && !errors.Is(dg.Err, kerr.NonEmptyGroup) && !errors.Is(dg.Err, kerr.CoordinatorLoadInProgress) {
			t.Fatalf("deleting sg: %v %v", err, dg.Err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Kill()
	b.Restart()
	listed, err = adm.ListGroupsByType(ctx, []string{"share"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := listed["sg"]; ok {
		t.Fatalf("a deleted share group came back after a restart: %+v", listed)
	}
	setGroupEarliest(ctx, t, cl, "sg")
	mu.Lock()
	acked, again = map[string]bool{}, 0
	mu.Unlock()
	consume(n)
}

func describeShare(ctx context.Context, t *testing.T, adm *kadm.Client, group string) kadm.DescribedShareGroup {
	t.Helper()
	for {
		ds, err := adm.DescribeShareGroups(ctx, group)
		if err == nil && ds[group].Err == nil {
			return ds[group]
		}
		if ctx.Err() != nil {
			t.Fatalf("describing %s: %v %v", group, err, ds[group].Err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// setGroupEarliest sets share.auto.offset.reset=earliest on a group.
func setGroupEarliest(ctx context.Context, t *testing.T, cl *kgo.Client, group string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || resp.Resources[0].ErrorCode != 0 {
		t.Fatalf("share.auto.offset.reset: %v %+v", err, resp)
	}
}
