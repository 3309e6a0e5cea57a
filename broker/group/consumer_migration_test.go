package group

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// classic helpers: a Java-like classic consumer with the range protocol.

func classicMeta1(owned []int32) []byte {
	m := kmsg.ConsumerMemberMetadata{Version: 1, Topics: []string{"t"}}
	if len(owned) > 0 {
		m.OwnedPartitions = []kmsg.ConsumerMemberMetadataOwnedPartition{{Topic: "t", Partitions: owned}}
	}
	return m.AppendTo(nil)
}

func (h *cgHarness) join(member string, owned []int32) *kmsg.JoinGroupResponse {
	h.t.Helper()
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version, req.Group, req.MemberID, req.ProtocolType = 3, "g", member, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 30000
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: classicMeta1(owned)}}
	var got *kmsg.JoinGroupResponse
	h.gs.Join(JoinRequest{JoinGroupRequest: req, ClientID: "c", ClientHost: "/127.0.0.1"}, h.now, func(r *kmsg.JoinGroupResponse) { got = r })
	h.flush()
	return got
}

func (h *cgHarness) sync(member string, gen int32, assign map[string][]int32) *kmsg.SyncGroupResponse {
	h.t.Helper()
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version, req.Group, req.MemberID, req.Generation = 3, "g", member, gen
	for id, ps := range assign {
		a := kmsg.ConsumerMemberAssignment{Version: 1, Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: "t", Partitions: ps}}}
		req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: a.AppendTo(nil)})
	}
	var got *kmsg.SyncGroupResponse
	h.gs.Sync(req, h.now, func(r *kmsg.SyncGroupResponse) { got = r })
	h.flush()
	return got
}

func syncParts(t *testing.T, r *kmsg.SyncGroupResponse) []int32 {
	t.Helper()
	if r == nil || r.ErrorCode != 0 {
		t.Fatalf("sync: %+v", r)
	}
	var a kmsg.ConsumerMemberAssignment
	if err := a.ReadFrom(r.MemberAssignment); err != nil {
		t.Fatal(err)
	}
	var out []int32
	for _, tp := range a.Topics {
		out = append(out, tp.Partitions...)
	}
	return out
}

func (h *cgHarness) classicHB(member string, gen int32) *kerr.Error {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = "g", member, gen
	code := h.gs.Heartbeat(req, h.now)
	h.flush()
	return code
}

// TestConsumerMigration: a classic group of two eager members is upgraded
// by a consumer-protocol member joining; the classic members are told to
// rejoin, revoke before anything is reassigned, and reach the new epoch;
// the log replays to the same group; when the consumer member leaves the
// group is classic again and rebalancing.
// classicPair is a stable classic group of two eager members a and b,
// 3 partitions each, at generation gen.
func classicPair(t *testing.T) (h *cgHarness, a, b string, gen int32) {
	h = newCGHarness(t)
	h.gs.Topics = func() map[string]TopicMeta { return h.topics }
	h.gs.cfg.Consumer.Upgrade, h.gs.cfg.Consumer.Downgrade = true, true
	h.gs.cfg.InitialRebalanceDelay = 0
	h.gs.cfg.MinSessionTimeout, h.gs.cfg.MaxSessionTimeout = time.Second, time.Hour

	// a completes the join alone, then b joins.
	r := h.join("", nil)
	a = r.MemberID
	h.sync(a, r.Generation, map[string][]int32{a: {0, 1, 2, 3, 4, 5}})
	h.join("", nil) // b: pending until a rejoins
	ra := h.join(a, nil)
	for _, m := range ra.Members {
		if m.MemberID != a {
			b = m.MemberID
		}
	}
	gen = ra.Generation
	if b == "" {
		t.Fatalf("join: %+v", ra)
	}
	h.sync(a, gen, map[string][]int32{a: {0, 1, 2}, b: {3, 4, 5}})
	if got := syncParts(t, h.sync(b, gen, nil)); len(got) != 3 {
		t.Fatalf("b's classic assignment %v", got)
	}
	return h, a, b, gen
}

