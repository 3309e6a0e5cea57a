package group

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// cgHarness drives the consumer-group state machine as the coordinator
// does, completing every write at once and keeping the records written.
type cgHarness struct {
	t      *testing.T
	gs     *Groups
	now    time.Time
	topics map[string]TopicMeta
	log    []Record
}

var cgTopicID = [16]byte{1, 2, 3}

func newCGHarness(t *testing.T, assignors ...string) *cgHarness {
	if len(assignors) == 0 {
		assignors = []string{"uniform", "range"}
	}
	gs := NewGroups(Config{Partitions: 50, MaxSize: 100, OffsetsRetention: time.Hour, MaxMetadataBytes: 4096,
		Consumer: ConsumerConfig{SessionTimeout: 45 * time.Second, HeartbeatInterval: 5 * time.Second, Assignors: assignors, MaxSize: 100}})
	return &cgHarness{t: t, gs: gs, now: time.Unix(1000, 0), topics: map[string]TopicMeta{"t": {ID: cgTopicID, Partitions: 6}}}
}

func (h *cgHarness) flush() {
	for _, w := range h.gs.TakeWrites() {
		h.log = append(h.log, w.Records...)
		w.Done(nil)
	}
}

func (h *cgHarness) hb(member string, epoch int32, owned []int32, join bool) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = 1, "g", member, epoch, -1
	if join {
		req.RebalanceTimeoutMillis, req.SubscribedTopicNames, req.Topics = 30000, []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	} else if owned != nil {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: cgTopicID, Partitions: owned}}
	}
	var got *kmsg.ConsumerGroupHeartbeatResponse
	h.gs.ConsumerHeartbeat(ConsumerHeartbeatRequest{ConsumerGroupHeartbeatRequest: req, ClientID: member, ClientHost: "/127.0.0.1"}, h.topics, h.now, func(r *kmsg.ConsumerGroupHeartbeatResponse) { got = r })
	h.flush()
	if got == nil {
		h.t.Fatalf("heartbeat of %s not answered", member)
	}
	return got
}

func assigned(r *kmsg.ConsumerGroupHeartbeatResponse) []int32 {
	if r.Assignment == nil {
		return nil
	}
	out := []int32{}
	for _, t := range r.Assignment.Topics {
		out = append(out, t.Partitions...)
	}
	return out
}

func (h *cgHarness) describe() string {
	g, _ := h.gs.Group("g")
	return describeConsumer(g, map[[16]byte]string{cgTopicID: "t"})
}

// checkNoDoubleOwner fails when a partition is assigned to, or pending
// revocation from, two members at once.
func (h *cgHarness) checkNoDoubleOwner() {
	h.t.Helper()
	g, _ := h.gs.Group("g")
	seen := map[tpKey]string{}
	for id, m := range g.consumer.members {
		for _, s := range []tpSet{m.Assigned, m.Pending} {
			for k := range s {
				if o, ok := seen[k]; ok && o != id {
					h.t.Fatalf("partition %d owned by %s and %s:\n%s", k.P, o, id, h.describe())
				}
				seen[k] = id
			}
		}
	}
}

