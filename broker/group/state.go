package group

import (
	"crypto/rand"
	"encoding/hex"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// State is a group's state, named as Kafka names them in DescribeGroups and
// ListGroups.
type State int8

const (
	Empty State = iota
	PreparingRebalance
	CompletingRebalance
	Stable
	Dead
)

func (s State) String() string {
	return [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}[s]
}

// MaxGroupIDLength bounds group ids: the record keys of __consumer_offsets
// store them as int16-length strings. Kafka has no limit of its own; a
// longer id is INVALID_GROUP_ID here.
const MaxGroupIDLength = 32767

// Config is what the coordinator takes from the broker config.
type Config struct {
	Partitions            int32         // offsets.topic.num.partitions
	MinSessionTimeout     time.Duration // group.min.session.timeout.ms
	MaxSessionTimeout     time.Duration // group.max.session.timeout.ms
	InitialRebalanceDelay time.Duration // group.initial.rebalance.delay.ms
	MaxSize               int           // group.max.size
	OffsetsRetention      time.Duration // offsets.retention.minutes
	MaxMetadataBytes      int           // offset.metadata.max.bytes

	// Consumer is group.consumer.*, for KIP-848 groups.
	Consumer ConsumerConfig
}

// Member is one member of a group.
type Member struct {
	ID               string
	InstanceID       *string
	ClientID         string
	ClientHost       string
	SessionTimeout   time.Duration
	RebalanceTimeout time.Duration
	ProtocolType     string
	Protocols        []kmsg.JoinGroupRequestProtocol
	Assignment       []byte

	// The pending JoinGroup and SyncGroup, answered later.
	joinReply    func(*kmsg.JoinGroupResponse)
	joinVersion  int16
	syncReply    func(*kmsg.SyncGroupResponse)
	syncVersion  int16
	lastSeen     time.Time // last heartbeat (or join/sync)
	awaitingJoin bool
}

func (m *Member) metadata(protocol string) []byte {
	for _, p := range m.Protocols {
		if p.Name == protocol {
			return p.Metadata
		}
	}
	return nil
}

func (m *Member) supports(protocol string) bool {
	for _, p := range m.Protocols {
		if p.Name == protocol {
			return true
		}
	}
	return false
}

func sameProtocols(a, b []kmsg.JoinGroupRequestProtocol) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || string(a[i].Metadata) != string(b[i].Metadata) {
			return false
		}
	}
	return true
}

// Group is one group: its membership and its committed offsets.
type Group struct {
	ID           string
	State        State
	StateTime    time.Time // when State was entered
	Generation   int32
	ProtocolType string
	Protocol     string // chosen for this generation; "" when Empty
	Leader       string

	members map[string]*Member
	order   []string          // member ids in join order; the first is the next leader
	static  map[string]string // group.instance.id → member id
	pending map[string]time.Time
	// PreparingRebalance: when the join phase ends at the latest, and the
	// initial delay of an empty group's first rebalance (KIP-134).
	joinDeadline   time.Time
	initialDelay   bool
	initialLimit   time.Time
	newMemberAdded bool

	offsets map[TopicPartition]Offset
	// consumer is the KIP-848 state of a consumer-protocol group
	// (consumer_group.go); nil for a classic group.
	consumer *consumerGroup
}

// Members is the group's members in join order.
func (g *Group) Members() []*Member {
	out := make([]*Member, 0, len(g.order))
	for _, id := range g.order {
		out = append(out, g.members[id])
	}
	return out
}

func (g *Group) setState(s State, now time.Time) {
	g.State, g.StateTime = s, now
}

// Write is records to append to one __consumer_offsets partition. Done runs
// once the append succeeded or failed.
type Write struct {
	Partition int32
	Records   []Record
	Done      func(err error)
	// Txn, when set, makes the write a transactional batch of that
	// producer: offsets committed inside a transaction (TxnOffsetCommit),
	// which count only once its commit marker is written.
	Txn *TxnProducer
}

// TxnProducer is the producer of a transactional write.
type TxnProducer struct {
	ID    int64
	Epoch int16
}

// Record is one key and value; a nil value is a tombstone.
type Record struct{ Key, Value []byte }