// TestConsumerMigrationJoinTimeout: a classic member of a consumer group
// told to rejoin that keeps heartbeating but never rejoins is removed
// after its rebalance timeout (Kafka's join timeout), and its partitions
// go to the others.
func TestConsumerMigrationJoinTimeout(t *testing.T) {
	h, a, b, gen := classicPair(t)
	h.hb("c", 0, nil, true)
	// a rejoins at once; b only heartbeats.
	for range 2 {
		jr := h.join(a, nil)
		syncParts(t, h.sync(a, jr.Generation, nil))
	}
	for i := 0; i < 7; i++ { // 35 s of heartbeats, 5 s apart: within b's session of 10 s
		if code := h.classicHB(b, gen); code != kerr.RebalanceInProgress {
			t.Fatalf("b's heartbeat %d: %v, want REBALANCE_IN_PROGRESS", i, code)
		}
		h.gs.Tick(h.now)
		h.flush()
		h.now = h.now.Add(5 * time.Second)
	}
	h.gs.Tick(h.now)
	h.flush()
	g, _ := h.gs.Group("g")
	if _, ok := g.consumer.members[b]; ok {
		t.Fatalf("b still a member 35 s after it was told to rejoin (rebalance timeout 30 s):\n%s", h.describe())
	}
	if code := h.classicHB(b, gen); code != kerr.UnknownMemberID {
		t.Fatalf("b's heartbeat after its removal: %v, want UNKNOWN_MEMBER_ID", code)
	}
}

func TestConsumerMigration(t *testing.T) {
	h, a, b, gen := classicPair(t)

	// The consumer member joins: the group is upgraded.
	hr := h.hb("c", 0, nil, true)
	if hr.ErrorCode != 0 || hr.MemberEpoch != gen+1 || len(assigned(hr)) != 0 {
		t.Fatalf("consumer join: %+v, assigned %v; want epoch %d and nothing yet", hr, assigned(hr), gen+1)
	}
	h.checkNoDoubleOwner()
	if code := h.classicHB(a, gen); code != kerr.RebalanceInProgress {
		t.Fatalf("classic heartbeat after the upgrade: %v, want REBALANCE_IN_PROGRESS", code)
	}
	// A JoinGroup whose subscription does not decode is refused.
	bad := kmsg.NewPtrJoinGroupRequest()
	bad.Version, bad.Group, bad.MemberID, bad.ProtocolType = 3, "g", a, "consumer"
	bad.SessionTimeoutMillis, bad.RebalanceTimeoutMillis = 10000, 30000
	bad.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 1, 0xff}}}
	var badResp *kmsg.JoinGroupResponse
	h.gs.Join(JoinRequest{JoinGroupRequest: bad}, h.now, func(r *kmsg.JoinGroupResponse) { badResp = r })
	if badResp == nil || badResp.ErrorCode != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("JoinGroup with a malformed subscription: %+v", badResp)
	}
	// a rejoins (eager: it revoked everything first), then b.
	for _, id := range []string{a, b} {
		jr := h.join(id, nil)
		if jr.ErrorCode != 0 || jr.LeaderID != "" || len(jr.Members) != 0 {
			t.Fatalf("classic join of %s to the consumer group: %+v", id, jr)
		}
		parts := syncParts(t, h.sync(id, jr.Generation, nil))
		h.checkNoDoubleOwner()
		if jr.Generation == gen {
			// Still revoking: it got what it retains, and must rejoin.
			if code := h.classicHB(id, jr.Generation); code != kerr.RebalanceInProgress {
				t.Fatalf("%s retains %v at epoch %d: heartbeat %v, want REBALANCE_IN_PROGRESS", id, parts, jr.Generation, code)
			}
			jr = h.join(id, nil)
			parts = syncParts(t, h.sync(id, jr.Generation, nil))
		}
		if jr.Generation != gen+1 || len(parts) != 2 {
			t.Fatalf("%s after revoking: epoch %d partitions %v\n%s", id, jr.Generation, parts, h.describe())
		}
	}
	hr = h.hb("c", gen+1, []int32{}, false)
	if len(assigned(hr)) != 2 {
		t.Fatalf("consumer member after the classic members revoked: %v\n%s", assigned(hr), h.describe())
	}
	h.checkNoDoubleOwner()
	if code := h.classicHB(a, gen+1); code != nil {
		t.Fatalf("classic heartbeat of a reconciled member: %v", code)
	}
	want := h.describe()
	if !strings.Contains(want, "Stable") {
		t.Fatalf("not stable:\n%s", want)
	}

	// The log replays to the same group, classic members included.
	r2 := NewGroups(h.gs.cfg)
	for _, rec := range h.log {
		if err := r2.Replay(rec.Key, rec.Value, h.now); err != nil {
			t.Fatal(err)
		}
	}
	g2, _ := r2.Group("g")
	if got := describeConsumer(g2, map[[16]byte]string{cgTopicID: "t"}); got != want {
		t.Fatalf("replayed:\n%s\nwant:\n%s", got, want)
	}
	if m := g2.consumer.members[a]; m.Classic == nil || m.Classic.Protocols[0].Name != "range" {
		t.Fatalf("replayed classic member: %+v", m.Classic)
	}

	// The consumer member leaves: a classic group again, rebalancing.
	h.hb("c", -1, nil, false)
	g, _ := h.gs.Group("g")
	if g.consumer != nil || g.State != PreparingRebalance || len(g.members) != 2 {
		t.Fatalf("after the last consumer member left: %s", g)
	}
	if code := h.classicHB(a, gen+1); code != kerr.RebalanceInProgress {
		t.Fatalf("classic heartbeat after the downgrade: %v", code)
	}
	h.join(a, nil) // answered when b rejoins too
	jb := h.join(b, nil)
	if jb == nil || jb.ErrorCode != 0 || jb.Generation != gen+2 {
		t.Fatalf("rejoin after the downgrade: %+v\n%s", jb, g)
	}
}

