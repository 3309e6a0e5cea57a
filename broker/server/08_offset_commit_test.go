package server

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/group"
)

// findCoordinator looks up a group until its partition is loaded.
func findCoordinator(t *testing.T, s *Server, g string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey = g
		resp := admSend[*kmsg.FindCoordinatorResponse](t, s, req, 3)
		if resp.ErrorCode == 0 {
			return
		}
		if resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code || time.Now().After(deadline) {
			t.Fatalf("find coordinator of %s: %v", g, kerr.ErrorForCode(resp.ErrorCode))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func joinReq(g, member string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = g, member, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30000, 30000
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: (&kmsg.ConsumerMemberMetadata{Topics: []string{"t"}}).AppendTo(nil)}}
	return req
}

func commitReq(g, member string, gen int32, topic string, partition int32, offset int64) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = g, member, gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset = partition, offset
	meta := "m"
	rp.Metadata = &meta
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func commitCode(t *testing.T, s *Server, req *kmsg.OffsetCommitRequest, version int16) int16 {
	t.Helper()
	return admSend[*kmsg.OffsetCommitResponse](t, s, req, version).Topics[0].Partitions[0].ErrorCode
}

// committed is the group's offset of t/p by OffsetFetch v7.
func committed(t *testing.T, s *Server, g, topic string, p int32) int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = g
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: topic, Partitions: []int32{p}}}
	resp := admSend[*kmsg.OffsetFetchResponse](t, s, req, 7)
	if resp.ErrorCode != 0 {
		t.Fatalf("offset fetch: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	return resp.Topics[0].Partitions[0].Offset
}

func describeGroup(t *testing.T, s *Server, g string) kmsg.DescribeGroupsResponseGroup {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{g}
	return admSend[*kmsg.DescribeGroupsResponse](t, s, req, 5).Groups[0]
}

func TestFindCoordinatorCreatesOffsetsTopic(t *testing.T) {
	s := startAdminBroker(t, map[string]string{"offsets.topic.num.partitions": "7", "offsets.topic.segment.bytes": "1048576"})
	findCoordinator(t, s, "g")
	top := s.ctrl.Image().Topics[group.OffsetsTopic]
	if top == nil || len(top.Partitions) != 7 || len(top.Partitions[0].Replicas) != 1 ||
		top.Configs["cleanup.policy"] != "compact" || top.Configs["segment.bytes"] != "1048576" {
		t.Fatalf("%s: %+v", group.OffsetsTopic, top)
	}
	// Java's "g".hashCode() is 103; 103 % 7 = 5.
	if p := group.PartitionFor("g", 7); p != 5 {
		t.Fatalf("partition of g: %d", p)
	}
}

// TestGroupBadInputKeepsState sends each kind of bad group request at a
// stable one-member group and checks the error code and that nothing
// changed: no offset committed, same generation and state.
func TestGroupBadInputKeepsState(t *testing.T) {
	s := startAdminBroker(t, map[string]string{"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "3"})
	admCreateTopic(t, s, "t", 2, nil)
	findCoordinator(t, s, "g")

	// KIP-394: v4+ asks a new member to come back with its id.
	j := admSend[*kmsg.JoinGroupResponse](t, s, joinReq("g", ""), 9)
	if j.ErrorCode != kerr.MemberIDRequired.Code || j.MemberID == "" {
		t.Fatalf("first join: %v %q", kerr.ErrorForCode(j.ErrorCode), j.MemberID)
	}
	member := j.MemberID
	j = admSend[*kmsg.JoinGroupResponse](t, s, joinReq("g", member), 9)
	if j.ErrorCode != 0 || j.Generation != 1 || j.LeaderID != member || len(j.Members) != 1 {
		t.Fatalf("join: %+v", j)
	}
	sreq := kmsg.NewPtrSyncGroupRequest()
	sreq.Group, sreq.MemberID, sreq.Generation = "g", member, 1
	sreq.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: member, MemberAssignment: []byte("a")}}
	if sr := admSend[*kmsg.SyncGroupResponse](t, s, sreq, 5); sr.ErrorCode != 0 || string(sr.MemberAssignment) != "a" {
		t.Fatalf("sync: %+v", sr)
	}

	stable := func() {
		t.Helper()
		d := describeGroup(t, s, "g")
		if d.ErrorCode != 0 || d.State != "Stable" || len(d.Members) != 1 || d.Members[0].MemberID != member {
			t.Fatalf("group changed: %+v", d)
		}
		if o := committed(t, s, "g", "t", 0); o != -1 {
			t.Fatalf("an offset was committed: %d", o)
		}
	}
	stable()
	hb := func(g, m string, gen int32) int16 {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.MemberID, req.Generation = g, m, gen
		return admSend[*kmsg.HeartbeatResponse](t, s, req, 4).ErrorCode
	}
	for _, c := range []struct {
		what string
		got  int16
		want *kerr.Error
	}{
		{"heartbeat of an unknown member", hb("g", "ghost", 1), kerr.UnknownMemberID},
		{"heartbeat of another generation", hb("g", member, 2), kerr.IllegalGeneration},
		{"heartbeat with an empty group id", hb("", member, 1), kerr.InvalidGroupID},
		{"join with an empty group id", admSend[*kmsg.JoinGroupResponse](t, s, joinReq("", ""), 9).ErrorCode, kerr.InvalidGroupID},
		{"join with a group id too long for the record key", admSend[*kmsg.JoinGroupResponse](t, s, joinReq(strings.Repeat("g", 40000), ""), 9).ErrorCode, kerr.InvalidGroupID},
		{"join of an unknown member", admSend[*kmsg.JoinGroupResponse](t, s, joinReq("g", "ghost"), 9).ErrorCode, kerr.UnknownMemberID},
		{"sync of another generation", func() int16 {
			r := *sreq
			r.Generation = 5
			return admSend[*kmsg.SyncGroupResponse](t, s, &r, 5).ErrorCode
		}(), kerr.IllegalGeneration},
		{"commit of an unknown member", commitCode(t, s, commitReq("g", "ghost", 1, "t", 0, 5), 8), kerr.UnknownMemberID},
		{"commit of another generation", commitCode(t, s, commitReq("g", member, 2, "t", 0, 5), 8), kerr.IllegalGeneration},
		{"commit with an empty group id", commitCode(t, s, commitReq("", member, 1, "t", 0, 5), 8), kerr.InvalidGroupID},
		{"commit to an unknown topic", commitCode(t, s, commitReq("g", member, 1, "nope", 0, 5), 8), kerr.UnknownTopicOrPartition},
		{"commit to an unknown partition", commitCode(t, s, commitReq("g", member, 1, "t", 9, 5), 8), kerr.UnknownTopicOrPartition},
		{"simple commit to a group with members", commitCode(t, s, commitReq("g", "", -1, "t", 0, 5), 8), kerr.UnknownMemberID},
	} {
		if c.got != c.want.Code {
			t.Errorf("%s: %v, want %v", c.what, kerr.ErrorForCode(c.got), c.want)
		}
		stable()
	}

	// A second member starts a rebalance: the first is told by its
	// heartbeat and its old-generation sync; its commit of the current
	// generation is still taken, as Kafka takes it.
	joined := make(chan *kmsg.JoinGroupResponse, 1)
	go func() {
		req := joinReq("g", "")
		joined <- admSend[*kmsg.JoinGroupResponse](t, s, req, 3)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for describeGroup(t, s, "g").State != "PreparingRebalance" {
		if time.Now().After(deadline) {
			t.Fatal("no rebalance")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if c := hb("g", member, 1); c != kerr.RebalanceInProgress.Code {
		t.Errorf("heartbeat during rebalance: %v", kerr.ErrorForCode(c))
	}
	if r := admSend[*kmsg.SyncGroupResponse](t, s, sreq, 5); r.ErrorCode != kerr.RebalanceInProgress.Code {
		t.Errorf("sync during rebalance: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if c := commitCode(t, s, commitReq("g", member, 1, "t", 1, 42), 8); c != 0 {
		t.Errorf("commit during rebalance: %v", kerr.ErrorForCode(c))
	}
	if o := committed(t, s, "g", "t", 1); o != 42 {
		t.Errorf("committed %d", o)
	}
	// The first member rejoins: generation 2 with both.
	j = admSend[*kmsg.JoinGroupResponse](t, s, joinReq("g", member), 9)
	other := <-joined
	if j.ErrorCode != 0 || other.ErrorCode != 0 || j.Generation != 2 || other.Generation != 2 || len(j.Members) != 2 {
		t.Fatalf("rejoin: %+v / %+v", j, other)
	}
	d := describeGroup(t, s, "g")
	if d.State != "CompletingRebalance" || len(d.Members) != 2 {
		t.Fatalf("after rejoin: %+v", d)
	}
	// Commits are refused until the assignment is synced.
	if c := commitCode(t, s, commitReq("g", member, 2, "t", 1, 43), 8); c != kerr.RebalanceInProgress.Code {
		t.Errorf("commit while completing the rebalance: %v", kerr.ErrorForCode(c))
	}

	// Deleting a group with members is refused; an unknown one is not found.
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"g", "nope"}
	dr := admSend[*kmsg.DeleteGroupsResponse](t, s, del, 2)
	if dr.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code || dr.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("delete groups: %+v", dr.Groups)
	}
	// Both leave in one request (v3+).
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = "g"
	leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: member}, {MemberID: other.MemberID}, {MemberID: "ghost"}}
	lr := admSend[*kmsg.LeaveGroupResponse](t, s, leave, 5)
	if lr.ErrorCode != 0 || lr.Members[0].ErrorCode != 0 || lr.Members[1].ErrorCode != 0 || lr.Members[2].ErrorCode != kerr.UnknownMemberID.Code {
		t.Fatalf("leave: %+v", lr)
	}
	if d := describeGroup(t, s, "g"); d.State != "Empty" || len(d.Members) != 0 {
		t.Fatalf("after leave: %+v", d)
	}
	// An empty group takes simple commits, lists, and can be deleted.
	if c := commitCode(t, s, commitReq("g", "", -1, "t", 0, 7), 2); c != 0 {
		t.Fatalf("simple commit: %v", kerr.ErrorForCode(c))
	}
	list := kmsg.NewPtrListGroupsRequest()
	list.StatesFilter = []string{"empty"}
	if l := admSend[*kmsg.ListGroupsResponse](t, s, list, 4); len(l.Groups) != 1 || l.Groups[0].Group != "g" || l.Groups[0].GroupState != "Empty" {
		t.Fatalf("list groups: %+v", l)
	}
	list.StatesFilter = []string{"Stable"}
	if l := admSend[*kmsg.ListGroupsResponse](t, s, list, 4); len(l.Groups) != 0 {
		t.Fatalf("list stable groups: %+v", l)
	}
	// OffsetFetch v8: several groups, topics null means all.
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}, {Group: "other"}}
	fr := admSend[*kmsg.OffsetFetchResponse](t, s, fetch, 9)
	if len(fr.Groups) != 2 || len(fr.Groups[0].Topics) != 1 || len(fr.Groups[0].Topics[0].Partitions) != 2 ||
		fr.Groups[0].Topics[0].Partitions[0].Offset != 7 || fr.Groups[0].Topics[0].Partitions[1].Offset != 42 ||
		len(fr.Groups[1].Topics) != 0 {
		t.Fatalf("offset fetch v9: %+v", fr.Groups)
	}
	// OffsetDelete of one partition.
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}},
		{Topic: "nope", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	odr := admSend[*kmsg.OffsetDeleteResponse](t, s, od, 0)
	if odr.ErrorCode != 0 || odr.Topics[0].Partitions[0].ErrorCode != 0 || odr.Topics[1].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
		t.Fatalf("offset delete: %+v", odr)
	}
	if o := committed(t, s, "g", "t", 0); o != -1 {
		t.Fatalf("deleted offset still there: %d", o)
	}
	del.Groups = []string{"g"}
	if dr := admSend[*kmsg.DeleteGroupsResponse](t, s, del, 2); dr.Groups[0].ErrorCode != 0 {
		t.Fatalf("delete group: %v", kerr.ErrorForCode(dr.Groups[0].ErrorCode))
	}
	if d := describeGroup(t, s, "g"); d.State != "Dead" {
		t.Fatalf("deleted group: %+v", d)
	}
}