// TestConsumerGroupRevokeBeforeAssign: a second member gets partitions only
// after the first reported them revoked; epochs advance as Kafka's; the
// state survives a replay of the records written.
func TestConsumerGroupRevokeBeforeAssign(t *testing.T) {
	h := newCGHarness(t)
	r := h.hb("a", 0, nil, true)
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || len(assigned(r)) != 6 {
		t.Fatalf("a joins: error %d epoch %d assigned %v; want epoch 1 and all 6", r.ErrorCode, r.MemberEpoch, assigned(r))
	}
	r = h.hb("b", 0, nil, true)
	if r.MemberEpoch != 2 || len(assigned(r)) != 0 {
		t.Fatalf("b joins: epoch %d assigned %v; want epoch 2 and nothing while a still owns all", r.MemberEpoch, assigned(r))
	}
	h.checkNoDoubleOwner()
	// a must revoke 3 and keeps its epoch until it says it did.
	r = h.hb("a", 1, nil, false)
	if r.MemberEpoch != 1 || len(assigned(r)) != 3 {
		t.Fatalf("a told to revoke: epoch %d assigned %v; want epoch 1 and 3 kept", r.MemberEpoch, assigned(r))
	}
	kept := assigned(r)
	h.checkNoDoubleOwner()
	if r = h.hb("b", 2, []int32{}, false); len(assigned(r)) != 0 && r.Assignment != nil {
		t.Fatalf("b before a revoked: assigned %v, want nothing", assigned(r))
	}
	// A commit of a's old epoch is valid while it revokes; a newer one not.
	g, _ := h.gs.Group("g")
	if code := g.checkConsumerCommit(Commit{Version: 9, Group: "g", MemberID: "a", Generation: 1}, false); code != nil {
		t.Fatalf("commit of a at its epoch: %v", code)
	}
	if code := g.checkConsumerCommit(Commit{Version: 9, Group: "g", MemberID: "a", Generation: 5}, false); code != kerr.StaleMemberEpoch {
		t.Fatalf("commit of a at a future epoch: %v, want STALE_MEMBER_EPOCH", code)
	}
	if code := g.checkConsumerCommit(Commit{Version: 8, Group: "g", MemberID: "a", Generation: 1}, false); code != kerr.UnsupportedVersion {
		t.Fatalf("OffsetCommit v8 from a consumer-protocol member: %v, want UNSUPPORTED_VERSION", code)
	}
	r = h.hb("a", 1, kept, false)
	if r.MemberEpoch != 2 {
		t.Fatalf("a after revoking: epoch %d, want 2", r.MemberEpoch)
	}
	r = h.hb("b", 2, []int32{}, false)
	if len(assigned(r)) != 3 {
		t.Fatalf("b after a revoked: assigned %v, want 3", assigned(r))
	}
	h.checkNoDoubleOwner()
	if g, _ := h.gs.Group("g"); g.consumer.StateName() != "Stable" {
		t.Fatalf("state %s, want Stable:\n%s", g.consumer.StateName(), h.describe())
	}
	// An old epoch without owned partitions is fenced.
	if r = h.hb("a", 1, nil, false); r.ErrorCode != kerr.FencedMemberEpoch.Code {
		t.Fatalf("a with epoch 1 after 2: error %d, want FENCED_MEMBER_EPOCH", r.ErrorCode)
	}

	// Replaying the records written gives the same group.
	want := h.describe()
	re := newCGHarness(t)
	for _, rec := range h.log {
		if err := re.gs.Replay(rec.Key, rec.Value, re.now); err != nil {
			t.Fatal(err)
		}
	}
	if got := re.describe(); got != want {
		t.Fatalf("replayed group:\n%s\nwant:\n%s", got, want)
	}

	// b leaves; a gets everything; the session timeout removes a.
	if r = h.hb("b", -1, nil, false); r.ErrorCode != 0 || r.MemberEpoch != -1 {
		t.Fatalf("b leaves: error %d epoch %d", r.ErrorCode, r.MemberEpoch)
	}
	if r = h.hb("a", 2, nil, false); len(assigned(r)) != 6 || r.MemberEpoch != 3 {
		t.Fatalf("a after b left: epoch %d assigned %v, want epoch 3 and all 6", r.MemberEpoch, assigned(r))
	}
	h.now = h.now.Add(46 * time.Second)
	h.gs.Tick(h.now)
	h.flush()
	g, _ = h.gs.Group("g")
	if g.consumer.StateName() != "Empty" || g.consumer.Epoch != 4 {
		t.Fatalf("after a's session timed out:\n%s\nwant Empty with epoch 4", h.describe())
	}
	// The empty group, its epoch and nothing else survive a replay; a
	// DeleteGroups removes it all.
	re = newCGHarness(t)
	for _, rec := range h.log {
		re.gs.Replay(rec.Key, rec.Value, re.now)
	}
	if got, want := re.describe(), h.describe(); got != want {
		t.Fatalf("replayed empty group:\n%s\nwant:\n%s", got, want)
	}
	if code := h.gs.DeleteGroup("g", h.now, func(error) {}); code != nil {
		t.Fatal(code)
	}
	h.flush()
	re = newCGHarness(t)
	for _, rec := range h.log {
		re.gs.Replay(rec.Key, rec.Value, re.now)
	}
	if g, ok := re.gs.Group("g"); ok {
		t.Fatalf("deleted group still there after a replay: %v", g)
	}
}