// TestConsumerMigrationStaticReplacement: static members move between the
// protocols by a restart with the same group.instance.id, as in Kafka. A
// consumer-protocol member replaces a live classic one at once (a classic
// static member never leaves with epoch -2) and takes its partitions; a
// classic member replacing the last consumer-protocol member turns the
// reconciled group into a classic group without a rebalance.
func TestConsumerMigrationStaticReplacement(t *testing.T) {
	h, a, b, gen := classicPair(t)
	// c joins (upgrade); a and b rejoin until reconciled.
	h.hb("c", 0, nil, true)
	for _, id := range []string{a, b} {
		for i := 0; i < 3; i++ {
			jr := h.join(id, nil)
			syncParts(t, h.sync(id, jr.Generation, nil))
			if jr.Generation == gen+1 {
				break
			}
		}
	}
	// A static consumer member s1 joins; the dynamic c leaves.
	inst := "static-c"
	var cr *kmsg.ConsumerGroupHeartbeatResponse
	sreq := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	sreq.Version, sreq.Group, sreq.MemberID, sreq.MemberEpoch, sreq.InstanceID = 1, "g", "s1", 0, &inst
	sreq.RebalanceTimeoutMillis, sreq.SubscribedTopicNames, sreq.Topics = 30000, []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	h.gs.ConsumerHeartbeat(ConsumerHeartbeatRequest{ConsumerGroupHeartbeatRequest: sreq}, h.topics, h.now, func(r *kmsg.ConsumerGroupHeartbeatResponse) { cr = r })
	h.flush()
	if cr.ErrorCode != 0 {
		t.Fatalf("static consumer member joins: %+v", cr)
	}
	h.hb("c", gen+1, nil, false)
	h.hb("c", -1, nil, false) // not the last consumer member: s1 stays
	g, _ := h.gs.Group("g")
	if g.consumer == nil {
		t.Fatalf("downgraded while static consumer member s1 is in:\n%s", g)
	}
	// Reconcile everyone: s1 heartbeats, a and b rejoin, a few rounds.
	for round := 0; round < 6; round++ {
		sm := g.consumer.members["s1"]
		owned := []int32{}
		for k := range sm.Assigned {
			owned = append(owned, k.P)
		}
		sreq := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		sreq.Version, sreq.Group, sreq.MemberID, sreq.MemberEpoch, sreq.InstanceID = 1, "g", "s1", sm.Epoch, &inst
		sreq.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: cgTopicID, Partitions: owned}}
		h.gs.ConsumerHeartbeat(ConsumerHeartbeatRequest{ConsumerGroupHeartbeatRequest: sreq}, h.topics, h.now, func(*kmsg.ConsumerGroupHeartbeatResponse) {})
		h.flush()
		for _, id := range []string{a, b} {
			m := g.consumer.members[id]
			var own []int32
			if m.State != memberUnrevoked {
				for k := range m.Assigned {
					own = append(own, k.P)
				}
			}
			jr := h.join(id, own)
			syncParts(t, h.sync(id, jr.Generation, nil))
		}
		h.checkNoDoubleOwner()
	}
	if st := g.consumer.StateName(); st != "Stable" {
		t.Fatalf("not reconciled: %s\n%s", st, h.describe())
	}
	sParts := len(g.consumer.members["s1"].Assigned)

	// A classic member with s1's instance id replaces it: a classic group.
	jreq := kmsg.NewPtrJoinGroupRequest()
	jreq.Version, jreq.Group, jreq.ProtocolType, jreq.InstanceID = 5, "g", "consumer", &inst
	jreq.SessionTimeoutMillis, jreq.RebalanceTimeoutMillis = 10000, 30000
	// It prefers a protocol the others lack: the classic group selects
	// range, and the JoinGroup must name that, or the member's SyncGroup
	// (which names it too) is refused (review 7).
	jreq.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "roundrobin", Metadata: classicMeta1(nil)}, {Name: "range", Metadata: classicMeta1(nil)}}
	var jr *kmsg.JoinGroupResponse
	h.gs.Join(JoinRequest{JoinGroupRequest: jreq}, h.now, func(r *kmsg.JoinGroupResponse) { jr = r })
	h.flush()
	g, _ = h.gs.Group("g")
	if jr == nil || jr.ErrorCode != 0 || g.consumer != nil || g.State != Stable || len(g.members) != 3 || jr.Generation != g.Generation {
		t.Fatalf("classic static member replacing the last consumer member: %+v\n%s", jr, g)
	}
	if jr.Protocol == nil || *jr.Protocol != "range" || g.Protocol != "range" {
		t.Fatalf("JoinGroup names protocol %v, the classic group selected %q", jr.Protocol, g.Protocol)
	}
	sreqSync := kmsg.NewPtrSyncGroupRequest()
	sreqSync.Version, sreqSync.Group, sreqSync.MemberID, sreqSync.Generation, sreqSync.InstanceID = 5, "g", jr.MemberID, jr.Generation, &inst
	sreqSync.ProtocolType, sreqSync.Protocol = jr.ProtocolType, jr.Protocol
	var sr *kmsg.SyncGroupResponse
	h.gs.Sync(sreqSync, h.now, func(r *kmsg.SyncGroupResponse) { sr = r })
	h.flush()
	if got := syncParts(t, sr); len(got) != sParts {
		t.Fatalf("the replacing member got %v, s1 had %d partitions", got, sParts)
	}
	if code := h.classicHB(a, g.Generation); code != nil {
		t.Fatalf("a's heartbeat after the downgrade by replacement: %v (no rebalance expected)", code)
	}

	// And back: a consumer-protocol member with that instance id
	// upgrades the group and replaces the live classic static member at
	// once, with its partitions.
	classicParts := len(decodeAssignment(g.members[jr.MemberID].Assignment, h.topics))
	sreq = kmsg.NewPtrConsumerGroupHeartbeatRequest()
	sreq.Version, sreq.Group, sreq.MemberID, sreq.MemberEpoch, sreq.InstanceID = 1, "g", "s2", 0, &inst
	sreq.RebalanceTimeoutMillis, sreq.SubscribedTopicNames, sreq.Topics = 30000, []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	h.gs.ConsumerHeartbeat(ConsumerHeartbeatRequest{ConsumerGroupHeartbeatRequest: sreq}, h.topics, h.now, func(r *kmsg.ConsumerGroupHeartbeatResponse) { cr = r })
	h.flush()
	g, _ = h.gs.Group("g")
	if cr.ErrorCode != 0 || g.consumer == nil || len(assigned(cr)) != classicParts || g.consumer.members[jr.MemberID] != nil {
		t.Fatalf("consumer static member replacing the classic one: %+v assigned %v (the classic one had %d)\n%s", cr, assigned(cr), classicParts, h.describe())
	}
	h.checkNoDoubleOwner()
}

