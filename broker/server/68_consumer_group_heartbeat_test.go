package server

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/internal/testcluster"
)

// TestConsumerGroupHeartbeatErrors: what a KIP-848 client meets on the
// wire, as Kafka answers it: a bad join is INVALID_REQUEST, an unknown
// assignor UNSUPPORTED_ASSIGNOR, a wrong epoch FENCED_MEMBER_EPOCH, a
// classic group with members GROUP_ID_NOT_FOUND; commits carry the member
// epoch (STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID, v8 refused); ListGroups
// types the groups and DescribeGroups does not describe a consumer group.
func TestConsumerGroupHeartbeatErrors(t *testing.T) {
	s := startAdminBroker(t, nil)
	id := admCreateTopic(t, s, "cgh", 3, nil)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"cg"}
	admSend[*kmsg.FindCoordinatorResponse](t, s, fc, 4) // creates __consumer_offsets
	hb := func(mut func(r *kmsg.ConsumerGroupHeartbeatRequest)) *kmsg.ConsumerGroupHeartbeatResponse {
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Group, r.MemberID, r.RebalanceTimeoutMillis, r.SubscribedTopicNames = "cg", "member-a", 30000, []string{"cgh"}
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		mut(r)
		var resp *kmsg.ConsumerGroupHeartbeatResponse
		// The first ask may find __consumer_offsets still loading.
		for i := 0; i < 100; i++ {
			resp = admSend[*kmsg.ConsumerGroupHeartbeatResponse](t, s, r, 1)
			if resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code && resp.ErrorCode != kerr.CoordinatorNotAvailable.Code && resp.ErrorCode != kerr.NotCoordinator.Code {
				break
			}
		}
		return resp
	}
	for name, c := range map[string]struct {
		mut  func(r *kmsg.ConsumerGroupHeartbeatRequest)
		want *kerr.Error
	}{
		"join without owned partitions":  {func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Topics = nil }, kerr.InvalidRequest},
		"join without subscription":      {func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }, kerr.InvalidRequest},
		"join without rebalance timeout": {func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }, kerr.InvalidRequest},
		"v1 without member id":           {func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest},
		"epoch -3":                       {func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest},
		"unknown assignor":               {func(r *kmsg.ConsumerGroupHeartbeatRequest) { a := "sticky"; r.ServerAssignor = &a }, kerr.UnsupportedAssignor},
		"bad regex":                      {func(r *kmsg.ConsumerGroupHeartbeatRequest) { re := "(("; r.SubscribedTopicRegex = &re }, kerr.InvalidRegularExpression},
		"regex over 1 KB": {func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			re := strings.Repeat("a", 1025)
			r.SubscribedTopicRegex = &re
		}, kerr.InvalidRegularExpression},
		"regex too big to compile": {func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			re := strings.Repeat("x{1000}", 20)
			r.SubscribedTopicRegex = &re
		}, kerr.InvalidRegularExpression},
		"empty group id": {func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "" }, kerr.InvalidGroupID},
		"unknown member": {func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group, r.MemberEpoch = "cg-none", 3 }, kerr.UnknownMemberID},
	} {
		if got := hb(c.mut); got.ErrorCode != c.want.Code {
			t.Errorf("%s: error %d, want %s", name, got.ErrorCode, c.want.Message)
		}
	}

	join := hb(func(*kmsg.ConsumerGroupHeartbeatRequest) {})
	if join.ErrorCode != 0 || join.MemberEpoch != 1 || join.Assignment == nil || len(join.Assignment.Topics) != 1 || join.Assignment.Topics[0].TopicID != id {
		t.Fatalf("join: %+v", join)
	}
	if got := hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch, r.Topics = 7, nil }); got.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Errorf("epoch 7 of a member at 1: error %d, want FENCED_MEMBER_EPOCH", got.ErrorCode)
	}

	commit := func(version int16, member string, epoch int32) int16 {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Group, r.MemberID, r.Generation = "cg", member, epoch
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "cgh"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = 0, 5
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return admSend[*kmsg.OffsetCommitResponse](t, s, r, version).Topics[0].Partitions[0].ErrorCode
	}
	for _, c := range []struct {
		version int16
		member  string
		epoch   int32
		want    int16
	}{
		{9, "member-a", 1, 0},
		{9, "member-a", 2, kerr.StaleMemberEpoch.Code},
		{9, "member-b", 1, kerr.UnknownMemberID.Code},
		{9, "", -1, kerr.UnknownMemberID.Code}, // admin commits only to an empty group
		{8, "member-a", 1, kerr.UnsupportedVersion.Code},
	} {
		if got := commit(c.version, c.member, c.epoch); got != c.want {
			t.Errorf("OffsetCommit v%d by %q at epoch %d: error %d, want %d", c.version, c.member, c.epoch, got, c.want)
		}
	}
	fetch := kmsg.NewPtrOffsetFetchRequest()
	fg := kmsg.NewOffsetFetchRequestGroup()
	member := "member-a"
	fg.Group, fg.MemberID, fg.MemberEpoch = "cg", &member, 4
	fetch.Groups = append(fetch.Groups, fg)
	if got := admSend[*kmsg.OffsetFetchResponse](t, s, fetch, 9).Groups[0].ErrorCode; got != kerr.StaleMemberEpoch.Code {
		t.Errorf("OffsetFetch v9 at a wrong epoch: error %d, want STALE_MEMBER_EPOCH", got)
	}

	list := kmsg.NewPtrListGroupsRequest()
	list.TypesFilter = []string{"consumer"}
	lr := admSend[*kmsg.ListGroupsResponse](t, s, list, 5)
	if len(lr.Groups) != 1 || lr.Groups[0].Group != "cg" || lr.Groups[0].GroupType != "consumer" || lr.Groups[0].GroupState != "Stable" || lr.Groups[0].ProtocolType != "consumer" {
		t.Errorf("ListGroups types=consumer: %+v", lr.Groups)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"cg"}
	if got := admSend[*kmsg.DescribeGroupsResponse](t, s, dg, 6).Groups[0].ErrorCode; got != kerr.GroupIDNotFound.Code {
		t.Errorf("DescribeGroups v6 of a consumer group: error %d, want GROUP_ID_NOT_FOUND", got)
	}
	cd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cd.Groups = []string{"cg", "cg-none"}
	cr := admSend[*kmsg.ConsumerGroupDescribeResponse](t, s, cd, 1)
	if g := cr.Groups[0]; g.ErrorCode != 0 || g.Epoch != 1 || len(g.Members) != 1 || g.Members[0].MemberEpoch != 1 || len(g.Members[0].Assignment.TopicPartitions) != 1 || g.Members[0].Assignment.TopicPartitions[0].Topic != "cgh" {
		t.Errorf("ConsumerGroupDescribe cg: %+v", g)
	}
	if g := cr.Groups[1]; g.ErrorCode != kerr.GroupIDNotFound.Code {
		t.Errorf("ConsumerGroupDescribe of an unknown group: error %d", g.ErrorCode)
	}

	if got := hb(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch, r.Topics = -1, nil }); got.ErrorCode != 0 || got.MemberEpoch != -1 {
		t.Errorf("leave: %+v", got)
	}
	if got := commit(9, "", -1); got != 0 {
		t.Errorf("admin commit to the empty consumer group: error %d", got)
	}
}

