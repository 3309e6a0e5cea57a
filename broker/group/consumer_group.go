package group

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"reflect"
	"regexp"
	"regexp/syntax"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The KIP-848 consumer group protocol ("group.protocol=consumer"): the
// coordinator, not a leader member, assigns the partitions, and each
// member moves to its share through heartbeats, as Kafka's
// GroupMetadataManager.consumerGroupHeartbeat does:
//
//   - The group epoch counts changes of membership, subscriptions and the
//     subscribed topics' partitions. When it moves past the assignment
//     epoch, the server-side assignor (uniform or range) computes a new
//     target assignment for every member, and the assignment epoch
//     catches up.
//   - Each member reconciles towards its target on its own heartbeats
//     (Kafka's CurrentAssignmentBuilder). A member that must give up
//     partitions keeps its epoch and only the partitions it retains
//     (UNREVOKED_PARTITIONS) until a heartbeat reports them revoked; only
//     then does it get the target's epoch and the new partitions. A new
//     partition still owned by another member (assigned or pending
//     revocation) is held back (UNRELEASED_PARTITIONS) until that member
//     released it. So no partition is ever owned by two members at once.
//   - A member's epoch fences it: a heartbeat with another epoch is
//     FENCED_MEMBER_EPOCH (except the previous epoch with owned partitions
//     the member still has, a lost response), and offset commits must
//     carry the current one (STALE_MEMBER_EPOCH).
//
// Every change is persisted as Kafka's records (consumer_records.go)
// before the heartbeat is answered. The in-memory state changes at once;
// a write that fails answers NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE,
// the client looks the coordinator up again, and a coordinator that loads
// the partition afterwards has the last state the log holds (Kafka rolls
// its in-memory state back instead; the difference is only what a member
// whose heartbeat failed is told next).

// Member states, as Kafka's MemberState codes them in the records.
const (
	memberStable     int8 = 0
	memberUnrevoked  int8 = 1
	memberUnreleased int8 = 2
)

// ConsumerConfig is the broker's group.consumer.* configuration.
type ConsumerConfig struct {
	SessionTimeout    time.Duration // group.consumer.session.timeout.ms
	HeartbeatInterval time.Duration // group.consumer.heartbeat.interval.ms
	Assignors         []string      // group.consumer.assignors; the first is the default
	MaxSize           int           // group.consumer.max.size
	// group.consumer.migration.policy: whether a classic group with
	// members may become a consumer group, and the reverse.
	Upgrade, Downgrade bool
}

// TopicMeta is what the assignors know of a topic.
type TopicMeta struct {
	ID         [16]byte
	Partitions int32
}

// tpKey is one partition of a topic, by topic id.
type tpKey struct {
	ID [16]byte
	P  int32
}

type tpSet map[tpKey]struct{}

type topicParts struct {
	id    [16]byte
	parts []int32
}

// byTopic lists the set by topic id and partition, in order.
func (s tpSet) byTopic() []topicParts {
	m := map[[16]byte][]int32{}
	for k := range s {
		m[k.ID] = append(m[k.ID], k.P)
	}
	out := make([]topicParts, 0, len(m))
	for id, ps := range m {
		slices.Sort(ps)
		out = append(out, topicParts{id, ps})
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].id[:], out[j].id[:]) < 0 })
	return out
}

func (s tpSet) equal(o tpSet) bool {
	if len(s) != len(o) {
		return false
	}
	for k := range s {
		if _, ok := o[k]; !ok {
			return false
		}
	}
	return true
}

func (s tpSet) clone() tpSet {
	out := make(tpSet, len(s))
	for k := range s {
		out[k] = struct{}{}
	}
	return out
}

// cMember is one member of a consumer group.
type cMember struct {
	ID                   string
	InstanceID, RackID   *string
	ClientID, ClientHost string
	Topics               []string // sorted
	Regex                *string
	RebalanceTimeout     int32 // ms
	Assignor             *string
	// Classic is set for a member that speaks the classic protocol
	// (JoinGroup/SyncGroup/Heartbeat) in a migrated group.
	Classic *classicMeta

	Epoch, PrevEpoch int32
	State            int8
	Assigned         tpSet // owned now (or being given)
	Pending          tpSet // to be revoked
	// assignedAt is the member epoch in which each partition of Assigned
	// and Pending was given to the member (KIP-1251's assignment epochs):
	// a commit with an older epoch than the member's is still valid for
	// a partition it has owned since. Persisted in the member's
	// current-assignment record.
	assignedAt map[tpKey]int32

	lastSeen       time.Time
	revokeDeadline time.Time // while State is memberUnrevoked

	// resolved is what Regex matched among the topics the member may
	// DESCRIBE, as of its own last heartbeat (only that heartbeat knows
	// its principal); other members' heartbeats use it as it is.
	// resolvedOK is false until it was resolved or, after a reload,
	// taken from the member's target assignment.
	resolved     []string
	resolvedOK   bool
	resolvedFrom *pattern
	resolvedGen  uint64
	resolvedAt   time.Time
}