// Groups is the state machine of every group this coordinator owns. It does
// no I/O (see the package doc).
type Groups struct {
	cfg    Config
	groups map[string]*Group
	writes []Write
	// pending are the offsets committed in open transactions, by
	// producer id (txn_offsets.go).
	pending map[int64][]pendingOffset
	// NewMemberID makes member ids; tests replace it to be deterministic.
	NewMemberID func(clientID string) string
	// Rebalances counts join phases that ended with members, each a new
	// generation whose assignment the members then sync (the broker's
	// rebalance metric).
	Rebalances int64
	// topicsOf and topicsGen number the topic maps consumer heartbeats
	// are given (topicsGeneration).
	topicsOf  uintptr
	topicsGen uint64
	// Topics is the cluster's topics, for the classic members of
	// consumer groups (their requests carry topic names); nil in tests
	// that have no topics. The coordinator calls it with its mu held.
	Topics func() map[string]TopicMeta
	// GroupTimeouts is a consumer group's own consumer.session.timeout.ms
	// and consumer.heartbeat.interval.ms (group configs, from the metadata
	// log); ok false: the group sets none and cfg.Consumer applies. Nil
	// in tests.
	GroupTimeouts func(group string) (session, heartbeat time.Duration, ok bool)
}

// consumerTimeouts are the session timeout and heartbeat interval of a
// consumer group's members.
func (gs *Groups) consumerTimeouts(group string) (session, heartbeat time.Duration) {
	if gs.GroupTimeouts != nil {
		if s, h, ok := gs.GroupTimeouts(group); ok {
			return s, h
		}
	}
	return gs.cfg.Consumer.SessionTimeout, gs.cfg.Consumer.HeartbeatInterval
}

// NewGroups is an empty state machine.
func NewGroups(cfg Config) *Groups {
	return &Groups{cfg: cfg, groups: map[string]*Group{}, pending: map[int64][]pendingOffset{}, NewMemberID: randomMemberID}
}