// replayed is the group the harness's log replays to, described as
// h.describe does, or "classic" when it replays to a classic group.
func (h *cgHarness) replayed() string {
	h.t.Helper()
	r2 := NewGroups(h.gs.cfg)
	r2.Topics = h.gs.Topics
	for _, rec := range h.log {
		if err := r2.Replay(rec.Key, rec.Value, h.now); err != nil {
			h.t.Fatal(err)
		}
	}
	g, ok := r2.Group("g")
	if !ok || g.consumer == nil {
		return "classic"
	}
	return describeConsumer(g, map[[16]byte]string{cgTopicID: "t"})
}

// TestConsumerMigrationRefusedUpgrade: a consumer-protocol heartbeat that
// would upgrade a classic group but is refused (group full, or a member id
// that is a classic member's) leaves the group classic, in memory as in the
// log; a classic member's next JoinGroup is then a classic rejoin, and a
// reload gives the same group (review 1).
func TestConsumerMigrationRefusedUpgrade(t *testing.T) {
	for _, tc := range []struct {
		name string
		prep func(h *cgHarness, a string) string
		want *kerr.Error
	}{
		{"full", func(h *cgHarness, a string) string { h.gs.cfg.Consumer.MaxSize = 2; return "c" }, kerr.GroupMaxSizeReached},
		{"classic-id", func(h *cgHarness, a string) string { return a }, kerr.UnknownMemberID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, a, _, gen := classicPair(t)
			r := h.hb(tc.prep(h, a), 0, nil, true)
			if r.ErrorCode != tc.want.Code {
				t.Fatalf("heartbeat: error %d, want %v", r.ErrorCode, tc.want)
			}
			g, _ := h.gs.Group("g")
			if g.consumer != nil || len(g.members) != 2 || g.Generation != gen {
				t.Fatalf("refused upgrade changed the group in memory: consumer=%v members=%d generation %d (was %d)", g.consumer != nil, len(g.members), g.Generation, gen)
			}
			if got := h.replayed(); got != "classic" {
				t.Fatalf("log replays to a consumer group while memory is classic:\n%s", got)
			}
			if code := h.classicHB(a, gen); code != nil {
				t.Fatalf("a's classic heartbeat after the refused upgrade: %v", code)
			}
		})
	}
}