// TestConsumerGroupHeartbeatGroupConfigs: a consumer group's own
// consumer.heartbeat.interval.ms (IncrementalAlterConfigs on the GROUP
// resource) is the interval its members are told, from the next
// heartbeat after each change; deleting it brings back the broker's, and
// another group keeps the broker's throughout.
func TestConsumerGroupHeartbeatGroupConfigs(t *testing.T) {
	s := startAdminBroker(t, nil)
	admCreateTopic(t, s, "cgc", 1, nil)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"cgc-own"}
	admSend[*kmsg.FindCoordinatorResponse](t, s, fc, 4) // creates __consumer_offsets
	setInterval := func(v *string) {
		t.Helper()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "cgc-own"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "consumer.heartbeat.interval.ms", v
		if v == nil {
			c.Op = kmsg.IncrementalAlterConfigOpDelete
		}
		rr.Configs = append(rr.Configs, c)
		req.Resources = append(req.Resources, rr)
		if code := admSend[*kmsg.IncrementalAlterConfigsResponse](t, s, req, 1).Resources[0].ErrorCode; code != 0 {
			t.Fatalf("consumer.heartbeat.interval.ms=%v: %v", v, kerr.ErrorForCode(code))
		}
	}
	epochs := map[string]int32{}
	interval := func(group string) int32 {
		t.Helper()
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Group, r.MemberID, r.MemberEpoch = group, group+"-member", epochs[group]
		if r.MemberEpoch == 0 {
			r.RebalanceTimeoutMillis, r.SubscribedTopicNames = 30000, []string{"cgc"}
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		var resp *kmsg.ConsumerGroupHeartbeatResponse
		// The first ask may find __consumer_offsets, just created by
		// FindCoordinator, still electing or loading: on a loaded CI
		// machine that takes seconds, so the wait is the hang bound.
		for deadline := time.Now().Add(testcluster.HangBound); ; time.Sleep(50 * time.Millisecond) {
			resp = admSend[*kmsg.ConsumerGroupHeartbeatResponse](t, s, r, 1)
			if resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code && resp.ErrorCode != kerr.CoordinatorNotAvailable.Code && resp.ErrorCode != kerr.NotCoordinator.Code || time.Now().After(deadline) {
				break
			}
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("heartbeat of %s: %v", group, kerr.ErrorForCode(resp.ErrorCode))
		}
		epochs[group] = resp.MemberEpoch
		return resp.HeartbeatIntervalMillis
	}
	for _, step := range []struct {
		set       *string
		own, rest int32
	}{
		{nil, 5000, 5000},
		{strPtr("7000"), 7000, 5000},
		{strPtr("9000"), 9000, 5000},
		{nil, 5000, 5000},
	} {
		if step.set != nil || epochs["cgc-own"] != 0 {
			setInterval(step.set)
		}
		if got := interval("cgc-own"); got != step.own {
			t.Errorf("after consumer.heartbeat.interval.ms=%v: the group's members are told %d ms, want %d", ptrString(step.set), got, step.own)
		}
		if got := interval("cgc-other"); got != step.rest {
			t.Errorf("after consumer.heartbeat.interval.ms=%v on another group: told %d ms, want the broker's %d", ptrString(step.set), got, step.rest)
		}
	}
}