// pattern is one distinct SubscribedTopicRegex of a group, compiled once
// and shared by the members that use it, with the topics it matches as of
// a topics generation.
type pattern struct {
	re      *regexp.Regexp
	gen     uint64
	matched []string
	runs    int // match passes over the topics, for tests
}

// consumerGroup is the KIP-848 state of a Group whose ProtocolType is
// "consumer".
type consumerGroup struct {
	Epoch, AssignmentEpoch int32
	Assignor               string
	members                map[string]*cMember
	static                 map[string]string // instance id → member id
	target                 map[string]tpSet  // by member id
	owners                 map[tpKey]string  // partition → member that has it assigned or pending
	// topicsHash is a hash of the subscribed topics' ids and partition
	// counts at the last assignment: a change bumps the group epoch. It
	// is persisted with the group epoch (KIP-1101's MetadataHash), so a
	// coordinator that loads the group sees no change where there was
	// none.
	topicsHash int64
	sigGen     uint64 // the topics generation topicsHash was checked at
	patterns   map[string]*pattern
}

func (g *Group) consumerState() *consumerGroup {
	if g.consumer == nil {
		g.consumer = &consumerGroup{members: map[string]*cMember{}, static: map[string]string{}, target: map[string]tpSet{}, owners: map[tpKey]string{}}
		g.ProtocolType = "consumer"
	}
	return g.consumer
}

func (cg *consumerGroup) member(id string, now time.Time) *cMember {
	m, ok := cg.members[id]
	if !ok {
		m = &cMember{ID: id, Assigned: tpSet{}, Pending: tpSet{}, lastSeen: now, RebalanceTimeout: -1}
		cg.members[id] = m
	}
	return m
}

func (cg *consumerGroup) drop(id string) {
	if m, ok := cg.members[id]; ok && m.InstanceID != nil && cg.static[*m.InstanceID] == id {
		delete(cg.static, *m.InstanceID)
	}
	delete(cg.members, id)
	delete(cg.target, id)
	cg.dropUnusedPatterns()
	for k, o := range cg.owners {
		if o == id {
			delete(cg.owners, k)
		}
	}
}

