package cluster_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareGroupSurvivesCoordinatorKill: a share group's membership is
// in __consumer_offsets (replicated 3 times), so kill -9 of its
// coordinator moves it whole: the new coordinator lists and describes it
// at the same group epoch, a member holding that epoch goes on with it,
// and consumers that join again take the rest of the records with none
// they acknowledged delivered again.
func TestShareGroupSurvivesCoordinatorKill(t *testing.T) {
	c, adm := startQueue(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	seeds := strings.Split(c.Bootstrap(), ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "sg"
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
		rr.Configs = append(rr.Configs, cfg)
		req.Resources = append(req.Resources, rr)
		resp, err := req.RequestWith(ctx, cl)
		if err == nil && resp.Resources[0].ErrorCode == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("share.auto.offset.reset: %v %+v", err, resp)
		}
		time.Sleep(200 * time.Millisecond)
	}
	const n = 200
	produce(t, c.Bootstrap(), "q", 0, n)

	var mu sync.Mutex
	acked := map[string]bool{}
	again := 0
	consume := func(upTo int) {
		t.Helper()
		sc, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ShareGroup("sg"), kgo.ConsumeTopics("q"), kgo.ShareMaxRecords(10))
		if err != nil {
			t.Fatal(err)
		}
		defer sc.Close()
		for ctx.Err() == nil {
			mu.Lock()
			done := len(acked) >= upTo
			mu.Unlock()
			if done {
				return
			}
			pctx, pcancel := context.WithTimeout(ctx, time.Second)
			fs := sc.PollRecords(pctx, 10)
			pcancel()
			var got []*kgo.Record
			fs.EachRecord(func(r *kgo.Record) {
				got = append(got, r)
				sc.MarkAcks(kgo.AckAccept, r)
			})
			if len(got) == 0 {
				continue
			}
			fctx, fcancel := context.WithTimeout(ctx, 20*time.Second)
			ferr := sc.FlushAcks(fctx)
			fcancel()
			if ferr != nil {
				t.Logf("acknowledging: %v", ferr)
				continue // not confirmed: may come again
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
		t.Fatalf("consumed %d of %d", len(acked), upTo)
	}
	consume(n / 2)

	const stayerID = "stayer-0000000000000000000000000"
	hb := func(epoch int32) *kmsg.ShareGroupHeartbeatResponse {
		t.Helper()
		for {
			r := kmsg.NewPtrShareGroupHeartbeatRequest()
			r.GroupID, r.MemberID, r.MemberEpoch = "sg", stayerID, epoch
			if epoch == 0 {
				r.SubscribedTopicNames = []string{"q"}
			}
			// A client of its own each time: one that found the killed
			// coordinator may keep trying it.
			hcl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
			if err != nil {
				t.Fatal(err)
			}
			hctx, hcancel := context.WithTimeout(ctx, 10*time.Second)
			resp, err := r.RequestWith(hctx, hcl)
			hcancel()
			hcl.Close()
			if err == nil && resp.ErrorCode == 0 {
				return resp
			}
			if err == nil {
				if code := resp.ErrorCode; code != kerr.CoordinatorLoadInProgress.Code && code != kerr.CoordinatorNotAvailable.Code && code != kerr.NotCoordinator.Code {
					t.Fatalf("heartbeat at epoch %d: %v", epoch, kerr.ErrorForCode(code))
				}
			}
			if ctx.Err() != nil {
				t.Fatalf("heartbeat at epoch %d: %v", epoch, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	stayer := hb(0)
	// The closed consumer's leave may land after the stayer's join (a
	// new epoch the stayer takes at its next heartbeat): poll until the
	// stayer is alone at the group epoch.
	before := describeShareGroup(ctx, t, seeds, "sg")
	for before.GroupEpoch != stayer.MemberEpoch || len(before.Members) != 1 {
		if ctx.Err() != nil {
			t.Fatalf("before the kill: %+v, stayer at epoch %d", before, stayer.MemberEpoch)
		}
		time.Sleep(100 * time.Millisecond)
		if r := hb(stayer.MemberEpoch); r.MemberEpoch != stayer.MemberEpoch {
			stayer = r
		}
		before = describeShareGroup(ctx, t, seeds, "sg")
	}

	old := coordinatorOf(t, adm, "sg")
	c.Node(old).Kill()
	t.Logf("killed coordinator %d of sg at group epoch %d", old, before.GroupEpoch)
	for deadline := time.Now().Add(60 * time.Second); coordinatorOf(t, adm, "sg") == old; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("no new coordinator for sg")
		}
	}
	after := describeShareGroup(ctx, t, seeds, "sg")
	if after.GroupEpoch != before.GroupEpoch || len(after.Members) != 1 || after.Members[0].MemberEpoch != stayer.MemberEpoch {
		t.Fatalf("at the new coordinator: epoch %d members %+v; want epoch %d with the stayer", after.GroupEpoch, after.Members, before.GroupEpoch)
	}
	for {
		lctx, lcancel := context.WithTimeout(ctx, 10*time.Second)
		listed, err := adm.ListGroupsByType(lctx, []string{"share"})
		lcancel()
		if g, ok := listed["sg"]; err == nil && ok && g.State == "Stable" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("share groups listed: %+v %v", listed, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r := hb(stayer.MemberEpoch); r.MemberEpoch != stayer.MemberEpoch {
		t.Fatalf("the stayer at the new coordinator: epoch %d, want %d", r.MemberEpoch, stayer.MemberEpoch)
	}
	if r := hb(-1); r.MemberEpoch != -1 {
		t.Fatalf("stayer leaving: %+v", r)
	}

	consume(n)
	if again != 0 {
		t.Fatalf("%d records delivered again after their acknowledgement was confirmed", again)
	}
}

// describeShareGroup describes group through a new client each time: one
// that found a killed coordinator may keep trying it.
func describeShareGroup(ctx context.Context, t *testing.T, seeds []string, group string) kadm.DescribedShareGroup {
	t.Helper()
	for {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
		if err != nil {
			t.Fatal(err)
		}
		dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
		ds, err := kadm.NewClient(cl).DescribeShareGroups(dctx, group)
		dcancel()
		cl.Close()
		if err == nil && ds[group].Err == nil {
			return ds[group]
		}
		if ctx.Err() != nil {
			t.Fatalf("describing %s: %v %v", group, err, ds[group].Err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
