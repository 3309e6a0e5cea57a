package share

import (
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Membership of share groups (KIP-932's ShareGroupHeartbeat). A share
// group has no rebalance and no revocation: any number of members may
// read the same partition, so a member's assignment is given at once. The
// assignor is Kafka's `simple` one (assign.go), recomputed whenever the
// group epoch moves.

// TopicMeta is what the assignor needs of a topic.
type TopicMeta struct {
	ID         [16]byte
	Partitions int32
}

type member struct {
	id, clientID, clientHost string
	rack                     *string
	epoch, prevEpoch         int32
	topics                   []string // sorted
	assigned                 map[[16]byte][]int32
	lastSeen                 time.Time
}

type group struct {
	id      string
	epoch   int32
	members map[string]*member
	// shape is the subscribed topics' ids and partition counts at the
	// group epoch: a topic created, deleted or grown moves the epoch.
	shape map[string]TopicMeta
	// ready is the partitions whose share state the coordinator
	// initialized (init.go); the others are held back from the
	// assignment. nil: nothing is held back (no store).
	ready map[tpKey]bool
	// checked is the group epoch at which every subscribed partition was
	// found initialized: heartbeats at that epoch skip the check.
	checked int32

	// Persistence (persist.go): the group's __consumer_offsets
	// partition, its records as last written at group epoch
	// writtenEpoch (record type and member id to a hash of the value:
	// the group id, up to 32 KiB, is implicit, so a record costs a map
	// entry with the member id, at most 36 bytes, and an 8-byte hash), the
	// MetadataHash it was loaded with, where its share state is (the
	// type-15 record), and since when it has had no member.
	part         int32
	written      map[recID]uint64
	writtenEpoch int32
	loadedHash   int64
	state        statePart
	emptySince   time.Time
	// deleting: its tombstones are on their way; no member joins.
	deleting bool
	// lastWrite is the group's latest save, which a heartbeat with
	// nothing to write waits for.
	lastWrite *pendingWrite
}

// HeartbeatRequest is a ShareGroupHeartbeat with who sent it.
type HeartbeatRequest struct {
	*kmsg.ShareGroupHeartbeatRequest
	ClientID, ClientHost string
	// Partition is the group's __consumer_offsets partition and Gen the
	// generation the coordinator had it loaded at when it let the
	// request in (persist.go).
	Partition int32
	Gen       uint64
}

func (g *group) subscribed() []string {
	var all []string
	for _, m := range g.members {
		all = append(all, m.topics...)
	}
	slices.Sort(all)
	return slices.Compact(all)
}

// refresh moves the group epoch when membership, subscriptions or the
// subscribed topics changed. changed says membership or subscriptions did.
func (g *group) refresh(topics map[string]TopicMeta, changed bool) {
	shape := map[string]TopicMeta{}
	for _, t := range g.subscribed() {
		if tm, ok := topics[t]; ok {
			shape[t] = tm
		}
	}
	if changed || len(shape) != len(g.shape) || !sameShape(shape, g.shape) {
		g.epoch++
		g.shape = shape
		g.assign()
	}
}

func sameShape(a, b map[string]TopicMeta) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// assignment is the member's share of its topics' partitions (assign.go),
// topic by topic in the order of its subscription.
func (g *group) assignment(m *member) []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition {
	out := []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{}
	for _, t := range m.topics {
		tm, ok := g.shape[t]
		if !ok || len(m.assigned[tm.ID]) == 0 {
			continue
		}
		tp := kmsg.NewShareGroupHeartbeatResponseAssignmentTopicPartition()
		tp.TopicID = tm.ID
		tp.Partitions = slices.Clone(m.assigned[tm.ID])
		out = append(out, tp)
	}
	return out
}

// heartbeat applies one ShareGroupHeartbeat to the group, as Kafka's
// GroupMetadataManager.shareGroupHeartbeat: epoch 0 joins (or rejoins),
// -1 leaves, anything else must be the member's epoch or the one before
// (a response lost on the way). left is the member that left, if any.
func (g *group) heartbeat(req HeartbeatRequest, topics map[string]TopicMeta, now time.Time, maxSize int, interval time.Duration) (resp *kmsg.ShareGroupHeartbeatResponse, left string) {
	resp = req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
	resp.HeartbeatIntervalMillis = int32(interval / time.Millisecond)
	fail := func(e *kerr.Error, msg string) (*kmsg.ShareGroupHeartbeatResponse, string) {
		resp.ErrorCode = e.Code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		resp.HeartbeatIntervalMillis = 0
		return resp, ""
	}
	if req.MemberID == "" || len(req.MemberID) > 36 {
		return fail(kerr.InvalidRequest, "MemberId can't be empty.")
	}
	if req.MemberEpoch < -1 {
		return fail(kerr.InvalidRequest, "MemberEpoch is invalid.")
	}
	if msg := badSubscription(req.SubscribedTopicNames); msg != "" {
		return fail(kerr.InvalidRequest, msg)
	}
	if n := namesSize(req.SubscribedTopicNames); n > maxSubscriptionBytes {
		// The member's record carries its subscription: one that no
		// __consumer_offsets batch can hold would fail every later
		// write of the group with it (persist.go).
		return fail(kerr.InvalidRequest, "SubscribedTopicNames is too large ("+itoa(n)+" bytes).")
	}
	m := g.members[req.MemberID]
	switch req.MemberEpoch {
	case -1:
		if m == nil {
			return fail(kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+g.id+".")
		}
		delete(g.members, m.id)
		g.refresh(topics, true)
		resp.MemberID, resp.MemberEpoch = &req.MemberID, -1
		return resp, m.id
	case 0:
		if len(req.SubscribedTopicNames) == 0 {
			return fail(kerr.InvalidRequest, "SubscribedTopicNames must be set in first request.")
		}
		if m == nil {
			if len(g.members) >= maxSize {
				return fail(kerr.GroupMaxSizeReached, "The share group has reached its maximum capacity of "+itoa(maxSize)+" members.")
			}
			m = &member{id: req.MemberID}
			g.members[m.id] = m
		}
		changed := m.epoch == 0
		if t := sortedTopics(req.SubscribedTopicNames); !slices.Equal(t, m.topics) {
			m.topics, changed = t, true
		}
		g.refresh(topics, changed)
	default:
		if m == nil {
			return fail(kerr.UnknownMemberID, "Member "+req.MemberID+" is not a member of group "+g.id+".")
		}
		if req.MemberEpoch != m.epoch && req.MemberEpoch != m.prevEpoch {
			return fail(kerr.FencedMemberEpoch, "The share group member has a smaller or larger member epoch ("+itoa(int(req.MemberEpoch))+") than the one known by the group coordinator ("+itoa(int(m.epoch))+").")
		}
		changed := false
		if req.SubscribedTopicNames != nil {
			if t := sortedTopics(req.SubscribedTopicNames); !slices.Equal(t, m.topics) {
				m.topics, changed = t, true
			}
		}
		g.refresh(topics, changed)
	}
	m.clientID, m.clientHost, m.lastSeen = req.ClientID, req.ClientHost, now
	if req.RackID != nil {
		m.rack = req.RackID
	}
	bumped := m.epoch != g.epoch
	if bumped {
		m.prevEpoch, m.epoch = m.epoch, g.epoch
	}
	resp.MemberID, resp.MemberEpoch = &req.MemberID, m.epoch
	if bumped || req.MemberEpoch == 0 || req.SubscribedTopicNames != nil {
		resp.Assignment = &kmsg.ShareGroupHeartbeatResponseAssignment{TopicPartitions: g.assignment(m)}
	}
	return resp, ""
}

// expire removes the members not heard from within timeout.
func (g *group) expire(now time.Time, timeout time.Duration, topics map[string]TopicMeta) []string {
	var gone []string
	for id, m := range g.members {
		if now.Sub(m.lastSeen) >= timeout {
			delete(g.members, id)
			gone = append(gone, id)
		}
	}
	if len(gone) > 0 {
		g.refresh(topics, true)
	}
	return gone
}

// describe is the group as ShareGroupDescribe shows it.
func (g *group) describe(names map[[16]byte]string) kmsg.ShareGroupDescribeResponseGroup {
	d := kmsg.NewShareGroupDescribeResponseGroup()
	d.GroupID, d.GroupEpoch, d.AssignmentEpoch, d.Assignor = g.id, g.epoch, g.epoch, "simple"
	d.GroupState = g.stateName()
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		m := g.members[id]
		dm := kmsg.NewShareGroupDescribeResponseGroupMember()
		dm.MemberID, dm.RackID, dm.MemberEpoch, dm.ClientID, dm.ClientHost = m.id, m.rack, m.epoch, m.clientID, m.clientHost
		dm.SubscribedTopicNames = slices.Clone(m.topics)
		for _, tp := range g.assignment(m) {
			at := kmsg.NewShareGroupDescribeResponseGroupMemberAssignmentTopicPartition()
			at.TopicID, at.Topic, at.Partitions = tp.TopicID, names[tp.TopicID], tp.Partitions
			dm.Assignment.TopicPartitions = append(dm.Assignment.TopicPartitions, at)
		}
		d.Members = append(d.Members, dm)
	}
	return d
}

// stateName is Kafka's ShareGroupState: Empty or Stable (a share group
// has no rebalance to be in).
func (g *group) stateName() string {
	if len(g.members) == 0 {
		return "Empty"
	}
	return "Stable"
}

func sortedTopics(ts []string) []string {
	out := slices.Clone(ts)
	slices.Sort(out)
	return slices.Compact(out)
}

func itoa(n int) string { return strconv.Itoa(n) }

// maxSubscriptionBytes bounds a member's subscribed topic names (the
// names' bytes), well under __consumer_offsets' max.message.bytes
// (1 MiB) that the member's records must fit in: about 500 names of the
// longest legal length, or thousands of usual ones.
const maxSubscriptionBytes = 128 << 10

func namesSize(names []string) int {
	n := 0
	for _, s := range names {
		n += len(s) + 2
	}
	return n

}

// maxSubscribedTopics bounds a member's subscription: its names are kept
// and written in one record (type 10), which with at most 249 bytes a
// name stays far under __consumer_offsets' 1 MiB batch limit.
const maxSubscribedTopics = 2000

// badSubscription says why a subscription is refused ("" if it is not),
// by Kafka's topic name rules (at most 249 characters, not empty): a
// name no topic can have would only cost memory and log space.
func badSubscription(names []string) string {
	if len(names) > maxSubscribedTopics {
		return "SubscribedTopicNames has more than " + itoa(maxSubscribedTopics) + " topics."
	}
	for _, n := range names {
		if n == "" || len(n) > 249 {
			return "SubscribedTopicNames has an invalid topic name: a name is 1 to 249 characters."
		}
	}
	return ""
}