// TestConsumerMigrationUpgradeKeepsOwned: a classic group upgraded while
// its stored assignments are not what its cooperative members own (cleared
// by a rebalance that went back from CompletingRebalance, or newer than what
// a follower that has not synced yet owns) gives the consumer member only
// what nobody owns; the classic members revoke by rejoining, then it gets
// its share, and no partition ever has two owners (review 2).
func TestConsumerMigrationUpgradeKeepsOwned(t *testing.T) {
	for _, tc := range []struct {
		name string
		prep func(h *cgHarness, a, b string)
	}{
		{"cleared", func(h *cgHarness, a, b string) {
			h.join("", nil) // x: the group rebalances
			h.join(a, []int32{0, 1, 2})
			h.join(b, []int32{3, 4, 5})
			h.join("", nil) // y joins before the leader syncs: assignments cleared
		}},
		{"follower-unsynced", func(h *cgHarness, a, b string) {
			h.join("", nil) // x: pending until a and b rejoin
			h.join(a, []int32{0, 1, 2})
			jr := h.join(b, []int32{3, 4, 5})
			if jr == nil || jr.ErrorCode != 0 {
				t.Fatalf("b's rejoin: %+v", jr)
			}
			g, _ := h.gs.Group("g")
			var x string
			for id := range g.members {
				if id != a && id != b {
					x = id
				}
			}
			// The leader syncs a cooperative assignment: 2 and 5 are
			// revoked this generation; b has not synced yet.
			h.sync(a, jr.Generation, map[string][]int32{a: {0, 1}, b: {3, 4}, x: {}})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, a, b, _ := classicPair(t)
			tc.prep(h, a, b)
			hr := h.hb("c", 0, nil, true)
			if hr.ErrorCode != 0 || len(assigned(hr)) != 0 {
				t.Fatalf("consumer member's first heartbeat: error %d assigned %v, want nothing (a still owns 0-2, b 3-5)\n%s", hr.ErrorCode, assigned(hr), h.describe())
			}
			h.checkNoDoubleOwner()
			if got, want := h.replayed(), h.describe(); got != want {
				t.Fatalf("replayed:\n%s\nwant:\n%s", got, want)
			}
			// The classic members rejoin reporting what they own until
			// they are at the group's epoch.
			owned := map[string][]int32{a: {0, 1, 2}, b: {3, 4, 5}}
			g, _ := h.gs.Group("g")
			for round := 0; round < 4; round++ {
				for _, id := range []string{a, b} {
					m := g.consumer.members[id]
					if m == nil {
						continue // x and y, never synced: removed in time
					}
					jr := h.join(id, owned[id])
					if jr.ErrorCode != 0 {
						t.Fatalf("%s's join: %+v\n%s", id, jr, h.describe())
					}
					owned[id] = syncParts(t, h.sync(id, jr.Generation, nil))
					h.checkNoDoubleOwner()
				}
				hr = h.hb("c", hr.MemberEpoch, []int32{}, false)
				h.checkNoDoubleOwner()
			}
			if len(assigned(hr)) == 0 {
				t.Fatalf("consumer member never got a partition:\n%s", h.describe())
			}
			seen := map[int32]string{}
			for id, ps := range owned {
				for _, p := range ps {
					seen[p] = id
				}
			}
			for _, p := range assigned(hr) {
				if o, ok := seen[p]; ok {
					t.Fatalf("partition %d given to c while %s's last SyncGroup still has it\n%s", p, o, h.describe())
				}
			}
		})
	}
}