// TestConsumerGroupAssignors: uniform spreads and stays sticky when a
// member joins; range gives contiguous ranges; an assignor the broker does
// not offer is UNSUPPORTED_ASSIGNOR; a bad request is INVALID_REQUEST.
func TestConsumerGroupAssignors(t *testing.T) {
	subs := map[string][]string{"a": {"t"}, "b": {"t"}, "c": {"t"}}
	topics := map[string]TopicMeta{"t": {ID: cgTopicID, Partitions: 7}}
	two := assignUniform([]string{"a", "b"}, subs, topics, nil)
	three := assignUniform([]string{"a", "b", "c"}, subs, topics, two)
	moved := 0
	for _, id := range []string{"a", "b"} {
		for k := range three[id] {
			if _, ok := two[id][k]; !ok {
				moved++
			}
		}
	}
	if len(three["a"])+len(three["b"])+len(three["c"]) != 7 || len(three["c"]) < 2 || moved != 0 {
		t.Fatalf("uniform after c joined: %v (from %v), want 7 spread 3/2/2 with only c gaining", three, two)
	}
	members := map[string]*cMember{"a": {ID: "a"}, "b": {ID: "b"}, "c": {ID: "c"}}
	rng := assignRange([]string{"a", "b", "c"}, subs, topics, members)
	for id, want := range map[string][]int32{"a": {0, 1, 2}, "b": {3, 4}, "c": {5, 6}} {
		got := rng[id]
		if len(got) != len(want) {
			t.Fatalf("range: %s has %v, want %v", id, got, want)
		}
		for _, p := range want {
			if _, ok := got[tpKey{cgTopicID, p}]; !ok {
				t.Fatalf("range: %s has %v, want %v", id, got, want)
			}
		}
	}

	h := newCGHarness(t, "range")
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.RebalanceTimeoutMillis, req.SubscribedTopicNames = 1, "g", "m", 1000, []string{"t"}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	uniform := "uniform"
	req.ServerAssignor = &uniform
	var got *kmsg.ConsumerGroupHeartbeatResponse
	h.gs.ConsumerHeartbeat(ConsumerHeartbeatRequest{ConsumerGroupHeartbeatRequest: req}, h.topics, h.now, func(r *kmsg.ConsumerGroupHeartbeatResponse) { got = r })
	if got.ErrorCode != kerr.UnsupportedAssignor.Code {
		t.Fatalf("assignor uniform on a broker offering range only: error %d", got.ErrorCode)
	}
	req.ServerAssignor, req.Topics = nil, nil
	h.gs.ConsumerHeartbeat(ConsumerHeartbeatRequest{ConsumerGroupHeartbeatRequest: req}, h.topics, h.now, func(r *kmsg.ConsumerGroupHeartbeatResponse) { got = r })
	if got.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("join without owned partitions: error %d, want INVALID_REQUEST", got.ErrorCode)
	}
}

