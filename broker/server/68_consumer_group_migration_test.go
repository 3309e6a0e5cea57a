package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConsumerGroupMigrationWire: on the wire, a classic group with a
// member is upgraded by a ConsumerGroupHeartbeat; ConsumerGroupDescribe
// then shows the classic member (member type 0) and the consumer one (1);
// the classic member is told to rejoin, and its JoinGroup is answered with
// no leader and its member epoch as the generation.
func TestConsumerGroupMigrationWire(t *testing.T) {
	s := startAdminBroker(t, nil)
	admCreateTopic(t, s, "mig", 2, nil)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"mg"}
	admSend[*kmsg.FindCoordinatorResponse](t, s, fc, 4)

	meta := (&kmsg.ConsumerMemberMetadata{Version: 1, Topics: []string{"mig"}}).AppendTo(nil)
	join := func(member string) *kmsg.JoinGroupResponse {
		r := kmsg.NewPtrJoinGroupRequest()
		r.Group, r.MemberID, r.ProtocolType = "mg", member, "consumer"
		r.SessionTimeoutMillis, r.RebalanceTimeoutMillis = 10000, 30000
		r.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta}}
		var resp *kmsg.JoinGroupResponse
		for i := 0; i < 100; i++ { // __consumer_offsets may still be loading
			resp = admSend[*kmsg.JoinGroupResponse](t, s, r, 3)
			if resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code && resp.ErrorCode != kerr.CoordinatorNotAvailable.Code && resp.ErrorCode != kerr.NotCoordinator.Code {
				break
			}
		}
		return resp
	}
	jr := join("")
	if jr.ErrorCode != 0 || jr.LeaderID != jr.MemberID {
		t.Fatalf("classic join: %+v", jr)
	}
	classic, gen := jr.MemberID, jr.Generation
	sr := kmsg.NewPtrSyncGroupRequest()
	sr.Group, sr.MemberID, sr.Generation = "mg", classic, gen
	a := kmsg.ConsumerMemberAssignment{Version: 1, Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: "mig", Partitions: []int32{0, 1}}}}
	sr.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: classic, MemberAssignment: a.AppendTo(nil)}}
	if resp := admSend[*kmsg.SyncGroupResponse](t, s, sr, 3); resp.ErrorCode != 0 {
		t.Fatalf("classic sync: %+v", resp)
	}

	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis, hb.SubscribedTopicNames = "mg", "consumer-a", 30000, []string{"mig"}
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	if resp := admSend[*kmsg.ConsumerGroupHeartbeatResponse](t, s, hb, 1); resp.ErrorCode != 0 || resp.MemberEpoch != gen+1 {
		t.Fatalf("consumer member joining the classic group: %+v", resp)
	}
	cd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cd.Groups = []string{"mg"}
	g := admSend[*kmsg.ConsumerGroupDescribeResponse](t, s, cd, 1).Groups[0]
	types := map[string]int8{}
	for _, m := range g.Members {
		types[m.MemberID] = m.MemberType
	}
	if g.ErrorCode != 0 || g.Epoch != gen+1 || len(types) != 2 || types[classic] != 0 || types["consumer-a"] != 1 {
		t.Fatalf("ConsumerGroupDescribe after the upgrade: error %d epoch %d member types %v", g.ErrorCode, g.Epoch, types)
	}
	h := kmsg.NewPtrHeartbeatRequest()
	h.Group, h.MemberID, h.Generation = "mg", classic, gen
	if resp := admSend[*kmsg.HeartbeatResponse](t, s, h, 3); resp.ErrorCode != kerr.RebalanceInProgress.Code {
		t.Fatalf("classic heartbeat after the upgrade: error %d, want REBALANCE_IN_PROGRESS", resp.ErrorCode)
	}
	if jr := join(classic); jr.ErrorCode != 0 || jr.LeaderID != "" || len(jr.Members) != 0 || jr.Generation != gen {
		// It must give one partition up first: it stays at its epoch
		// until a JoinGroup reports it revoked.
		t.Fatalf("classic rejoin to the consumer group: %+v", jr)
	}
}