// TestConsumerMigrationCustomAssignorRefused: a classic group whose
// assignments carry userData (a custom assignor's) is not upgraded, as in
// Kafka 4.4: the consumer member gets GROUP_ID_NOT_FOUND with Kafka's
// message and the group stays classic (review 4).
func TestConsumerMigrationCustomAssignorRefused(t *testing.T) {
	h, a, b, gen := classicPair(t)
	h.join(a, nil)
	jr := h.join(b, nil)
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version, req.Group, req.MemberID, req.Generation = 3, "g", a, jr.Generation
	for id, ps := range map[string][]int32{a: {0, 1, 2}, b: {3, 4, 5}} {
		as := kmsg.ConsumerMemberAssignment{Version: 1, Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: "t", Partitions: ps}}, UserData: []byte("state")}
		req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: as.AppendTo(nil)})
	}
	h.gs.Sync(req, h.now, func(*kmsg.SyncGroupResponse) {})
	h.flush()

	r := h.hb("c", 0, nil, true)
	if r.ErrorCode != kerr.GroupIDNotFound.Code || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "unsupported custom assignor") {
		t.Fatalf("heartbeat: error %d %v, want GROUP_ID_NOT_FOUND (custom assignor)", r.ErrorCode, r.ErrorMessage)
	}
	g, _ := h.gs.Group("g")
	if g.consumer != nil || len(g.members) != 2 || g.Generation != gen+1 {
		t.Fatalf("group after the refused upgrade: consumer=%v members=%d generation %d", g.consumer != nil, len(g.members), g.Generation)
	}
	if got := syncParts(t, h.sync(b, jr.Generation, nil)); len(got) != 3 {
		t.Fatalf("b's classic assignment after the refused upgrade: %v", got)
	}
}