func ptrString(p *string) string {
	if p == nil {
		return "(deleted)"
	}
	return *p
}

// TestGroupConfigChangedDuringStart: a group config set while the broker
// starts, just as it subscribes to group-config changes, is in force once
// it has started. Consumer groups read the settings parsed at each
// change, not the image; read before the subscription, a change published
// in between was missed until the next change, and members were told the
// broker's default heartbeat interval.
func TestGroupConfigChangedDuringStart(t *testing.T) {
	// Not parallel: the hook is the package's.
	beforeGroupSubscribe = func(s *Server) {
		v := "7000"
		if err := s.ctrl.AlterGroupConfigs("cgs", []cluster.ConfigChange{{Name: "consumer.heartbeat.interval.ms", Value: &v}}, s.cfg.ValidateGroupConfigs, false); err != nil {
			t.Errorf("setting the group config during start: %v", err)
		}
	}
	t.Cleanup(func() { beforeGroupSubscribe = nil })
	s := startAdminBroker(t, nil)
	beforeGroupSubscribe = nil
	admCreateTopic(t, s, "cgs", 1, nil)
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"cgs"}
	admSend[*kmsg.FindCoordinatorResponse](t, s, fc, 4) // creates __consumer_offsets
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Group, r.MemberID = "cgs", "cgs-member"
	r.RebalanceTimeoutMillis, r.SubscribedTopicNames = 30000, []string{"cgs"}
	r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	var resp *kmsg.ConsumerGroupHeartbeatResponse
	for deadline := time.Now().Add(testcluster.HangBound); ; time.Sleep(50 * time.Millisecond) {
		resp = admSend[*kmsg.ConsumerGroupHeartbeatResponse](t, s, r, 1)
		if resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code && resp.ErrorCode != kerr.CoordinatorNotAvailable.Code && resp.ErrorCode != kerr.NotCoordinator.Code || time.Now().After(deadline) {
			break
		}
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("heartbeat: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	if resp.HeartbeatIntervalMillis != 7000 {
		t.Errorf("heartbeat interval %d ms, want the 7000 set while the broker started", resp.HeartbeatIntervalMillis)
	}
}