func randomMemberID(clientID string) string {
	var b [16]byte
	rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return clientID + "-" + h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// TakeWrites returns and forgets the queued writes.
func (gs *Groups) TakeWrites() []Write {
	w := gs.writes
	gs.writes = nil
	return w
}

// Group is the group of that id, if it exists and is not dead.
func (gs *Groups) Group(id string) (*Group, bool) {
	g, ok := gs.groups[id]
	return g, ok && g.State != Dead
}

// All is every live group, by id.
func (gs *Groups) All() []*Group {
	out := make([]*Group, 0, len(gs.groups))
	for _, g := range gs.groups {
		if g.State != Dead {
			out = append(out, g)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Partition is the __consumer_offsets partition of a group: Kafka's
// Utils.abs(groupId.hashCode) % partitions.
func (gs *Groups) Partition(id string) int32 { return PartitionFor(id, gs.cfg.Partitions) }

// PartitionFor is the __consumer_offsets partition of group id among n.
func PartitionFor(id string, n int32) int32 {
	var h int32
	for _, u := range utf16(id) {
		h = 31*h + int32(u)
	}
	if h == -1<<31 {
		h = 0 // Utils.abs maps MIN_VALUE to 0
	} else if h < 0 {
		h = -h
	}
	return h % n
}

// utf16 is s as Java's String holds it.
func utf16(s string) []uint16 {
	out := make([]uint16, 0, len(s))
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			out = append(out, uint16(0xd800+(r>>10)), uint16(0xdc00+(r&0x3ff)))
			continue
		}
		out = append(out, uint16(r))
	}
	return out
}

func (gs *Groups) getOrCreate(id string, now time.Time) *Group {
	g, ok := gs.groups[id]
	if !ok || g.State == Dead {
		g = &Group{ID: id, StateTime: now, members: map[string]*Member{}, static: map[string]string{},
			pending: map[string]time.Time{}, offsets: map[TopicPartition]Offset{}}
		gs.groups[id] = g
	}
	return g
}

// JoinRequest is a JoinGroup with what the connection knows.
type JoinRequest struct {
	*kmsg.JoinGroupRequest
	ClientID, ClientHost string
}

// Join handles a JoinGroup. reply is called once, now or when the join
// phase completes (from a later call of Groups).
func (gs *Groups) Join(req JoinRequest, now time.Time, reply func(*kmsg.JoinGroupResponse)) {
	fail := func(code *kerr.Error, memberID string) {
		resp := joinError(req.Version, code, memberID)
		reply(resp)
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	rebalance := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if req.Version == 0 {
		rebalance = session // v0 has no rebalance timeout: Kafka uses the session timeout
	}
	switch {
	case req.Group == "" || len(req.Group) > MaxGroupIDLength:
		fail(kerr.InvalidGroupID, req.MemberID)
		return
	case session < gs.cfg.MinSessionTimeout || session > gs.cfg.MaxSessionTimeout:
		fail(kerr.InvalidSessionTimeout, req.MemberID)
		return
	case req.ProtocolType == "" || len(req.Protocols) == 0:
		fail(kerr.InconsistentGroupProtocol, req.MemberID)
		return
	}
	g, exists := gs.Group(req.Group)
	if !exists && req.MemberID != "" {
		fail(kerr.UnknownMemberID, req.MemberID)
		return
	}
	if exists && g.consumer != nil && len(g.consumer.members) > 0 {
		gs.classicJoinConsumer(g, req, now, reply)
		return
	}
	if exists && g.consumer != nil {
		if code := gs.classicJoinOnConsumer(g); code != nil {
			fail(code, req.MemberID)
			return
		}
	}
	if exists {
		if code := g.checkProtocols(req.JoinGroupRequest); code != nil {
			fail(code, req.MemberID)
			return
		}
	}
	g = gs.getOrCreate(req.Group, now)
	m := &Member{InstanceID: req.InstanceID, ClientID: req.ClientID, ClientHost: req.ClientHost,
		SessionTimeout: session, RebalanceTimeout: rebalance, ProtocolType: req.ProtocolType, Protocols: req.Protocols,
		joinReply: reply, joinVersion: req.Version, lastSeen: now}

	if req.MemberID == "" {
		gs.joinUnknown(g, req, m, now)
		return
	}
	// A known member (or one told its id by MEMBER_ID_REQUIRED).
	if _, ok := g.pending[req.MemberID]; ok {
		delete(g.pending, req.MemberID)
		m.ID = req.MemberID
		gs.addMemberAndRebalance(g, m, now)
		return
	}
	old, ok := g.members[req.MemberID]
	if code := g.checkInstance(req.MemberID, req.InstanceID); code != nil {
		fail(code, req.MemberID)
		return
	}
	if !ok {
		fail(kerr.UnknownMemberID, req.MemberID)
		return
	}
	switch g.State {
	case PreparingRebalance:
		gs.updateMember(g, old, m, now)
		gs.tryCompleteJoin(g, now)
	case CompletingRebalance, Stable:
		if sameProtocols(old.Protocols, m.Protocols) && (g.State == CompletingRebalance || old.ID != g.Leader) {
			// Nothing changed: answer with the current generation.
			old.lastSeen = now
			reply(g.joinResponse(old, req.Version))
			return
		}
		gs.updateMember(g, old, m, now)
		gs.prepareRebalance(g, now)
	default: // Empty cannot hold members
		fail(kerr.UnknownMemberID, req.MemberID)
	}
}

func (gs *Groups) joinUnknown(g *Group, req JoinRequest, m *Member, now time.Time) {
	if req.InstanceID != nil {
		if oldID, ok := g.static[*req.InstanceID]; ok {
			gs.replaceStatic(g, g.members[oldID], m, req, now)
			return
		}
	}
	if len(g.members)+len(g.pending) >= gs.cfg.MaxSize {
		m.joinReply(joinError(req.Version, kerr.GroupMaxSizeReached, ""))
		gs.dropIfEmpty(g)
		return
	}
	m.ID = gs.NewMemberID(req.ClientID)
	if req.InstanceID == nil && req.Version >= 4 {
		// KIP-394: the member must come back with its id, so that a
		// client that times out before the answer does not leave an
		// unknown member behind.
		g.pending[m.ID] = now.Add(m.SessionTimeout)
		m.joinReply(joinError(req.Version, kerr.MemberIDRequired, m.ID))
		return
	}
	gs.addMemberAndRebalance(g, m, now)
}

// replaceStatic gives a static member's instance a new member id (KIP-345):
// the old member, if still waiting, is fenced. A stable group needs no
// rebalance unless the returning member would change the selected protocol,
// as in Kafka: comparing the protocol metadata instead would rebalance on
// every restart, since clients put their owned partitions and generation in
// it.
func (gs *Groups) replaceStatic(g *Group, old, m *Member, req JoinRequest, now time.Time) {
	m.ID = gs.NewMemberID(req.ClientID)
	if old.joinReply != nil {
		old.joinReply(joinError(old.joinVersion, kerr.FencedInstanceID, old.ID))
	}
	if old.syncReply != nil {
		old.syncReply(&kmsg.SyncGroupResponse{Version: old.syncVersion, ErrorCode: kerr.FencedInstanceID.Code})
	}
	m.Assignment = old.Assignment
	gs.swapMember(g, old, m)
	if g.State == Stable && g.selectProtocol() == g.Protocol {
		reply := m.joinReply
		m.joinReply = nil
		resp := g.joinResponse(m, req.Version)
		if m.ID == g.Leader && req.Version >= 9 {
			resp.SkipAssignment = true // KIP-814: the leader keeps the assignment
		}
		gs.persistGroup(g, now, func(err error) {
			if err != nil {
				// As Kafka: the old member id stays valid if the new
				// one could not be persisted.
				if g.members[m.ID] == m {
					gs.swapMember(g, m, old)
				}
				reply(joinError(req.Version, kerr.CoordinatorNotAvailable, m.ID))
				return
			}
			reply(resp)
		})
		return
	}
	m.awaitingJoin = true
	if g.State != PreparingRebalance {
		gs.prepareRebalance(g, now)
	} else {
		gs.tryCompleteJoin(g, now)
	}
}

// swapMember puts m in old's place: same position, leadership and instance.
func (gs *Groups) swapMember(g *Group, old, m *Member) {
	delete(g.members, old.ID)
	g.members[m.ID] = m
	for i, id := range g.order {
		if id == old.ID {
			g.order[i] = m.ID
		}
	}
	if g.Leader == old.ID {
		g.Leader = m.ID
	}
	if m.InstanceID != nil {
		g.static[*m.InstanceID] = m.ID
	}
}

func (gs *Groups) updateMember(g *Group, old, m *Member, now time.Time) {
	old.Protocols, old.SessionTimeout, old.RebalanceTimeout = m.Protocols, m.SessionTimeout, m.RebalanceTimeout
	old.ClientID, old.ClientHost = m.ClientID, m.ClientHost
	if old.joinReply != nil {
		// A second join replaces the first: the client gave up on it.
		old.joinReply(joinError(old.joinVersion, kerr.RebalanceInProgress, old.ID))
	}
	old.joinReply, old.joinVersion, old.awaitingJoin, old.lastSeen = m.joinReply, m.joinVersion, true, now
}

func (gs *Groups) addMemberAndRebalance(g *Group, m *Member, now time.Time) {
	m.awaitingJoin = true
	g.members[m.ID] = m
	g.order = append(g.order, m.ID)
	if m.InstanceID != nil {
		g.static[*m.InstanceID] = m.ID
	}
	if g.Leader == "" {
		g.Leader = m.ID
	}
	if len(g.members) == 1 {
		g.ProtocolType = m.ProtocolType
	}
	g.newMemberAdded = true
	if g.State == PreparingRebalance {
		gs.tryCompleteJoin(g, now)
		return
	}
	gs.prepareRebalance(g, now)
}

// checkProtocols: a member must speak the group's protocol type and share
// a protocol with every member.
func (g *Group) checkProtocols(req *kmsg.JoinGroupRequest) *kerr.Error {
	if len(g.members) == 0 {
		return nil
	}
	if g.ProtocolType != req.ProtocolType {
		return kerr.InconsistentGroupProtocol
	}
	for _, p := range req.Protocols {
		all := true
		for id, m := range g.members {
			if id == req.MemberID {
				continue
			}
			if !m.supports(p.Name) {
				all = false
				break
			}
		}
		if all {
			return nil
		}
	}
	return kerr.InconsistentGroupProtocol
}

// checkInstance fences a static member whose instance id now belongs to
// another member id.
func (g *Group) checkInstance(memberID string, instance *string) *kerr.Error {
	if instance == nil {
		return nil
	}
	if id, ok := g.static[*instance]; ok && id != memberID {
		return kerr.FencedInstanceID
	}
	return nil
}

// validateMember is Kafka's ClassicGroup.validateMember: a static member
// must be the current holder of its instance id, any member must exist.
func (g *Group) validateMember(memberID string, instance *string) *kerr.Error {
	if instance != nil {
		id, ok := g.static[*instance]
		switch {
		case !ok:
			return kerr.UnknownMemberID
		case id != memberID:
			return kerr.FencedInstanceID
		}
	}
	if g.members[memberID] == nil {
		return kerr.UnknownMemberID
	}
	return nil
}

func (gs *Groups) prepareRebalance(g *Group, now time.Time) {
	if g.State == CompletingRebalance {
		for _, m := range g.members {
			if m.syncReply != nil {
				m.syncReply(&kmsg.SyncGroupResponse{Version: m.syncVersion, ErrorCode: kerr.RebalanceInProgress.Code})
				m.syncReply = nil
			}
			m.Assignment = nil
		}
	}
	var timeout time.Duration
	for _, m := range g.members {
		timeout = max(timeout, m.RebalanceTimeout)
	}
	if g.State == Empty {
		// KIP-134: wait for more members before the first rebalance.
		g.initialDelay = true
		g.initialLimit = now.Add(max(timeout, gs.cfg.InitialRebalanceDelay))
		g.joinDeadline = now.Add(min(gs.cfg.InitialRebalanceDelay, max(timeout, gs.cfg.InitialRebalanceDelay)))
		g.newMemberAdded = false
	} else {
		g.initialDelay = false
		g.joinDeadline = now.Add(timeout)
	}
	g.setState(PreparingRebalance, now)
	gs.tryCompleteJoin(g, now)
}

func (gs *Groups) tryCompleteJoin(g *Group, now time.Time) {
	if g.State != PreparingRebalance {
		return
	}
	if g.initialDelay {
		if now.Before(g.joinDeadline) {
			return
		}
		if g.newMemberAdded && now.Before(g.initialLimit) {
			g.newMemberAdded = false
			g.joinDeadline = now.Add(min(gs.cfg.InitialRebalanceDelay, g.initialLimit.Sub(now)))
			return
		}
		gs.completeJoin(g, now)
		return
	}
	all := len(g.pending) == 0
	for _, m := range g.members {
		if !m.awaitingJoin {
			all = false
		}
	}
	if all || !now.Before(g.joinDeadline) {
		gs.completeJoin(g, now)
	}
}

// completeJoin ends the join phase: members that did not rejoin are
// removed, the generation advances, the protocol is chosen and every
// waiting member is answered, the leader with the members' metadata.
func (gs *Groups) completeJoin(g *Group, now time.Time) {
	for _, m := range g.Members() {
		if !m.awaitingJoin {
			gs.removeMember(g, m)
		}
	}
	g.initialDelay = false
	g.Generation++
	if len(g.members) == 0 {
		g.Protocol = ""
		g.setState(Empty, now)
		gs.persistGroup(g, now, nil)
		return
	}
	gs.Rebalances++
	g.ProtocolType = g.members[g.Leader].ProtocolType
	g.Protocol = g.selectProtocol()
	g.setState(CompletingRebalance, now)
	for _, m := range g.Members() {
		m.awaitingJoin = false
		m.lastSeen = now
		if m.joinReply != nil {
			m.joinReply(g.joinResponse(m, m.joinVersion))
			m.joinReply = nil
		}
	}
}

// selectProtocol picks, among the protocols every member supports, the one
// most members prefer (each member votes for its first supported choice);
// ties go to the leader's preference order.
func (g *Group) selectProtocol() string {
	var candidates []string
	leader := g.members[g.Leader]
	for _, p := range leader.Protocols {
		all := true
		for _, m := range g.members {
			all = all && m.supports(p.Name)
		}
		if all {
			candidates = append(candidates, p.Name)
		}
	}
	votes := map[string]int{}
	for _, m := range g.members {
		for _, p := range m.Protocols {
			if contains(candidates, p.Name) {
				votes[p.Name]++
				break
			}
		}
	}
	best := ""
	for _, c := range candidates {
		if best == "" || votes[c] > votes[best] {
			best = c
		}
	}
	return best
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func (g *Group) joinResponse(m *Member, version int16) *kmsg.JoinGroupResponse {
	resp := &kmsg.JoinGroupResponse{Version: version, Generation: g.Generation, LeaderID: g.Leader, MemberID: m.ID}
	pt, p := g.ProtocolType, g.Protocol
	resp.ProtocolType, resp.Protocol = &pt, &p
	if m.ID == g.Leader {
		for _, o := range g.Members() {
			resp.Members = append(resp.Members, kmsg.JoinGroupResponseMember{MemberID: o.ID, InstanceID: o.InstanceID, ProtocolMetadata: o.metadata(g.Protocol)})
		}
	}
	return resp
}

func joinError(version int16, code *kerr.Error, memberID string) *kmsg.JoinGroupResponse {
	return &kmsg.JoinGroupResponse{Version: version, ErrorCode: code.Code, Generation: -1, MemberID: memberID}
}

// removeMember drops a member from the group without rebalancing.
func (gs *Groups) removeMember(g *Group, m *Member) {
	delete(g.members, m.ID)
	for i, id := range g.order {
		if id == m.ID {
			g.order = append(g.order[:i:i], g.order[i+1:]...)
			break
		}
	}
	if m.InstanceID != nil && g.static[*m.InstanceID] == m.ID {
		delete(g.static, *m.InstanceID)
	}
	if g.Leader == m.ID {
		g.Leader = ""
		if len(g.order) > 0 {
			g.Leader = g.order[0]
		}
	}
}

// removeAndRebalance is a member leaving or expiring.
func (gs *Groups) removeAndRebalance(g *Group, m *Member, now time.Time) {
	if m.joinReply != nil {
		m.joinReply(joinError(m.joinVersion, kerr.UnknownMemberID, m.ID))
		m.joinReply = nil
	}
	if m.syncReply != nil {
		m.syncReply(&kmsg.SyncGroupResponse{Version: m.syncVersion, ErrorCode: kerr.UnknownMemberID.Code})
		m.syncReply = nil
	}
	gs.removeMember(g, m)
	switch g.State {
	case Stable, CompletingRebalance:
		gs.prepareRebalance(g, now)
	case PreparingRebalance:
		gs.tryCompleteJoin(g, now)
	}
}

func (gs *Groups) dropIfEmpty(g *Group) {
	if len(g.members) == 0 && len(g.pending) == 0 && len(g.offsets) == 0 && g.Generation == 0 && g.State == Empty {
		delete(gs.groups, g.ID)
	}
}

// Sync handles a SyncGroup; reply is called now or when the leader's
// assignment is persisted.
func (gs *Groups) Sync(req *kmsg.SyncGroupRequest, now time.Time, reply func(*kmsg.SyncGroupResponse)) {
	fail := func(code *kerr.Error) {
		reply(&kmsg.SyncGroupResponse{Version: req.Version, ErrorCode: code.Code})
	}
	if req.Group == "" || len(req.Group) > MaxGroupIDLength {
		fail(kerr.InvalidGroupID)
		return
	}
	g, ok := gs.Group(req.Group)
	if !ok {
		fail(kerr.UnknownMemberID)
		return
	}
	if g.consumer != nil {
		gs.classicSyncConsumer(g, req, now, reply)
		return
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != nil {
		fail(code)
		return
	}
	m := g.members[req.MemberID]
	switch {
	case req.Generation != g.Generation:
		fail(kerr.IllegalGeneration)
		return
	case req.ProtocolType != nil && *req.ProtocolType != g.ProtocolType,
		req.Protocol != nil && *req.Protocol != g.Protocol:
		fail(kerr.InconsistentGroupProtocol)
		return
	}
	switch g.State {
	case PreparingRebalance:
		fail(kerr.RebalanceInProgress)
	case Stable:
		m.lastSeen = now
		reply(g.syncResponse(m, req.Version))
	case CompletingRebalance:
		m.lastSeen = now
		m.syncReply, m.syncVersion = reply, req.Version
		if m.ID != g.Leader {
			return
		}
		assign := map[string][]byte{}
		for _, a := range req.GroupAssignment {
			assign[a.MemberID] = a.MemberAssignment
		}
		for _, o := range g.members {
			o.Assignment = assign[o.ID] // members the leader left out get an empty assignment
		}
		gen := g.Generation
		gs.persistGroup(g, now, func(err error) {
			if g.State != CompletingRebalance || g.Generation != gen {
				return // a rebalance started meanwhile and answered the syncs
			}
			if err != nil {
				for _, o := range g.members {
					if o.syncReply != nil {
						o.syncReply(&kmsg.SyncGroupResponse{Version: o.syncVersion, ErrorCode: kerr.CoordinatorNotAvailable.Code})
						o.syncReply = nil
					}
					o.Assignment = nil
				}
				gs.prepareRebalance(g, now)
				return
			}
			g.setState(Stable, now)
			for _, o := range g.Members() {
				if o.syncReply != nil {
					o.syncReply(g.syncResponse(o, o.syncVersion))
					o.syncReply = nil
				}
			}
		})
	default:
		fail(kerr.UnknownMemberID)
	}
}

func (g *Group) syncResponse(m *Member, version int16) *kmsg.SyncGroupResponse {
	pt, p := g.ProtocolType, g.Protocol
	a := m.Assignment
	if a == nil {
		a = []byte{}
	}
	return &kmsg.SyncGroupResponse{Version: version, ProtocolType: &pt, Protocol: &p, MemberAssignment: a}
}

// Heartbeat handles a Heartbeat and returns its error code.
func (gs *Groups) Heartbeat(req *kmsg.HeartbeatRequest, now time.Time) *kerr.Error {
	if req.Group == "" || len(req.Group) > MaxGroupIDLength {
		return kerr.InvalidGroupID
	}
	g, ok := gs.Group(req.Group)
	if !ok {
		return kerr.UnknownMemberID
	}
	if g.consumer != nil {
		return gs.classicHeartbeatConsumer(g, req, now)
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != nil {
		return code
	}
	m := g.members[req.MemberID]
	if req.Generation != g.Generation {
		return kerr.IllegalGeneration
	}
	m.lastSeen = now
	if g.State == PreparingRebalance {
		return kerr.RebalanceInProgress
	}
	return nil
}

// Leave handles a LeaveGroup: one error per member (v3+ batches them),
// or a top-level error for the whole request.
func (gs *Groups) Leave(group string, members []kmsg.LeaveGroupRequestMember, now time.Time) (*kerr.Error, []*kerr.Error) {
	if group == "" || len(group) > MaxGroupIDLength {
		return kerr.InvalidGroupID, nil
	}
	codes := make([]*kerr.Error, len(members))
	g, ok := gs.Group(group)
	if !ok {
		for i := range codes {
			codes[i] = kerr.UnknownMemberID
		}
		return nil, codes
	}
	if g.consumer != nil {
		return nil, gs.classicLeaveConsumer(g, members, now)
	}
	for i, lm := range members {
		id := lm.MemberID
		if lm.InstanceID != nil {
			sid, ok := g.static[*lm.InstanceID]
			switch {
			case !ok:
				codes[i] = kerr.UnknownMemberID
				continue
			case id != "" && id != sid:
				codes[i] = kerr.FencedInstanceID
				continue
			}
			id = sid
		}
		if _, ok := g.pending[id]; ok {
			delete(g.pending, id)
			gs.tryCompleteJoin(g, now)
			continue
		}
		m, ok := g.members[id]
		if !ok {
			codes[i] = kerr.UnknownMemberID
			continue
		}
		gs.removeAndRebalance(g, m, now)
	}
	return nil, codes
}

// Tick expires members whose session ran out, pending members that never
// came back, and join phases whose rebalance timeout passed.
func (gs *Groups) Tick(now time.Time) {
	gs.TickConsumer(now)
	for _, g := range gs.All() {
		for id, deadline := range g.pending {
			if !now.Before(deadline) {
				delete(g.pending, id)
				gs.tryCompleteJoin(g, now)
			}
		}
		gs.dropIfEmpty(g)
		for _, m := range g.Members() {
			if m.awaitingJoin || m.syncReply != nil {
				continue // a member waiting for an answer is alive
			}
			if !now.Before(m.lastSeen.Add(m.SessionTimeout)) {
				gs.removeAndRebalance(g, m, now)
			}
		}
		gs.tryCompleteJoin(g, now)
	}
}

// persistGroup queues the group's metadata record; done (may be nil) runs
// after the append.
func (gs *Groups) persistGroup(g *Group, now time.Time, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	gs.writes = append(gs.writes, Write{Partition: gs.Partition(g.ID),
		Records: []Record{{Key: groupKey(g.ID), Value: g.metadataValue(now)}}, Done: done})
}

// Dump describes the group for tests.
func (g *Group) String() string {
	return describe(g)
}
