package server

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/share"
)

// The group coordinator's initialization is create-only: run again (a
// second join, a coordinator that moved and lost what it knew, two at
// once), at the same state epoch as the state a leader wrote since, it
// leaves that state as it is; past a delete it creates the state afresh
// at the delete's next state epoch (review finding 4).
func TestShareStateInitializeCreateOnly(t *testing.T) {
	s := startAdminBroker(t, shareProps)
	id := admCreateTopic(t, s, "co", 1, nil)
	k := share.Key{Group: "cg", Topic: id, Partition: 0}
	if errs := s.shareState.InitializeNew("cg", []share.Key{k}); len(errs) > 0 {
		t.Fatal(errs)
	}
	got, ok, err := s.shareState.Read(k)
	if err != nil || !ok || got.StartOffset != share.StartUnset || got.StateEpoch != 0 {
		t.Fatalf("after the initialization: %+v found=%v %v, want state epoch 0 with no start offset yet", got, ok, err)
	}
	// The leader starts it and a member's acknowledgement is written.
	acked := share.Snapshot{StateEpoch: 0, LeaderEpoch: 0, StartOffset: 3, Batches: []share.Batch{{First: 3, Last: 4, State: share.Acknowledged, Count: 1}}}
	if err := s.shareState.Write(k, &acked); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs := s.shareState.InitializeNew("cg", []share.Key{k}); len(errs) > 0 {
				t.Error(errs)
			}
		}()
	}
	wg.Wait()
	got, ok, _ = s.shareState.Read(k)
	if !ok || got.StartOffset != 3 || len(got.Batches) != 1 || got.Batches[0].State != share.Acknowledged {
		t.Fatalf("initializations over an acknowledged state left %+v (found %v), want start 3 with 3-4 acknowledged", got, ok)
	}
	if errs := s.shareState.Delete("cg", []share.Key{k}); len(errs) > 0 {
		t.Fatal(errs)
	}
	if errs := s.shareState.InitializeNew("cg", []share.Key{k}); len(errs) > 0 {
		t.Fatal(errs)
	}
	got, ok, _ = s.shareState.Read(k)
	if !ok || got.StartOffset != share.StartUnset || got.StateEpoch != 1 || len(got.Batches) != 0 {
		t.Fatalf("initialized after a delete: %+v (found %v), want a new state at epoch 1", got, ok)
	}
	// The old leader's copy, from before the delete, stays fenced.
	if err := s.shareState.Write(k, &acked); err != kerr.FencedStateEpoch {
		t.Fatalf("the old leader's write after the new initialization: %v, want FENCED_STATE_EPOCH", err)
	}
}

// A heartbeat the coordinator refuses initializes nothing, whatever it
// subscribes to: an unknown member's, one past group.share.max.size, one
// naming a consumer group (review finding 1). An accepted one does.
func TestShareRefusedHeartbeatInitializesNothing(t *testing.T) {
	props := map[string]string{"group.share.max.size": "1"}
	for k, v := range shareProps {
		props[k] = v
	}
	s := startAdminBroker(t, props)
	id := admCreateTopic(t, s, "rh", 2, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A consumer group "classic" (its offsets committed).
	cl := admClient(t, s)
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "rh", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"classic"}
	admSend[*kmsg.FindCoordinatorResponse](t, s, fc, 4)
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = "classic", -1
	oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "rh", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		r := admSend[*kmsg.OffsetCommitResponse](t, s, oc, 8)
		code := r.Topics[0].Partitions[0].ErrorCode
		if code == 0 {
			break
		}
		if code != kerr.NotCoordinator.Code && code != kerr.CoordinatorLoadInProgress.Code || time.Now().After(deadline) {
			t.Fatalf("commit of the consumer group: %v", kerr.ErrorForCode(code))
		}
	}
	for deadline := time.Now().Add(time.Minute); !s.isOtherGroup("classic"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the consumer group is not listed")
		}
	}
	shareJoin(t, s, "full", "m1", "rh")
	before := func(g string) bool {
		_, ok, _ := s.shareState.Read(share.Key{Group: g, Topic: id, Partition: 1})
		return ok
	}
	if !before("full") {
		t.Fatal("the accepted join's partitions were not initialized")
	}
	hb := func(g, member string, epoch int32) int16 {
		r := kmsg.NewPtrShareGroupHeartbeatRequest()
		r.GroupID, r.MemberID, r.MemberEpoch, r.SubscribedTopicNames = g, member, epoch, []string{"rh"}
		return admSend[*kmsg.ShareGroupHeartbeatResponse](t, s, r, 1).ErrorCode
	}
	for _, c := range []struct {
		what, group, member string
		epoch               int32
		want                *kerr.Error
	}{
		{"an unknown member of a group not here", "nobody", "m1", 3, kerr.GroupIDNotFound},
		{"a consumer group's id", "classic", "m1", 0, kerr.GroupIDNotFound},
		{"a member past group.share.max.size", "full", "m2", 0, kerr.GroupMaxSizeReached},
		{"an unknown member of a group here", "full", "m3", 5, kerr.UnknownMemberID},
	} {
		admWantCode(t, c.what, hb(c.group, c.member, c.epoch), nil, c.want)
	}
	// Any initialization a refused heartbeat started would be running or
	// done by now: the state topic is local and loaded.
	time.Sleep(200 * time.Millisecond)
	for _, g := range []string{"nobody", "classic"} {
		if s.shares.InitRunning(g) || before(g) {
			t.Errorf("a refused heartbeat of %q initialized share-partition state", g)
		}
	}
}

// A rolling upgrade: a share coordinator of the previous version refuses
// the create-only initialization (it does not know the tag, and refuses
// StartOffset -1) with INVALID_REQUEST. The partitions it has state for
// (its leaders created it at first use) count as initialized, so an
// upgraded group coordinator assigns them; those without wait for its
// upgrade (review of h/sharefence, H1).
func TestShareInitializeAtPreviousVersion(t *testing.T) {
	s := startAdminBroker(t, shareProps)
	id := admCreateTopic(t, s, "mixed", 2, nil)
	k0 := share.Key{Group: "mg", Topic: id, Partition: 0}
	k1 := share.Key{Group: "mg", Topic: id, Partition: 1}
	if errs := s.shareState.Initialize("mg", map[share.Key]shareInit{k0: {Start: 0}}); len(errs) > 0 {
		t.Fatal(errs)
	}
	s.shareState.previousVersion = true
	errs := s.shareState.InitializeNew("mg", []share.Key{k0, k1})
	if errs[k0] != nil {
		t.Errorf("a partition with state at a previous-version share coordinator: %v, want initialized", errs[k0])
	}
	if errs[k1] == nil {
		t.Error("a partition without state at a previous-version share coordinator counted as initialized")
	}
	if got, ok, _ := s.shareState.Read(k0); !ok || got.StartOffset != 0 {
		t.Fatalf("the existing state became %+v (found %v)", got, ok)
	}
}