// TestConsumerGroupExpires: an empty consumer group without offsets is
// deleted after offsets.retention.minutes, with tombstones for all its
// records, so that a replay does not bring it back.
func TestConsumerGroupExpires(t *testing.T) {
	h := newCGHarness(t)
	h.hb("a", 0, nil, true)
	h.hb("a", 1, nil, false)
	h.hb("a", -1, nil, false)
	if g, ok := h.gs.Group("g"); !ok || g.consumer.StateName() != "Empty" {
		t.Fatalf("after a left: %v", h.describe())
	}
	h.now = h.now.Add(2 * time.Hour)
	h.gs.ExpireOffsets(h.now)
	h.flush()
	if _, ok := h.gs.Group("g"); ok {
		t.Fatalf("empty group still there after the retention: %s", h.describe())
	}
	re := newCGHarness(t)
	for _, rec := range h.log {
		if err := re.gs.Replay(rec.Key, rec.Value, re.now); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := re.gs.Group("g"); ok {
		t.Fatalf("expired group back after a replay: %s", re.describe())
	}
}

// FuzzReplayConsumer feeds consumer group records, from a real run and
// mutated, to Replay: it may refuse them, never panic, and a group it
// builds can still be described and heartbeated.
func FuzzReplayConsumer(f *testing.F) {
	h := newCGHarness(&testing.T{})
	h.hb("a", 0, nil, true)
	h.hb("b", 0, nil, true)
	h.hb("a", 1, nil, false)
	for _, r := range h.log {
		f.Add(r.Key, r.Value)
	}
	f.Add([]byte{0, 8, 0, 1, 'g', 0, 1, 'm'}, []byte{0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, key, value []byte) {
		gs := NewGroups(Config{Partitions: 50, Consumer: ConsumerConfig{SessionTimeout: time.Second, Assignors: []string{"uniform"}}})
		now := time.Unix(1000, 0)
		if gs.Replay(key, value, now) != nil {
			return
		}
		for _, g := range gs.All() {
			if g.consumer != nil {
				describeConsumer(g, nil)
				g.consumer.StateName()
			}
		}
		gs.TickConsumer(now.Add(time.Hour))
	})
}

// TestConsumerGroupStaticRejoinReplay: a static member that leaves with
// epoch -2 and comes back, under its old id or as a new member with the
// same instance id, keeps its epoch and partitions, and a coordinator that
// reloads the records written sees the same (it used to see the returning
// member at epoch -2, or the new one at epoch 0 with nothing).
func TestConsumerGroupStaticRejoinReplay(t *testing.T) {
	h := newCGHarness(t)
	static := func(member string, epoch int32) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		inst := "i"
		req.Version, req.Group, req.MemberID, req.MemberEpoch, req.InstanceID, req.RebalanceTimeoutMillis = 1, "g", member, epoch, &inst, -1
		if epoch == 0 {
			req.RebalanceTimeoutMillis, req.SubscribedTopicNames, req.Topics = 30000, []string{"t"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		var got *kmsg.ConsumerGroupHeartbeatResponse
		h.gs.ConsumerHeartbeat(ConsumerHeartbeatRequest{ConsumerGroupHeartbeatRequest: req}, h.topics, h.now, func(r *kmsg.ConsumerGroupHeartbeatResponse) { got = r })
		h.flush()
		if got == nil || got.ErrorCode != 0 {
			t.Fatalf("heartbeat of %s at %d: %+v", member, epoch, got)
		}
		return got
	}
	replayed := func(step string) {
		t.Helper()
		re := newCGHarness(t)
		for _, rec := range h.log {
			if err := re.gs.Replay(rec.Key, rec.Value, re.now); err != nil {
				t.Fatal(err)
			}
		}
		if got, want := re.describe(), h.describe(); got != want {
			t.Fatalf("%s, replayed:\n%s\nwant:\n%s", step, got, want)
		}
	}
	if r := static("a", 0); r.MemberEpoch != 1 || len(assigned(r)) != 6 {
		t.Fatalf("a joins: epoch %d assigned %v", r.MemberEpoch, assigned(r))
	}
	static("a", -2)
	if r := static("a", 0); r.MemberEpoch != 1 || len(assigned(r)) != 6 {
		t.Fatalf("a back under its id: epoch %d assigned %v, want 1 and all 6", r.MemberEpoch, assigned(r))
	}
	replayed("a back under its id")
	static("a", -2)
	if r := static("a2", 0); r.MemberEpoch != 1 || len(assigned(r)) != 6 {
		t.Fatalf("a2 in a's place: epoch %d assigned %v, want 1 and all 6", r.MemberEpoch, assigned(r))
	}
	replayed("a2 in a's place")
}

// TestConsumerGroupRegexLimits: a regex subscription is compiled once per
// group and matched over the topics once per change of the topics, not on
// every heartbeat of every member; a pattern too long or too big to
// compile cheaply is INVALID_REGULAR_EXPRESSION with a message; a member
// resolves its regex only to the topics it may DESCRIBE.
func TestConsumerGroupRegexLimits(t *testing.T) {
	h := newCGHarness(t)
	h.topics["t-secret"] = TopicMeta{ID: [16]byte{9}, Partitions: 2}
	hb := func(member string, epoch int32, re string, describable func(string) bool) *kmsg.ConsumerGroupHeartbeatResponse {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = 1, "g", member, epoch, -1
		if epoch == 0 {
			req.RebalanceTimeoutMillis, req.SubscribedTopicRegex, req.Topics = 30000, &re, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		}
		var got *kmsg.ConsumerGroupHeartbeatResponse
		h.gs.ConsumerHeartbeat(ConsumerHeartbeatRequest{ConsumerGroupHeartbeatRequest: req, Describable: describable}, h.topics, h.now, func(r *kmsg.ConsumerGroupHeartbeatResponse) { got = r })
		h.flush()
		return got
	}
	for _, re := range []string{strings.Repeat("a", 1025), strings.Repeat("x{1000}", 20), "(("} {
		if r := hb("z", 0, re, nil); r.ErrorCode != kerr.InvalidRegularExpression.Code || r.ErrorMessage == nil {
			t.Fatalf("regex of %d bytes: error %d, want INVALID_REGULAR_EXPRESSION with a message", len(re), r.ErrorCode)
		}
	}
	noSecret := func(topic string) bool { return topic != "t-secret" }
	if r := hb("a", 0, "t.*", nil); r.ErrorCode != 0 {
		t.Fatalf("a joins: %+v", r)
	}
	if r := hb("b", 0, "t.*", noSecret); r.ErrorCode != 0 {
		t.Fatalf("b joins: %+v", r)
	}
	g, _ := h.gs.Group("g")
	cg := g.consumer
	for i := 0; i < 5; i++ {
		if r := hb("a", cg.members["a"].Epoch, "", nil); r.ErrorCode != 0 {
			t.Fatalf("a's heartbeat: %+v", r)
		}
		if r := hb("b", cg.members["b"].Epoch, "", noSecret); r.ErrorCode != 0 {
			t.Fatalf("b's heartbeat: %+v", r)
		}
	}
	p := cg.patterns["t.*"]
	if len(cg.patterns) != 1 || p == nil || cg.members["a"].resolvedFrom != p || cg.members["b"].resolvedFrom != p || p.runs != 1 {
		t.Fatalf("patterns %v, a's %p, b's %p: want one, shared, matched once", cg.patterns, cg.members["a"].resolvedFrom, cg.members["b"].resolvedFrom)
	}
	for k := range cg.target["b"] {
		if k.ID == h.topics["t-secret"].ID {
			t.Fatalf("b was given t-secret, which it may not DESCRIBE: %v", cg.target["b"])
		}
	}
	if !slices.Equal(cg.members["a"].resolved, []string{"t", "t-secret"}) || !slices.Equal(cg.members["b"].resolved, []string{"t"}) {
		t.Fatalf("resolved: a %v, b %v", cg.members["a"].resolved, cg.members["b"].resolved)
	}
	// A new topic is a new topics map: matched once more, and assigned.
	next := maps.Clone(h.topics)
	next["t-new"] = TopicMeta{ID: [16]byte{7}, Partitions: 1}
	h.topics = next
	epoch := cg.Epoch
	hb("a", cg.members["a"].Epoch, "", nil)
	if p.runs != 2 || cg.Epoch != epoch+1 || !slices.Contains(cg.members["a"].resolved, "t-new") {
		t.Fatalf("after t-new was created: runs %d, epoch %d (was %d), a resolved %v", p.runs, cg.Epoch, epoch, cg.members["a"].resolved)
	}
}

// TestConsumerGroupReplayKeepsEpochs: the subscribed topics' hash (key 3's
// MetadataHash) and the partitions' assignment epochs (key 8's
// AssignmentEpochs) are persisted, so a coordinator that loads the group
// starts no new group epoch at the members' next heartbeats, and accepts
// a commit of an older epoch for a partition held since then, as the old
// coordinator did.
func TestConsumerGroupReplayKeepsEpochs(t *testing.T) {
	h := newCGHarness(t)
	h.hb("a", 0, nil, true)
	h.hb("b", 0, nil, true)
	kept := assigned(h.hb("a", 1, nil, false))
	h.hb("a", 1, kept, false)
	h.hb("b", 2, []int32{}, false)
	g, _ := h.gs.Group("g")
	if g.consumer.StateName() != "Stable" || g.consumer.Epoch != 2 {
		t.Fatalf("before the load:\n%s", h.describe())
	}
	// a has held kept since epoch 1: a commit at epoch 1 is valid for them.
	commitAt1 := func(gs *Groups) bool {
		gg, _ := gs.Group("g")
		m := gg.consumer.members["a"]
		for _, p := range kept {
			if at, ok := m.assignedAt[tpKey{cgTopicID, p}]; !ok || at > 1 {
				return false
			}
		}
		return true
	}
	if !commitAt1(h.gs) {
		t.Fatalf("a's partitions not held since epoch 1 before the load")
	}

	re := newCGHarness(t)
	for _, rec := range h.log {
		if err := re.gs.Replay(rec.Key, rec.Value, re.now); err != nil {
			t.Fatal(err)
		}
	}
	if !commitAt1(re.gs) {
		g2, _ := re.gs.Group("g")
		t.Fatalf("after the load, a's assignment epochs: %v, want %v held since 1", g2.consumer.members["a"].assignedAt, kept)
	}
	for _, m := range []string{"a", "b"} {
		if r := re.hb(m, 2, nil, false); r.ErrorCode != 0 || r.MemberEpoch != 2 {
			t.Fatalf("%s after the load: error %d epoch %d", m, r.ErrorCode, r.MemberEpoch)
		}
	}
	if g2, _ := re.gs.Group("g"); g2.consumer.Epoch != 2 {
		t.Fatalf("group epoch after the load and a heartbeat of each member: %d, want 2 (no change of topics or members)\n%s", g2.consumer.Epoch, re.describe())
	}
	// A change of the topics still is one.
	re.topics = map[string]TopicMeta{"t": {ID: cgTopicID, Partitions: 8}}
	re.hb("a", 2, nil, false)
	if g2, _ := re.gs.Group("g"); g2.consumer.Epoch != 3 {
		t.Fatalf("group epoch after the topic grew: %d, want 3", g2.consumer.Epoch)
	}
}