func (cg *consumerGroup) memberIDs() []string {
	ids := make([]string, 0, len(cg.members))
	for id := range cg.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

func (cg *consumerGroup) rebuildOwners() {
	cg.owners = map[tpKey]string{}
	for id, m := range cg.members {
		for k := range m.Assigned {
			cg.owners[k] = id
		}
		for k := range m.Pending {
			cg.owners[k] = id
		}
	}
}

// setOwned replaces what m owns, keeping owners in step.
func (cg *consumerGroup) setOwned(m *cMember, assigned, pending tpSet) {
	for k := range m.Assigned {
		if cg.owners[k] == m.ID {
			delete(cg.owners, k)
		}
	}
	for k := range m.Pending {
		if cg.owners[k] == m.ID {
			delete(cg.owners, k)
		}
	}
	m.Assigned, m.Pending = assigned, pending
	at := make(map[tpKey]int32, len(assigned)+len(pending))
	for k := range assigned {
		cg.owners[k] = m.ID
		if e, ok := m.assignedAt[k]; ok {
			at[k] = e
		} else {
			at[k] = m.Epoch
		}
	}
	for k := range pending {
		cg.owners[k] = m.ID
		if e, ok := m.assignedAt[k]; ok {
			at[k] = e
		}
	}
	m.assignedAt = at
}

// StateName is Kafka's ConsumerGroupState of the group.
func (cg *consumerGroup) StateName() string {
	switch {
	case len(cg.members) == 0:
		return "Empty"
	case cg.Epoch > cg.AssignmentEpoch:
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.Epoch != cg.AssignmentEpoch || m.State != memberStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// refreshConsumerState keeps the classic fields other code reads in step:
// State (Empty or Stable, for deletion and offset expiry) and Generation
// (the group epoch, which keeps an empty group with no offsets alive).
func (g *Group) refreshConsumerState(now time.Time) {
	cg := g.consumer
	g.Generation = cg.Epoch
	s := Stable
	if len(cg.members) == 0 {
		s = Empty
	}
	if g.State != s {
		g.setState(s, now)
	}
}

// Limits of a SubscribedTopicRegex: Go's regexp matches in linear time,
// but compiling a long pattern can take much memory, and every member's
// pattern is run over every topic. Kafka (RE2/J) has no such limit; a
// pattern over them is INVALID_REGULAR_EXPRESSION as a bad one is.
const (
	maxRegexLen   = 1024
	maxRegexInsts = 10000
	// regexRefresh is how long a member's resolved topics stand before
	// its next heartbeat resolves them again, so that ACL changes are
	// seen (Kafka refreshes regexes every 10 s too).
	regexRefresh = 10 * time.Second
)

// checkRegex is why a SubscribedTopicRegex is refused, "" when it is not.
func checkRegex(re string) string {
	if len(re) > maxRegexLen {
		return "it is longer than " + strconv.Itoa(maxRegexLen) + " bytes"
	}
	parsed, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return err.Error()
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return err.Error()
	}
	if len(prog.Inst) > maxRegexInsts {
		return "it compiles to more than " + strconv.Itoa(maxRegexInsts) + " instructions"
	}
	return ""
}

// pattern is the group's compiled re, nil when it does not compile.
func (cg *consumerGroup) pattern(re string) *pattern {
	if p, ok := cg.patterns[re]; ok {
		return p
	}
	c, err := regexp.Compile(re)
	if err != nil || checkRegex(re) != "" {
		return nil // a record from elsewhere; the heartbeat refuses these
	}
	if cg.patterns == nil {
		cg.patterns = map[string]*pattern{}
	}
	p := &pattern{re: c}
	cg.patterns[re] = p
	return p
}

// dropUnusedPatterns forgets patterns no member uses any more.
func (cg *consumerGroup) dropUnusedPatterns() {
	if len(cg.patterns) == 0 {
		return
	}
	used := map[string]bool{}
	for _, m := range cg.members {
		if m.Regex != nil {
			used[*m.Regex] = true
		}
	}
	for re := range cg.patterns {
		if !used[re] {
			delete(cg.patterns, re)
		}
	}
}

// resolve brings m's regex subscription up to date in its own heartbeat:
// the pattern is matched over the topics once per topics generation for
// the whole group, and the member keeps the matches it may DESCRIBE.
// It reports whether m's topics changed.
func (cg *consumerGroup) resolve(m *cMember, topics map[string]TopicMeta, gen uint64, describable func(string) bool, now time.Time) bool {
	if m.Regex == nil {
		m.resolved, m.resolvedFrom = nil, nil
		return false
	}
	p := cg.pattern(*m.Regex)
	if p == nil {
		changed := len(m.resolved) > 0
		m.resolved, m.resolvedOK, m.resolvedFrom = nil, true, nil
		return changed
	}
	if p.gen != gen || p.matched == nil {
		p.matched = p.matched[:0:0]
		for t := range topics {
			if p.re.MatchString(t) {
				p.matched = append(p.matched, t)
			}
		}
		sort.Strings(p.matched)
		p.gen = gen
		p.runs++
	}
	if m.resolvedOK && m.resolvedFrom == p && m.resolvedGen == gen && now.Sub(m.resolvedAt) < regexRefresh {
		return false
	}
	var out []string
	for _, t := range p.matched {
		if describable == nil || describable(t) {
			out = append(out, t)
		}
	}
	changed := !m.resolvedOK || !slices.Equal(out, m.resolved)
	m.resolved, m.resolvedOK, m.resolvedFrom, m.resolvedGen, m.resolvedAt = out, true, p, gen, now
	return changed
}

// subscribed is every topic name a member subscribes to: its names, or
// what its regex resolved to.
func (cg *consumerGroup) subscribed(m *cMember, topics map[string]TopicMeta) []string {
	if m.Regex == nil {
		return m.Topics
	}
	if !m.resolvedOK {
		// Loaded from the log, not heard from since: what it was
		// given stands until its own heartbeat resolves the regex
		// with its principal.
		names := map[[16]byte]string{}
		for name, t := range topics {
			names[t.ID] = name
		}
		var out []string
		for _, t := range cg.target[m.ID].byTopic() {
			if n, ok := names[t.id]; ok {
				out = append(out, n)
			}
		}
		sort.Strings(out)
		m.resolved, m.resolvedOK = out, true
	}
	return m.resolved
}

func (cg *consumerGroup) signature(topics map[string]TopicMeta) string {
	set := map[string]bool{}
	for _, m := range cg.members {
		for _, t := range cg.subscribed(m, topics) {
			set[t] = true
		}
	}
	names := make([]string, 0, len(set))
	for t := range set {
		names = append(names, t)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, t := range names {
		tm, ok := topics[t]
		if !ok {
			continue
		}
		b.WriteString(t)
		b.WriteByte(':')
		b.Write(tm.ID[:])
		b.WriteString(strconv.Itoa(int(tm.Partitions)))
		b.WriteByte(';')
	}
	return b.String()
}

// ConsumerHeartbeatRequest is a ConsumerGroupHeartbeat with what the
// connection knows.
type ConsumerHeartbeatRequest struct {
	*kmsg.ConsumerGroupHeartbeatRequest
	ClientID, ClientHost string
	// Describable says whether the member may DESCRIBE a topic: a regex
	// subscription resolves only to those (nil: to every topic).
	Describable func(topic string) bool
}

func hbError(req *kmsg.ConsumerGroupHeartbeatRequest, code *kerr.Error, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.ErrorCode = code.Code
	if msg != "" {
		resp.ErrorMessage = &msg
	}
	return resp
}

func (gs *Groups) validAssignor(name string) bool {
	return slices.Contains(gs.cfg.Consumer.Assignors, name)
}

// ConsumerHeartbeat handles a ConsumerGroupHeartbeat. topics are the
// cluster's topics by name. reply is called once the records the
// heartbeat changed are persisted (at once when none did).
func (gs *Groups) ConsumerHeartbeat(req ConsumerHeartbeatRequest, topics map[string]TopicMeta, now time.Time, reply func(*kmsg.ConsumerGroupHeartbeatResponse)) {
	r := req.ConsumerGroupHeartbeatRequest
	fail := func(code *kerr.Error, msg string) { reply(hbError(r, code, msg)) }
	// Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid.
	switch {
	case r.Group == "" || len(r.Group) > MaxGroupIDLength:
		fail(kerr.InvalidGroupID, "GroupId can't be empty.")
		return
	case r.InstanceID != nil && *r.InstanceID == "":
		fail(kerr.InvalidRequest, "InstanceId can't be empty.")
		return
	case r.RackID != nil && *r.RackID == "":
		fail(kerr.InvalidRequest, "RackId can't be empty.")
		return
	case r.MemberID == "" && (r.MemberEpoch != 0 || r.Version >= 1):
		fail(kerr.InvalidRequest, "MemberId can't be empty.")
		return
	case r.MemberEpoch == 0 && r.RebalanceTimeoutMillis == -1:
		fail(kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request.")
		return
	case r.MemberEpoch == 0 && (r.Topics == nil || len(r.Topics) > 0):
		fail(kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining.")
		return
	case r.MemberEpoch == 0 && len(r.SubscribedTopicNames) == 0 && r.SubscribedTopicRegex == nil:
		fail(kerr.InvalidRequest, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
		return
	case r.MemberEpoch == -2 && r.InstanceID == nil:
		fail(kerr.InvalidRequest, "InstanceId can't be null.")
		return
	case r.MemberEpoch < -2:
		fail(kerr.InvalidRequest, "MemberEpoch is invalid.")
		return
	case r.ServerAssignor != nil && !gs.validAssignor(*r.ServerAssignor):
		fail(kerr.UnsupportedAssignor, "ServerAssignor "+*r.ServerAssignor+" is not supported. Supported assignors: "+strings.Join(gs.cfg.Consumer.Assignors, ", ")+".")
		return
	}
	if re := r.SubscribedTopicRegex; re != nil && *re != "" && !gs.knownPattern(r.Group, *re) {
		if why := checkRegex(*re); why != "" {
			shown := *re
			if len(shown) > 64 {
				shown = shown[:64] + "..."
			}
			fail(kerr.InvalidRegularExpression, "SubscribedTopicRegex "+shown+" is not a valid regular expression: "+why)
			return
		}
	}
	gen := gs.topicsGeneration(topics)

	g, exists := gs.Group(r.Group)
	var out []Record
	switch {
	case exists && g.consumer == nil && len(g.members) > 0 && r.MemberEpoch == 0 && gs.canUpgrade(g):
		// Online upgrade (consumer_migration.go). Every check that can
		// refuse the joiner runs first: the conversion must exist only
		// together with its records, as in Kafka, where a refusal drops
		// both; converting and then refusing left memory a consumer group
		// while the log still said classic.
		if gs.customAssignorData(g) {
			fail(kerr.GroupIDNotFound, "Cannot upgrade classic group "+r.Group+" to consumer group because an unsupported custom assignor is in use. Please refer to the documentation or switch to a default assignor before re-attempting the upgrade.")
			return
		}
		if g.members[r.MemberID] != nil {
			fail(kerr.UnknownMemberID, "Member "+r.MemberID+" uses the classic protocol.")
			return
		}
		if len(g.members) >= gs.cfg.Consumer.MaxSize {
			fail(kerr.GroupMaxSizeReached, "The consumer group has reached its maximum capacity of "+strconv.Itoa(gs.cfg.Consumer.MaxSize)+" members.")
			return
		}
		out = append(out, gs.upgrade(g, topics, now)...)
	case exists && g.consumer == nil && (len(g.members) > 0 || len(g.pending) > 0):
		fail(kerr.GroupIDNotFound, "Group "+r.Group+" is not a consumer group.")
		return
	case !exists && r.MemberEpoch != 0:
		fail(kerr.UnknownMemberID, "Group "+r.Group+" does not exist.")
		return
	case exists && g.consumer == nil:
		// An empty classic group becomes a consumer group, as in Kafka:
		// its classic record is deleted, its offsets stay.
		out = append(out, Record{Key: groupKey(g.ID)})
	}
	g = gs.getOrCreate(r.Group, now)
	cg := g.consumerState()
	if cg.Assignor == "" {
		cg.Assignor = gs.cfg.Consumer.Assignors[0]
	}

	if r.MemberEpoch == -1 || r.MemberEpoch == -2 {
		gs.consumerLeave(g, r, now, out, reply)
		return
	}

	m, known := cg.members[r.MemberID]
	bump := false
	switch {
	case known && m.Classic != nil:
		fail(kerr.UnknownMemberID, "Member "+r.MemberID+" uses the classic protocol.")
		return
	case r.MemberEpoch == 0 && known && m.Epoch == -2:
		// A static member back under its old id: as a rejoin below.
	case r.MemberEpoch == 0:
		if !known && len(cg.members) >= gs.cfg.Consumer.MaxSize {
			fail(kerr.GroupMaxSizeReached, "The consumer group has reached its maximum capacity of "+strconv.Itoa(gs.cfg.Consumer.MaxSize)+" members.")
			return
		}
	case !known:
		if r.InstanceID != nil && cg.static[*r.InstanceID] != "" && cg.static[*r.InstanceID] != r.MemberID {
			fail(kerr.FencedInstanceID, "")
			return
		}
		fail(kerr.UnknownMemberID, "Member "+r.MemberID+" is not a member of group "+r.Group+".")
		return
	case r.MemberEpoch != m.Epoch:
		if r.MemberEpoch != m.PrevEpoch || r.Topics == nil || !ownedSubset(r.Topics, m.Assigned) {
			fail(kerr.FencedMemberEpoch, "The consumer group member has a smaller member epoch ("+strconv.Itoa(int(r.MemberEpoch))+") than the one known by the group coordinator ("+strconv.Itoa(int(m.Epoch))+"). The member must abandon all its partitions and rejoin.")
			return
		}
	}

	// What the log holds of the member before this heartbeat: a static
	// member taking an old one's place, or coming back from epoch -2,
	// changes its assignment state in the rejoin block below, and a
	// coordinator that reloads must see that too.
	var before [3]int32
	var beforeAssigned, beforePending tpSet
	if known {
		before = [3]int32{m.Epoch, m.PrevEpoch, int32(m.State)}
		beforeAssigned, beforePending = m.Assigned, m.Pending
	}
	inherited := false

	memberID := r.MemberID
	if memberID == "" {
		memberID = newUUIDString()
	}
	if r.MemberEpoch == 0 {
		var inherit *cMember
		if r.InstanceID != nil {
			if old, ok := cg.static[*r.InstanceID]; ok && old != memberID {
				om := cg.members[old]
				// A classic static member never leaves with -2: a
				// consumer-protocol member with its instance id
				// replaces it at once (a static member upgraded by a
				// restart), as in Kafka.
				if om != nil && om.Epoch != -2 && om.Classic == nil {
					fail(kerr.UnreleasedInstanceID, "Static member "+old+" with instance id "+*r.InstanceID+" is not released yet.")
					return
				}
				inherit = om
			}
		}
		if inherit != nil {
			// KIP-345 for consumer groups: the new member takes the
			// old one's place, assignment and epoch, without a new
			// group epoch unless its subscription differs.
			m, inherited = cg.member(memberID, now), true
			m.Epoch, m.PrevEpoch, m.State = inherit.Epoch, inherit.PrevEpoch, inherit.State
			if m.Epoch == -2 {
				m.Epoch = inherit.PrevEpoch
			}
			m.Topics, m.Regex, m.Assignor = inherit.Topics, inherit.Regex, inherit.Assignor
			assigned, pending := inherit.Assigned, inherit.Pending
			cg.target[memberID] = cg.target[inherit.ID]
			out = append(out, cg.memberTombstones(g.ID, inherit.ID)...)
			cg.drop(inherit.ID)
			cg.setOwned(m, assigned, pending)
			out = append(out, Record{Key: cgKey(cgTargetMemberKey, g.ID, memberID, true), Value: targetValue(cg.target[memberID])})
		} else if known && m.Epoch == -2 {
			m.Epoch = m.PrevEpoch
		} else if known {
			// A member fenced or rejoining: it gave up its partitions
			// (the client calls onPartitionsLost before it rejoins).
			cg.setOwned(m, tpSet{}, tpSet{})
			m.Epoch, m.PrevEpoch, m.State = 0, 0, memberStable
		} else {
			m = cg.member(memberID, now)
			bump = true
		}
		if r.InstanceID != nil {
			cg.static[*r.InstanceID] = memberID
		}
	}
	m.lastSeen = now

	// Update the member from the request: a field left null is unchanged.
	metaChanged := r.MemberEpoch == 0
	if r.InstanceID != nil && (m.InstanceID == nil || *m.InstanceID != *r.InstanceID) {
		m.InstanceID, metaChanged = r.InstanceID, true
	}
	if r.RackID != nil && (m.RackID == nil || *m.RackID != *r.RackID) {
		m.RackID, metaChanged = r.RackID, true
	}
	if req.ClientID != m.ClientID || req.ClientHost != m.ClientHost {
		m.ClientID, m.ClientHost, metaChanged = req.ClientID, req.ClientHost, true
	}
	if r.RebalanceTimeoutMillis > 0 && r.RebalanceTimeoutMillis != m.RebalanceTimeout {
		m.RebalanceTimeout, metaChanged = r.RebalanceTimeoutMillis, true
	}
	if r.SubscribedTopicNames != nil {
		ts := slices.Clone(r.SubscribedTopicNames)
		sort.Strings(ts)
		ts = slices.Compact(ts)
		if !slices.Equal(ts, m.Topics) {
			m.Topics, bump, metaChanged = ts, true, true
		}
	}
	if r.SubscribedTopicRegex != nil {
		re := r.SubscribedTopicRegex
		if *re == "" {
			re = nil
		}
		if (re == nil) != (m.Regex == nil) || re != nil && *re != *m.Regex {
			m.Regex, m.resolvedOK, bump, metaChanged = re, false, true, true
			cg.dropUnusedPatterns()
		}
	}
	resolvedChanged := cg.resolve(m, topics, gen, req.Describable, now)
	if r.ServerAssignor != nil && (m.Assignor == nil || *m.Assignor != *r.ServerAssignor) {
		m.Assignor, bump, metaChanged = r.ServerAssignor, true, true
	}
	if metaChanged {
		out = append(out, Record{Key: cgKey(cgMemberKey, g.ID, m.ID, true), Value: m.metadataValue()})
	}

	out = append(out, gs.nextEpoch(g, topics, gen, bump, resolvedChanged)...)

	var owned tpSet
	if r.Topics != nil {
		owned = ownedSet(r.Topics)
	}
	cg.reconcile(m, owned, now)
	changed := inherited || before != [3]int32{m.Epoch, m.PrevEpoch, int32(m.State)} || !m.Assigned.equal(beforeAssigned) || !m.Pending.equal(beforePending)
	if changed {
		out = append(out, Record{Key: cgKey(cgCurrentAssignKey, g.ID, m.ID, true), Value: m.currentValue()})
	}
	g.refreshConsumerState(now)

	resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.MemberID = &m.ID
	resp.MemberEpoch = m.Epoch
	_, hb := gs.consumerTimeouts(g.ID)
	resp.HeartbeatIntervalMillis = int32(hb.Milliseconds())
	// The assignment goes out when it changed, on a (re)join, and when
	// what the member reports owning is not what it is given: a client
	// that missed a response learns it again.
	if changed || r.MemberEpoch == 0 || (owned != nil && !owned.equal(m.Assigned)) {
		a := &kmsg.ConsumerGroupHeartbeatResponseAssignment{}
		for _, t := range m.Assigned.byTopic() {
			a.Topics = append(a.Topics, kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{TopicID: t.id, Partitions: t.parts})
		}
		if a.Topics == nil {
			a.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
		}
		resp.Assignment = a
	}
	gs.writeConsumer(g, out, func(err error) {
		if err != nil {
			reply(hbError(r, kerr.ErrorForCode(commitErrorCode(err)).(*kerr.Error), ""))
			return
		}
		reply(resp)
	})
}

// writeConsumer queues a group's records; done runs after the append (at
// once when there are none).
func (gs *Groups) writeConsumer(g *Group, rs []Record, done func(error)) {
	if len(rs) == 0 {
		done(nil)
		return
	}
	gs.writes = append(gs.writes, Write{Partition: gs.Partition(g.ID), Records: rs, Done: done})
}

func (gs *Groups) consumerLeave(g *Group, r *kmsg.ConsumerGroupHeartbeatRequest, now time.Time, out []Record, reply func(*kmsg.ConsumerGroupHeartbeatResponse)) {
	cg := g.consumer
	m, ok := cg.members[r.MemberID]
	if !ok {
		reply(hbError(r, kerr.UnknownMemberID, "Member "+r.MemberID+" is not a member of group "+r.Group+"."))
		return
	}
	resp := r.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
	resp.MemberID, resp.MemberEpoch = &m.ID, r.MemberEpoch
	if r.MemberEpoch == -2 && m.InstanceID != nil {
		// A static member leaving for a while (KIP-345): it keeps its
		// place and partitions until its session times out, so that
		// coming back costs no rebalance.
		if m.Epoch != -2 {
			m.PrevEpoch, m.Epoch = m.Epoch, -2
		}
		m.lastSeen = now
		out = append(out, Record{Key: cgKey(cgCurrentAssignKey, g.ID, m.ID, true), Value: m.currentValue()})
		gs.writeConsumer(g, out, func(error) { reply(resp) })
		return
	}
	out = append(out, gs.removeConsumerMember(g, m, now)...)
	gs.writeConsumer(g, out, func(error) { reply(resp) })
}

// removeConsumerMember drops a member (left, expired or fenced) and starts
// a new group epoch; it returns the records that say so.
func (gs *Groups) removeConsumerMember(g *Group, m *cMember, now time.Time) []Record {
	if gs.downgradeOnLeave(g, m) {
		return gs.downgrade(g, m, gs.topicsNow(), now)
	}
	cg := g.consumer
	out := cg.memberTombstones(g.ID, m.ID)
	cg.drop(m.ID)
	cg.Epoch++
	out = append(out, cg.epochRecord(g.ID, gs.topicsNow()))
	g.refreshConsumerState(now)
	return out
}

func ownedSet(ts []kmsg.ConsumerGroupHeartbeatRequestTopic) tpSet {
	out := tpSet{}
	for _, t := range ts {
		for _, p := range t.Partitions {
			out[tpKey{t.TopicID, p}] = struct{}{}
		}
	}
	return out
}

func ownedSubset(ts []kmsg.ConsumerGroupHeartbeatRequestTopic, of tpSet) bool {
	for k := range ownedSet(ts) {
		if _, ok := of[k]; !ok {
			return false
		}
	}
	return true
}

// reconcile moves m towards its target assignment, Kafka's
// CurrentAssignmentBuilder. owned is what the member reported owning, nil
// when it did not say.
func (cg *consumerGroup) reconcile(m *cMember, owned tpSet, now time.Time) {
	if m.Epoch == -2 {
		return
	}
	switch m.State {
	case memberUnrevoked:
		if owned == nil {
			return
		}
		for k := range m.Pending {
			if _, still := owned[k]; still {
				return // not revoked yet
			}
		}
		cg.advance(m, now)
	case memberUnreleased:
		cg.advance(m, now)
	default:
		if m.Epoch != cg.AssignmentEpoch {
			cg.advance(m, now)
		}
	}
}

// advance computes m's next assignment from its target: revocations
// first, then the target's epoch with the partitions that are free.
func (cg *consumerGroup) advance(m *cMember, now time.Time) {
	target := cg.target[m.ID]
	retained, revoke := tpSet{}, tpSet{}
	for k := range m.Assigned {
		if _, ok := target[k]; ok {
			retained[k] = struct{}{}
		} else {
			revoke[k] = struct{}{}
		}
	}
	if len(revoke) > 0 {
		cg.setOwned(m, retained, revoke)
		m.State = memberUnrevoked
		timeout := time.Duration(m.RebalanceTimeout) * time.Millisecond
		if timeout <= 0 {
			timeout = 5 * time.Minute // the Java client's default max.poll.interval.ms
		}
		m.revokeDeadline = now.Add(timeout)
		return
	}
	assigned, unreleased := tpSet{}, false
	for k := range target {
		if o, ok := cg.owners[k]; ok && o != m.ID {
			unreleased = true
			continue
		}
		assigned[k] = struct{}{}
	}
	if m.Epoch != cg.AssignmentEpoch {
		m.PrevEpoch, m.Epoch = m.Epoch, cg.AssignmentEpoch
	}
	cg.setOwned(m, assigned, tpSet{})
	m.State = memberStable
	if unreleased {
		m.State = memberUnreleased
	}
}

// nextEpoch is how a consumer-protocol heartbeat and a classic join of a
// consumer group move the group on, one way for both so the two protocols
// bump the same epochs: a new epoch when bump says membership or
// subscriptions changed, or when the subscribed topics' signature moved,
// then a new target assignment while the epoch is ahead of it. The
// signature costs a pass over every member's topics, so it is checked only
// when bump or recheck (a member's resolved topics changed) say something
// it is made of may have changed, or the topics changed since gen.
func (gs *Groups) nextEpoch(g *Group, topics map[string]TopicMeta, gen uint64, bump, recheck bool) []Record {
	cg := g.consumer
	var out []Record
	if bump || recheck || cg.sigGen != gen {
		if hashSig(cg.signature(topics)) != cg.topicsHash {
			bump = true
		}
		cg.sigGen = gen
	}
	if bump {
		cg.Epoch++
		out = append(out, cg.epochRecord(g.ID, topics))
	}
	if cg.Epoch > cg.AssignmentEpoch {
		out = append(out, gs.computeTarget(g, topics)...)
	}
	return out
}

// computeTarget runs the group's assignor over every member and returns
// the records of the targets that changed and of the assignment epoch.
func (gs *Groups) computeTarget(g *Group, topics map[string]TopicMeta) []Record {
	cg := g.consumer
	assignor := cg.Assignor
	subs := map[string][]string{}
	var ids []string
	for _, id := range cg.memberIDs() {
		m := cg.members[id]
		if m.Assignor != nil {
			assignor = *m.Assignor // the last member's choice, as Kafka's most used one, when they differ
		}
		var ts []string
		for _, t := range cg.subscribed(m, topics) {
			if _, ok := topics[t]; ok {
				ts = append(ts, t)
			}
		}
		subs[id] = ts
		ids = append(ids, id)
	}
	cg.Assignor = assignor
	var next map[string]tpSet
	if assignor == "range" {
		next = assignRange(ids, subs, topics, cg.members)
	} else {
		next = assignUniform(ids, subs, topics, cg.target)
	}
	var out []Record
	for _, id := range ids {
		if !next[id].equal(cg.target[id]) || cg.target[id] == nil {
			out = append(out, Record{Key: cgKey(cgTargetMemberKey, g.ID, id, true), Value: targetValue(next[id])})
		}
	}
	cg.target = next
	cg.AssignmentEpoch = cg.Epoch
	cg.topicsHash = hashSig(cg.signature(topics))
	cg.sigGen = 0 // computeTarget does not know the generation; the next heartbeat checks again
	return append(out, Record{Key: cgKey(cgTargetMetaKey, g.ID, "", false), Value: epochValue(cg.AssignmentEpoch)})
}

// TickConsumer expires members whose session ran out (no heartbeat for
// group.consumer.session.timeout.ms, or a static member away that long)
// and members that did not revoke within their rebalance timeout.
func (gs *Groups) TickConsumer(now time.Time) {
	for _, g := range gs.All() {
		cg := g.consumer
		if cg == nil {
			continue
		}
		var out []Record
		for _, id := range cg.memberIDs() {
			m := cg.members[id]
			expired := !now.Before(m.lastSeen.Add(gs.sessionTimeout(g.ID, m)))
			stuck := m.State == memberUnrevoked && m.Epoch != -2 && !now.Before(m.revokeDeadline)
			if expired || stuck || m.classicLate(now) {
				out = append(out, gs.removeConsumerMember(g, m, now)...)
				if g.consumer == nil {
					break // downgraded to a classic group
				}
			}
		}
		if len(out) > 0 {
			// The other members get their new targets on their next
			// heartbeat, which the new epoch makes them compute.
			gs.writeConsumer(g, out, func(error) {})
		}
	}
}

// CheckConsumerCommit is ConsumerGroup.validateOffsetCommit: nil when the
// commit may proceed.
func (g *Group) checkConsumerCommit(c Commit, transactional bool) *kerr.Error {
	cg := g.consumer
	if c.Generation < 0 && len(cg.members) == 0 {
		return nil
	}
	m, ok := cg.members[c.MemberID]
	switch {
	case !ok:
		return kerr.UnknownMemberID
	case m.Classic != nil && c.Generation != m.Epoch:
		return kerr.IllegalGeneration
	case m.Classic != nil:
		return nil
	case !transactional && c.Version < 9:
		return kerr.UnsupportedVersion
	case c.Generation > m.Epoch || c.Generation < 0:
		return kerr.StaleMemberEpoch
	}
	return nil // an older epoch is judged per partition: staleConsumerCommit
}

// staleConsumerCommit is KIP-1251's check of one partition of a commit
// that checkConsumerCommit let through: with the member's current epoch
// any partition; with an older one only a partition the member has owned
// since that epoch. mu must be held.
func (c *Coordinator) staleConsumerCommit(group, memberID string, epoch int32, topic string, partition int32) bool {
	g, ok := c.gs.Group(group)
	if !ok || g.consumer == nil {
		return false
	}
	m, ok := g.consumer.members[memberID]
	if !ok || epoch == m.Epoch {
		return false
	}
	at, ok := m.assignedAt[tpKey{c.topicsView()[topic].ID, partition}]
	return !ok || at > epoch
}

// CheckConsumerFetch is ConsumerGroup.validateOffsetFetch.
func (gs *Groups) CheckConsumerFetch(group, memberID string, epoch int32) *kerr.Error {
	g, ok := gs.Group(group)
	if !ok || g.consumer == nil || memberID == "" && epoch < 0 {
		return nil
	}
	m, ok := g.consumer.members[memberID]
	switch {
	case !ok:
		return kerr.UnknownMemberID
	case epoch != m.Epoch && m.Classic != nil:
		return kerr.IllegalGeneration
	case epoch != m.Epoch:
		return kerr.StaleMemberEpoch
	}
	return nil
}

// newUUIDString is a member id as Kafka makes them: a random UUID in
// URL-safe base64.
func newUUIDString() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// knownPattern is whether re is already a pattern of group, checked when
// it was first given: a member repeating its regex costs no parse.
func (gs *Groups) knownPattern(group, re string) bool {
	g, ok := gs.groups[group]
	return ok && g.consumer != nil && g.consumer.patterns[re] != nil
}

// topicsGeneration numbers the topic maps heartbeats are given: the
// coordinator gives the same map until the topics change (topicsView), so
// a new map is a new generation, and cached regex matches are redone.
func (gs *Groups) topicsGeneration(topics map[string]TopicMeta) uint64 {
	if p := reflect.ValueOf(topics).Pointer(); p != gs.topicsOf || gs.topicsGen == 0 {
		gs.topicsOf = p
		gs.topicsGen++
	}
	return gs.topicsGen
}