// TestConsumerMigrationDisabled: with group.consumer.migration.policy=
// disabled a classic member joining a consumer group with members gets
// INCONSISTENT_GROUP_PROTOCOL, as in Kafka 4.4; with upgrade only it may
// still join (review 5).
func TestConsumerMigrationDisabled(t *testing.T) {
	for _, tc := range []struct {
		name            string
		upgrade, downgr bool
		want            int16
	}{
		{"disabled", false, false, kerr.InconsistentGroupProtocol.Code},
		{"upgrade", true, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newCGHarness(t)
			h.gs.Topics = func() map[string]TopicMeta { return h.topics }
			h.gs.cfg.Consumer.Upgrade, h.gs.cfg.Consumer.Downgrade = tc.upgrade, tc.downgr
			h.gs.cfg.InitialRebalanceDelay = 0
			h.gs.cfg.MinSessionTimeout, h.gs.cfg.MaxSessionTimeout = time.Second, time.Hour
			if r := h.hb("c", 0, nil, true); r.ErrorCode != 0 {
				t.Fatalf("consumer member's join: %d", r.ErrorCode)
			}
			jr := h.join("", nil)
			if jr == nil || jr.ErrorCode != tc.want {
				t.Fatalf("classic JoinGroup to the consumer group: %+v, want error %d", jr, tc.want)
			}
			g, _ := h.gs.Group("g")
			if n := g.consumer.classicCount(); (n == 0) != (tc.want != 0) {
				t.Fatalf("classic members in the consumer group: %d", n)
			}
		})
	}
}

// TestConsumerGroupReloadKeepsRevoking: a member that must revoke when the
// coordinator reloads the group gets its rebalance timeout from the load,
// not none: the first tick after a reload does not remove it (found while
// fixing review 2, whose upgrade loads classic members in UNREVOKED).
func TestConsumerGroupReloadKeepsRevoking(t *testing.T) {
	h, a, b, _ := classicPair(t)
	h.join("", nil) // x: the group rebalances; cooperative a and b rejoin
	h.join(a, []int32{0, 1, 2})
	jr := h.join(b, []int32{3, 4, 5})
	// The leader gives b's partition 5 to a before b revoked it (a
	// misbehaving assignor): b's claim makes it pending at b.
	h.sync(a, jr.Generation, map[string][]int32{a: {0, 1, 2, 5}, b: {3, 4}})
	h.hb("c", 0, nil, true)
	g, _ := h.gs.Group("g")
	if m := g.consumer.members[b]; m.State != memberUnrevoked || len(m.Pending) == 0 {
		t.Fatalf("b after the upgrade:\n%s", h.describe())
	}
	r2 := NewGroups(h.gs.cfg)
	r2.Topics = h.gs.Topics
	for _, rec := range h.log {
		if err := r2.Replay(rec.Key, rec.Value, h.now); err != nil {
			t.Fatal(err)
		}
	}
	r2.Tick(h.now.Add(time.Second))
	g2, _ := r2.Group("g")
	if g2.consumer == nil || g2.consumer.members[b] == nil {
		t.Fatal("a member revoking when the group was loaded was removed at the first tick")
	}
}
