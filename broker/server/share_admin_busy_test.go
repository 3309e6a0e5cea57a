package server

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/share"
)

// TestShareAdminGroupBusy: while an administrator's AlterShareGroupOffsets
// is writing the new state (held here by a share coordinator that does not
// commit), a member asking to join the group is told to retry
// (COORDINATOR_LOAD_IN_PROGRESS) and so gets no partitions, and another
// administrator's call waits the same way; once the reset ends, the member
// joins and gets its partitions. It is never "reset succeeded" plus a
// member served the old state meanwhile (review M4).
func TestShareAdminGroupBusy(t *testing.T) {
	s := startAdminBroker(t, shareProps)
	id := admCreateTopic(t, s, "bz", 1, nil)
	const g = "bg"
	k := share.Key{Group: g, Topic: id, Partition: 0}
	// The state topic exists and is loaded first.
	if errs := s.shareState.Initialize("other", map[share.Key]shareInit{{Group: "other", Topic: id}: {Epoch: 1}}); len(errs) > 0 {
		t.Fatal(errs)
	}
	waitGroupCoordinator(t, s, g)
	join := func() *kmsg.ShareGroupHeartbeatResponse {
		r := kmsg.NewPtrShareGroupHeartbeatRequest()
		r.GroupID, r.MemberID, r.MemberEpoch, r.SubscribedTopicNames = g, "m1", 0, []string{"bz"}
		part, gen, code := s.groups.ShareStatus(g)
		if code != nil {
			t.Fatal(code)
		}
		return s.shares.Heartbeat(share.HeartbeatRequest{ShareGroupHeartbeatRequest: r, Partition: part, Gen: gen}, shareTopics(s.ctrl.Image()), false)
	}

	s.shareState.uncommitted.Store(true)
	done := make(chan *kmsg.AlterShareGroupOffsetsResponse, 1)
	go func() { done <- alterShareOffset(t, s, g, "bz", 0) }()
	// The reset is under way once its state is appended (not committed).
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if st, ok, _ := s.shareState.Read(k); ok && st.StateEpoch == 1 {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("the reset ended before its state was written: %v %+v", kerr.ErrorForCode(r.ErrorCode), r.Topics)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the reset never reached the share coordinator")
		}
	}
	if r := join(); r.ErrorCode != kerr.CoordinatorLoadInProgress.Code || r.Assignment != nil {
		t.Errorf("a member joining during the reset: %v %+v, want COORDINATOR_LOAD_IN_PROGRESS and no assignment", kerr.ErrorForCode(r.ErrorCode), r.Assignment)
	}
	part, gen, _ := s.groups.ShareStatus(g)
	if e := s.shares.AdminGroup(g, false, part, gen); e != kerr.CoordinatorLoadInProgress {
		t.Errorf("another administrator's call during the reset: %v, want COORDINATOR_LOAD_IN_PROGRESS", e)
	}
	s.shareState.uncommitted.Store(false)
	resp := <-done
	if resp.ErrorCode != 0 || resp.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("the reset: %v / %v", kerr.ErrorForCode(resp.ErrorCode), kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode))
	}
	r := join()
	for i := 0; r.ErrorCode == 0 && (r.Assignment == nil || len(r.Assignment.TopicPartitions) == 0) && i < 3000; i++ {
		// The partition comes once initialized (the reset's state is
		// left as it is), at a later heartbeat.
		time.Sleep(20 * time.Millisecond)
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.GroupID, hb.MemberID, hb.MemberEpoch = g, "m1", r.MemberEpoch
		part, gen, code := s.groups.ShareStatus(g)
		if code != nil {
			t.Fatal(code)
		}
		r = s.shares.Heartbeat(share.HeartbeatRequest{ShareGroupHeartbeatRequest: hb, Partition: part, Gen: gen}, shareTopics(s.ctrl.Image()), false)
	}
	if r.ErrorCode != 0 || r.Assignment == nil || len(r.Assignment.TopicPartitions) != 1 {
		t.Fatalf("a member joining after the reset: %v %+v, want partition 0 of bz", kerr.ErrorForCode(r.ErrorCode), r.Assignment)
	}
}

// waitGroupCoordinator waits until this broker coordinates group g
// (__consumer_offsets created and loaded).
func waitGroupCoordinator(t *testing.T, s *Server, g string) {
	t.Helper()
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{g}
	admSend[*kmsg.FindCoordinatorResponse](t, s, fc, 4)
	for deadline := time.Now().Add(30 * time.Second); s.groups.Status(g) != nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("group coordinator: %v", s.groups.Status(g))
		}
	}
}

// alterShareOffset sends AlterShareGroupOffsets for partition 0 of topic.
func alterShareOffset(t *testing.T, s *Server, g, topic string, start int64) *kmsg.AlterShareGroupOffsetsResponse {
	req := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	req.GroupID = g
	rt := kmsg.NewAlterShareGroupOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewAlterShareGroupOffsetsRequestTopicPartition()
	rp.Partition, rp.StartOffset = 0, start
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return admSend[*kmsg.AlterShareGroupOffsetsResponse](t, s, req, 0)
}

// TestShareAlterOffsetAsGiven: AlterShareGroupOffsets stores a start
// offset past the high watermark as given, as Kafka does, whichever
// broker hosts the partition (it was clamped only when the coordinator
// hosted it; review L4).
func TestShareAlterOffsetAsGiven(t *testing.T) {
	s := startAdminBroker(t, shareProps)
	id := admCreateTopic(t, s, "az", 1, nil)
	waitGroupCoordinator(t, s, "ag")
	r := alterShareOffset(t, s, "ag", "az", 1000)
	if r.ErrorCode != 0 || r.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("alter: %v / %v", kerr.ErrorForCode(r.ErrorCode), kerr.ErrorForCode(r.Topics[0].Partitions[0].ErrorCode))
	}
	if st, ok, _ := s.shareState.Read(share.Key{Group: "ag", Topic: id, Partition: 0}); !ok || st.StartOffset != 1000 {
		t.Fatalf("stored %+v %v, want start 1000 (the high watermark is 0)", st, ok)
	}
}
