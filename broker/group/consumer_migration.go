package group

import (
	"slices"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Online migration between the classic and the consumer protocol
// (KIP-848's upgrade path), as Kafka's GroupMetadataManager does it
// (convertToConsumerGroup, classicGroupJoinToConsumerGroup,
// convertToClassicGroup), under group.consumer.migration.policy:
//
//   - Upgrade. A ConsumerGroupHeartbeat for a classic group with members
//     (protocol type "consumer") converts it: each classic member becomes
//     a member of the consumer group at the classic generation, owning and
//     targeted at what its last SyncGroup gave it. The joining member then
//     bumps the group epoch as any new member does.
//   - Classic members of a consumer group keep speaking JoinGroup,
//     SyncGroup and Heartbeat. A JoinGroup is the classic form of a full
//     heartbeat: the subscription and the owned partitions come from the
//     embedded ConsumerProtocolSubscription, the member is reconciled at
//     once, and the answer (no leader, no member list) carries the
//     member's epoch as the generation; SyncGroup then returns what the
//     member is assigned now. A Heartbeat answers REBALANCE_IN_PROGRESS
//     while the member is behind the group epoch, must revoke, or may now
//     take a partition another member released: the client rejoins, and
//     its next JoinGroup reports what it revoked. So the consumer group's
//     rule holds for both kinds of member: a partition is given only once
//     its previous owner reported it gone.
//   - Downgrade. When the last consumer-protocol member leaves (or is
//     removed) and classic members remain, the group becomes a classic
//     group at the group epoch, each member's assignment its target, and a
//     rebalance starts at once.
//
// A classic member told to rejoin must do so, and one that joined must
// sync, within its rebalance timeout, or it is removed (Kafka's join and
// sync timeouts).

// classicMeta is what a classic-protocol member of a consumer group joined
// with: Kafka's ClassicMemberMetadata, persisted in its member record.
type classicMeta struct {
	SessionTimeout time.Duration
	Protocols      []kmsg.JoinGroupRequestProtocol

	// The member must send its JoinGroup (told to rejoin) or its
	// SyncGroup (after a JoinGroup) by then, or it is removed (Kafka's
	// consumer group join and sync timeouts: its rebalance timeout).
	// Zero when nothing is awaited; not persisted.
	joinBy, syncBy time.Time
}

// consumerProtocolType is the protocol type of the classic consumers, the
// only one a consumer group can take in.
const consumerProtocolType = "consumer"

func (cg *consumerGroup) classicCount() int {
	n := 0
	for _, m := range cg.members {
		if m.Classic != nil {
			n++
		}
	}
	return n
}

// supportsClassic is whether a classic member with these protocols may
// join: one of them must be supported by every classic member already in.
func (cg *consumerGroup) supportsClassic(protocolType string, ps []kmsg.JoinGroupRequestProtocol) bool {
	if protocolType != consumerProtocolType || len(ps) == 0 {
		return false
	}
	for _, p := range ps {
		all := true
		for _, m := range cg.members {
			if m.Classic != nil && !slices.ContainsFunc(m.Classic.Protocols, func(q kmsg.JoinGroupRequestProtocol) bool { return q.Name == p.Name }) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// canUpgrade is Kafka's validateOnlineUpgrade, and its refusal of a group
// whose embedded consumer protocol does not decode.
func (gs *Groups) canUpgrade(g *Group) bool {
	if !gs.cfg.Consumer.Upgrade || g.ProtocolType != consumerProtocolType || len(g.members) > gs.cfg.Consumer.MaxSize {
		return false
	}
	for _, m := range g.members {
		if _, ok := decodeSubscription(classicSubscription(m, g.Protocol)); !ok {
			return false
		}
		var a kmsg.ConsumerMemberAssignment
		if len(m.Assignment) > 0 && a.ReadFrom(m.Assignment) != nil {
			return false
		}
	}
	return true
}

// customAssignorData is whether a member's classic assignment carries
// userData, which only a custom assignor writes and which the consumer
// protocol has no place for: Kafka 4.4 refuses such an upgrade
// (ConsumerGroup.fromClassicGroup) rather than lose it, and so do we.
func (gs *Groups) customAssignorData(g *Group) bool {
	for _, m := range g.members {
		var a kmsg.ConsumerMemberAssignment
		if len(m.Assignment) > 0 && a.ReadFrom(m.Assignment) == nil && len(a.UserData) > 0 {
			return true
		}
	}
	return false
}

// classicSubscription is m's metadata for the group's protocol, or its
// first when the group has none chosen yet.
func classicSubscription(m *Member, protocol string) []byte {
	if meta := m.metadata(protocol); meta != nil {
		return meta
	}
	if len(m.Protocols) > 0 {
		return m.Protocols[0].Metadata
	}
	return nil
}

// topicIDs maps topic names to ids among topics.
func topicIDs(topics map[string]TopicMeta, names []kmsg.ConsumerMemberAssignmentTopic) tpSet {
	out := tpSet{}
	for _, t := range names {
		tm, ok := topics[t.Topic]
		if !ok {
			continue
		}
		for _, p := range t.Partitions {
			out[tpKey{tm.ID, p}] = struct{}{}
		}
	}
	return out
}

func decodeAssignment(b []byte, topics map[string]TopicMeta) tpSet {
	var a kmsg.ConsumerMemberAssignment
	if len(b) == 0 || a.ReadFrom(b) != nil {
		return tpSet{}
	}
	return topicIDs(topics, a.Topics)
}

// encodeAssignment is a ConsumerProtocolAssignment of s in the version of
// the member's subscription metadata (as Kafka answers in the version the
// member speaks).
func encodeAssignment(s tpSet, metadata []byte, topics map[string]TopicMeta) []byte {
	names := make(map[[16]byte]string, len(topics))
	for n, t := range topics {
		names[t.ID] = n
	}
	a := kmsg.ConsumerMemberAssignment{Version: 0}
	if len(metadata) >= 2 {
		a.Version = min(max(int16(metadata[0])<<8|int16(metadata[1]), 0), 3)
	}
	for _, t := range s.byTopic() {
		if n, ok := names[t.id]; ok {
			a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: n, Partitions: t.parts})
		}
	}
	sort.Slice(a.Topics, func(i, j int) bool { return a.Topics[i].Topic < a.Topics[j].Topic })
	return a.AppendTo(nil)
}

func decodeSubscription(b []byte) (kmsg.ConsumerMemberMetadata, bool) {
	var s kmsg.ConsumerMemberMetadata
	if err := s.ReadFrom(b); err != nil {
		return s, false
	}
	return s, true
}

// upgrade converts a classic group with members into a consumer group and
// returns the records that say so (Kafka's convertToConsumerGroup).
func (gs *Groups) upgrade(g *Group, topics map[string]TopicMeta, now time.Time) []Record {
	// A rebalance in progress ends here: the members rejoin the consumer
	// group.
	for _, m := range g.members {
		if m.joinReply != nil {
			m.joinReply(joinError(m.joinVersion, kerr.RebalanceInProgress, m.ID))
			m.joinReply = nil
		}
		if m.syncReply != nil {
			m.syncReply(&kmsg.SyncGroupResponse{Version: m.syncVersion, ErrorCode: kerr.RebalanceInProgress.Code})
			m.syncReply = nil
		}
		m.awaitingJoin = false
	}
	out := []Record{{Key: groupKey(g.ID)}}
	gen, protocol, members := g.Generation, g.Protocol, g.Members()
	g.members, g.order, g.static, g.pending = map[string]*Member{}, nil, map[string]string{}, map[string]time.Time{}
	g.Leader, g.Protocol = "", ""
	g.consumer = nil
	cg := g.consumerState()
	cg.Assignor = gs.cfg.Consumer.Assignors[0]
	cg.Epoch, cg.AssignmentEpoch = gen, gen
	assigned, pending, target := classicOwnership(members, protocol, topics)
	for _, cm := range members {
		sub, _ := decodeSubscription(classicSubscription(cm, protocol)) // canUpgrade checked it
		m := cg.member(cm.ID, now)
		m.InstanceID, m.RackID = cm.InstanceID, sub.Rack
		m.ClientID, m.ClientHost = cm.ClientID, cm.ClientHost
		m.Topics = slices.Compact(slices.Sorted(slices.Values(sub.Topics)))
		m.RebalanceTimeout = int32(cm.RebalanceTimeout.Milliseconds())
		m.Classic = &classicMeta{SessionTimeout: cm.SessionTimeout, Protocols: cm.Protocols}
		m.Epoch, m.PrevEpoch, m.State = gen, gen, memberStable
		m.lastSeen = now
		cg.target[m.ID] = target[m.ID]
		cg.setOwned(m, assigned[m.ID], pending[m.ID])
		switch {
		case len(pending[m.ID]) > 0:
			m.State = memberUnrevoked
			m.revokeDeadline = now.Add(m.rebalanceTimeout())
		case len(target[m.ID]) > len(assigned[m.ID]):
			m.State = memberUnreleased
		}
		if m.InstanceID != nil {
			cg.static[*m.InstanceID] = m.ID
		}
	}
	// A partition held by one member and still claimed by another is in
	// the claimer's Pending; its owner is the holder of Assigned when
	// there is one, so a claimer's revocation does not free it.
	for _, id := range cg.memberIDs() {
		for k := range cg.members[id].Assigned {
			cg.owners[k] = id
		}
	}
	for _, id := range cg.memberIDs() {
		out = append(out, Record{Key: cgKey(cgMemberKey, g.ID, id, true), Value: cg.members[id].metadataValue()})
	}
	cg.topicsHash = hashSig(cg.signature(topics))
	out = append(out, cg.epochRecord(g.ID, topics))
	for _, id := range cg.memberIDs() {
		out = append(out, Record{Key: cgKey(cgTargetMemberKey, g.ID, id, true), Value: targetValue(cg.target[id])})
	}
	out = append(out, Record{Key: cgKey(cgTargetMetaKey, g.ID, "", false), Value: epochValue(cg.AssignmentEpoch)})
	for _, id := range cg.memberIDs() {
		out = append(out, Record{Key: cgKey(cgCurrentAssignKey, g.ID, id, true), Value: cg.members[id].currentValue()})
	}
	g.refreshConsumerState(now)
	return out
}

// classicOwnership is what each classic member owns, must still revoke
// and is targeted at when its group is upgraded. The stored assignment
// alone is not what the clients own: a rebalance that went back from
// CompletingRebalance cleared every assignment, and a leader's SyncGroup
// stores new ones before the followers (cooperative clients) have revoked
// what they lose. So each member's OwnedPartitions from its last JoinGroup
// counts too: a partition claimed only by the member holding it, or by
// one member when nobody holds it, is that member's (assigned and
// targeted); a partition another member holds or owns is in the
// claimer's Pending, so nobody is given it before the claimer's next
// JoinGroup reports it gone. Overstating ownership only delays an
// assignment; understating it gives a partition to two members. Kafka 4.4
// takes the stored assignment only.
func classicOwnership(members []*Member, protocol string, topics map[string]TopicMeta) (assigned, pending, target map[string]tpSet) {
	assigned, pending, target = map[string]tpSet{}, map[string]tpSet{}, map[string]tpSet{}
	holder := map[tpKey]string{}
	claimers := map[tpKey][]string{}
	for _, cm := range members {
		for k := range decodeAssignment(cm.Assignment, topics) {
			holder[k] = cm.ID
		}
	}
	for _, cm := range members {
		assigned[cm.ID], pending[cm.ID], target[cm.ID] = tpSet{}, tpSet{}, tpSet{}
		sub, _ := decodeSubscription(classicSubscription(cm, protocol))
		var owned []kmsg.ConsumerMemberAssignmentTopic
		for _, o := range sub.OwnedPartitions {
			owned = append(owned, kmsg.ConsumerMemberAssignmentTopic{Topic: o.Topic, Partitions: o.Partitions})
		}
		for k := range topicIDs(topics, owned) {
			claimers[k] = append(claimers[k], cm.ID)
		}
	}
	for k, h := range holder {
		if c := claimers[k]; len(c) == 0 || slices.Contains(c, h) {
			assigned[h][k] = struct{}{}
		}
		target[h][k] = struct{}{}
	}
	for k, c := range claimers {
		slices.Sort(c)
		owner, held := holder[k]
		if !held {
			owner = c[0]
			assigned[owner][k] = struct{}{}
			target[owner][k] = struct{}{}
		} else if !slices.Contains(c, owner) {
			owner = ""
		}
		for _, id := range c {
			if id != owner {
				pending[id][k] = struct{}{}
			}
		}
	}
	return assigned, pending, target
}

// downgradeOnLeave is Kafka's validateOnlineDowngradeWithFencedMember:
// whether removing leaving leaves only classic members, which then form a
// classic group.
func (gs *Groups) downgradeOnLeave(g *Group, leaving *cMember) bool {
	cg := g.consumer
	n := len(cg.members) - 1
	return leaving.Classic == nil && n >= 1 && cg.classicCount() == n &&
		gs.cfg.Consumer.Downgrade && n <= gs.cfg.MaxSize
}

// downgrade turns a consumer group whose member leaving was its last
// consumer-protocol member into a classic group and starts a rebalance
// (Kafka's convertToClassicGroup); it returns the records.
func (gs *Groups) downgrade(g *Group, leaving *cMember, topics map[string]TopicMeta, now time.Time) []Record {
	out := gs.toClassic(g, leaving.ID, topics, now)
	gs.prepareRebalance(g, now)
	return out
}

// toClassic makes g a Stable classic group of its classic members but
// skip, each assigned its target; it returns the records.
func (gs *Groups) toClassic(g *Group, skip string, topics map[string]TopicMeta, now time.Time) []Record {
	cg := g.consumer
	out := cg.tombstones(g.ID)
	g.consumer = nil
	g.ProtocolType, g.Generation = consumerProtocolType, cg.Epoch
	g.members, g.order, g.static = map[string]*Member{}, nil, map[string]string{}
	for _, id := range cg.memberIDs() {
		m := cg.members[id]
		if id == skip || m.Classic == nil {
			continue
		}
		cm := &Member{ID: id, InstanceID: m.InstanceID, ClientID: m.ClientID, ClientHost: m.ClientHost,
			SessionTimeout: m.Classic.SessionTimeout, RebalanceTimeout: time.Duration(m.RebalanceTimeout) * time.Millisecond,
			ProtocolType: consumerProtocolType, Protocols: m.Classic.Protocols, lastSeen: now}
		g.members[id] = cm
		g.order = append(g.order, id)
		if cm.InstanceID != nil {
			g.static[*cm.InstanceID] = id
		}
	}
	g.Leader = g.order[0]
	g.Protocol = g.selectProtocol()
	for _, cm := range g.Members() {
		cm.Assignment = encodeAssignment(cg.target[cm.ID], cm.metadata(g.Protocol), topics)
	}
	g.setState(Stable, now)
	return append(out, Record{Key: groupKey(g.ID), Value: g.metadataValue(now)})
}

// classicJoinConsumer is a JoinGroup to a consumer group with members
// (Kafka's classicGroupJoinToConsumerGroup).
func (gs *Groups) classicJoinConsumer(g *Group, req JoinRequest, now time.Time, reply func(*kmsg.JoinGroupResponse)) {
	cg := g.consumer
	topics := gs.topicsNow()
	fail := func(code *kerr.Error, id string) { reply(joinError(req.Version, code, id)) }
	if !gs.cfg.Consumer.Upgrade && !gs.cfg.Consumer.Downgrade {
		// migration.policy=disabled keeps the protocols apart, as
		// Kafka 4.4's throwIfClassicMemberCannotJoinConsumerGroup.
		fail(kerr.InconsistentGroupProtocol, req.MemberID)
		return
	}
	memberID := req.MemberID
	unknown := memberID == ""
	if unknown {
		memberID = gs.NewMemberID(req.ClientID)
	}
	if _, known := cg.members[memberID]; !known && len(cg.members) >= gs.cfg.Consumer.MaxSize {
		fail(kerr.GroupMaxSizeReached, req.MemberID)
		return
	}
	if !cg.supportsClassic(req.ProtocolType, req.Protocols) {
		fail(kerr.InconsistentGroupProtocol, req.MemberID)
		return
	}
	// The subscription of the first protocol (all carry the same) is
	// what the member is: one that does not decode is refused here
	// (Kafka fails the request with an unknown server error).
	sub, ok := decodeSubscription(req.Protocols[0].Metadata)
	if !ok {
		fail(kerr.InconsistentGroupProtocol, req.MemberID)
		return
	}
	if unknown && req.InstanceID == nil && req.Version >= 4 {
		// KIP-394, as for a classic group: the member learns its id
		// and joins again with it.
		fail(kerr.MemberIDRequired, memberID)
		return
	}
	var out []Record
	m, known := cg.members[memberID]
	bump := false
	replacedConsumer := false // a consumer-protocol static member replaced
	switch {
	case req.InstanceID != nil && cg.static[*req.InstanceID] != "" && cg.static[*req.InstanceID] != memberID:
		old := cg.members[cg.static[*req.InstanceID]]
		if !unknown {
			fail(kerr.FencedInstanceID, req.MemberID)
			return
		}
		// A static member restarted: the new member takes the old
		// one's place, epoch and partitions (KIP-345), even from a live
		// consumer-protocol member (a static member downgraded by a
		// restart), as in Kafka.
		replacedConsumer = old.Classic == nil
		m = cg.member(memberID, now)
		m.Epoch, m.PrevEpoch, m.State = old.Epoch, old.PrevEpoch, old.State
		if m.Epoch == -2 {
			m.Epoch = old.PrevEpoch
		}
		m.Topics = old.Topics
		assigned, pending := old.Assigned, old.Pending
		cg.target[memberID] = cg.target[old.ID]
		out = append(out, cg.memberTombstones(g.ID, old.ID)...)
		cg.drop(old.ID)
		cg.setOwned(m, assigned, pending)
		out = append(out, Record{Key: cgKey(cgTargetMemberKey, g.ID, memberID, true), Value: targetValue(cg.target[memberID])})
		cg.static[*req.InstanceID] = memberID
	case known && m.Classic == nil:
		fail(kerr.UnknownMemberID, req.MemberID)
		return
	case !known:
		m = cg.member(memberID, now)
		bump = true
		if req.InstanceID != nil {
			cg.static[*req.InstanceID] = memberID
		}
	}
	before := [3]int32{m.Epoch, m.PrevEpoch, int32(m.State)}
	beforeAssigned, beforePending := m.Assigned, m.Pending
	m.lastSeen = now

	topicsReq := slices.Compact(slices.Sorted(slices.Values(sub.Topics)))
	if !slices.Equal(topicsReq, m.Topics) {
		m.Topics, bump = topicsReq, true
	}
	m.InstanceID, m.RackID = req.InstanceID, sub.Rack
	m.ClientID, m.ClientHost = req.ClientID, req.ClientHost
	if req.RebalanceTimeoutMillis > 0 {
		m.RebalanceTimeout = req.RebalanceTimeoutMillis
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	m.Classic = &classicMeta{SessionTimeout: session, Protocols: req.Protocols, syncBy: now.Add(m.rebalanceTimeout())}
	out = append(out, Record{Key: cgKey(cgMemberKey, g.ID, m.ID, true), Value: m.metadataValue()})

	out = append(out, gs.nextEpoch(g, topics, gs.topicsGeneration(topics), bump, false)...)
	owned := tpSet{}
	for _, t := range sub.OwnedPartitions {
		if tm, ok := topics[t.Topic]; ok {
			for _, p := range t.Partitions {
				owned[tpKey{tm.ID, p}] = struct{}{}
			}
		}
	}
	cg.reconcile(m, owned, now)
	if before != [3]int32{m.Epoch, m.PrevEpoch, int32(m.State)} || !m.Assigned.equal(beforeAssigned) || !m.Pending.equal(beforePending) || !known {
		out = append(out, Record{Key: cgKey(cgCurrentAssignKey, g.ID, m.ID, true), Value: m.currentValue()})
	}
	g.refreshConsumerState(now)
	pt, p := consumerProtocolType, req.Protocols[0].Name
	resp := &kmsg.JoinGroupResponse{Version: req.Version, Generation: m.Epoch, MemberID: m.ID, ProtocolType: &pt, Protocol: &p}
	if replacedConsumer && cg.classicCount() == len(cg.members) && gs.cfg.Consumer.Downgrade && len(cg.members) <= gs.cfg.MaxSize {
		// The last consumer-protocol member was replaced by a classic
		// one: a classic group, with no rebalance (Kafka's
		// validateOnlineDowngradeWithReplacedMemberId). The member
		// syncs with the classic group's generation and protocol (the
		// one the group selected, which need not be the member's first).
		// Unless every member is reconciled a rebalance starts, since a
		// target still owned by another member would otherwise be given
		// twice; Kafka 4.4 does the same ("Downgrade group ... with stale
		// assignment").
		reconciled := cg.StateName() == "Stable"
		out = append(out, gs.toClassic(g, "", topics, now)...)
		resp.Generation = g.Generation
		selected := g.Protocol
		resp.Protocol = &selected
		if !reconciled {
			gs.prepareRebalance(g, now)
		}
	}
	gs.writeConsumer(g, out, func(err error) {
		if err != nil {
			fail(kerr.ErrorForCode(commitErrorCode(err)).(*kerr.Error), m.ID)
			return
		}
		reply(resp)
	})
}

// classicMember finds the classic member a SyncGroup, Heartbeat or
// LeaveGroup names (Kafka's validateConsumerGroupMember and
// throwIfMemberDoesNotUseClassicProtocol).
func (cg *consumerGroup) classicMember(memberID string, instanceID *string) (*cMember, *kerr.Error) {
	var m *cMember
	if instanceID != nil {
		id, ok := cg.static[*instanceID]
		if !ok {
			return nil, kerr.UnknownMemberID
		}
		if memberID != "" && id != memberID {
			return nil, kerr.FencedInstanceID
		}
		m = cg.members[id]
	} else {
		m = cg.members[memberID]
	}
	if m == nil || m.Classic == nil {
		return nil, kerr.UnknownMemberID
	}
	return m, nil
}

// classicSyncConsumer is a SyncGroup to a consumer group: the member's
// current assignment.
func (gs *Groups) classicSyncConsumer(g *Group, req *kmsg.SyncGroupRequest, now time.Time, reply func(*kmsg.SyncGroupResponse)) {
	cg := g.consumer
	fail := func(code *kerr.Error) { reply(&kmsg.SyncGroupResponse{Version: req.Version, ErrorCode: code.Code}) }
	m, code := cg.classicMember(req.MemberID, req.InstanceID)
	switch {
	case code != nil:
		fail(code)
		return
	case req.Generation != m.Epoch:
		fail(kerr.IllegalGeneration)
		return
	case req.ProtocolType != nil && *req.ProtocolType != consumerProtocolType,
		req.Protocol != nil && *req.Protocol != m.Classic.Protocols[0].Name:
		fail(kerr.InconsistentGroupProtocol)
		return
	case cg.Epoch > m.Epoch && m.State != memberUnrevoked:
		if m.Classic.joinBy.IsZero() {
			m.Classic.joinBy = now.Add(m.rebalanceTimeout())
		}
		fail(kerr.RebalanceInProgress)
		return
	}
	m.lastSeen = now
	m.Classic.syncBy = time.Time{}
	pt, p := consumerProtocolType, m.Classic.Protocols[0].Name
	reply(&kmsg.SyncGroupResponse{Version: req.Version, ProtocolType: &pt, Protocol: &p,
		MemberAssignment: encodeAssignment(m.Assigned, m.Classic.Protocols[0].Metadata, gs.topicsNow())})
}

// classicHeartbeatConsumer is a Heartbeat to a consumer group: the member
// is told to rejoin when it has something to reconcile.
func (gs *Groups) classicHeartbeatConsumer(g *Group, req *kmsg.HeartbeatRequest, now time.Time) *kerr.Error {
	cg := g.consumer
	m, code := cg.classicMember(req.MemberID, req.InstanceID)
	switch {
	case code != nil:
		return code
	case req.Generation != m.Epoch:
		return kerr.IllegalGeneration
	}
	m.lastSeen = now
	if m.Epoch < cg.Epoch || m.State == memberUnrevoked || m.State == memberUnreleased && !cg.waitingOnUnreleased(m) {
		if m.Classic.joinBy.IsZero() {
			m.Classic.joinBy = now.Add(m.rebalanceTimeout())
		}
		return kerr.RebalanceInProgress
	}
	return nil
}

// waitingOnUnreleased is whether a partition of m's target is still owned
// by another member.
func (cg *consumerGroup) waitingOnUnreleased(m *cMember) bool {
	for k := range cg.target[m.ID] {
		if _, ok := m.Assigned[k]; ok {
			continue
		}
		if o, ok := cg.owners[k]; ok && o != m.ID {
			return true
		}
	}
	return false
}

// classicLeaveConsumer is a LeaveGroup to a consumer group: each classic
// member named leaves, with a new group epoch.
func (gs *Groups) classicLeaveConsumer(g *Group, members []kmsg.LeaveGroupRequestMember, now time.Time) []*kerr.Error {
	codes := make([]*kerr.Error, len(members))
	var out []Record
	for i, lm := range members {
		m, code := g.consumer.classicMember(lm.MemberID, lm.InstanceID)
		if code != nil {
			codes[i] = code
			continue
		}
		out = append(out, gs.removeConsumerMember(g, m, now)...)
	}
	gs.writeConsumer(g, out, func(error) {}) // Coordinator.Leave answers once it is committed
	return codes
}

// rebalanceTimeout is m's, or the Java client's default
// max.poll.interval.ms when it gave none.
func (m *cMember) rebalanceTimeout() time.Duration {
	if m.RebalanceTimeout > 0 {
		return time.Duration(m.RebalanceTimeout) * time.Millisecond
	}
	return 5 * time.Minute
}

// classicLate is whether a classic member missed the JoinGroup or
// SyncGroup it owed.
func (m *cMember) classicLate(now time.Time) bool {
	c := m.Classic
	return c != nil && (!c.joinBy.IsZero() && !now.Before(c.joinBy) || !c.syncBy.IsZero() && !now.Before(c.syncBy))
}

// sessionTimeout is how long m, of group, may go without a heartbeat.
func (gs *Groups) sessionTimeout(group string, m *cMember) time.Duration {
	if m.Classic != nil {
		return m.Classic.SessionTimeout
	}
	s, _ := gs.consumerTimeouts(group)
	return s
}

// topicsNow is the cluster's topics for the classic requests of a
// consumer group (the heartbeats are given them).
func (gs *Groups) topicsNow() map[string]TopicMeta {
	if gs.Topics == nil {
		return nil
	}
	return gs.Topics()
}

// classicTag appends ClassicMemberMetadata as tagged field 0 of a member
// record. It is a nullable struct, so Kafka's generated code writes a
// presence marker (uvarint 1) before it and counts it in the field's size.
func (e *enc) classicTag(c *classicMeta) []byte {
	if c == nil {
		return e.tags()
	}
	body := &enc{}
	body.uv(1) // present
	body.i32(int32(c.SessionTimeout.Milliseconds()))
	body.uv(uint64(len(c.Protocols)) + 1)
	for _, p := range c.Protocols {
		body.str(p.Name)
		body.uv(uint64(len(p.Metadata)) + 1)
		body.b = append(body.b, p.Metadata...)
		body.uv(0)
	}
	body.uv(0)
	e.uv(1) // one tagged field
	e.uv(0) // tag 0
	e.uv(uint64(len(body.b)))
	e.b = append(e.b, body.b...)
	return e.b
}

// classicTagged reads the tagged fields of a member record, keeping
// ClassicMemberMetadata (tag 0).
func (d *dec) classicTagged() *classicMeta {
	var out *classicMeta
	for n := d.uv(); n > 0 && d.err == nil; n-- {
		tag, size := d.uv(), d.uv()
		if !d.need(int(size)) {
			return nil
		}
		field := d.b[:size]
		d.b = d.b[size:]
		if tag != 0 {
			continue
		}
		fd := &dec{b: field}
		if fd.uv() == 0 { // null, or an empty field
			continue
		}
		c := &classicMeta{SessionTimeout: time.Duration(fd.i32()) * time.Millisecond}
		for range fd.count() {
			name := fd.str()
			var meta []byte
			if l := fd.uv(); l > 0 && fd.need(int(l-1)) {
				meta = slices.Clone(fd.b[:l-1])
				fd.b = fd.b[l-1:]
			}
			fd.skipTags()
			c.Protocols = append(c.Protocols, kmsg.JoinGroupRequestProtocol{Name: name, Metadata: meta})
		}
		if fd.err == nil && len(c.Protocols) > 0 {
			out = c
		}
	}
	return out
}
