package group

import (
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicPartition names one partition whose offset a group commits.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Offset is a committed offset.
type Offset struct {
	Offset          int64
	LeaderEpoch     int32
	Metadata        string
	CommitTimestamp int64 // ms
	ExpireTimestamp int64 // ms; -1 unless the commit asked for a retention (v2-v4)
}

// OffsetAt pairs a partition with an offset to commit.
type OffsetAt struct {
	TopicPartition
	Offset
}

// Commit is who commits: generation -1 with no member id is a "simple"
// commit from a client that uses no group membership.
type Commit struct {
	Version    int16 // of the OffsetCommit request
	Group      string
	Generation int32
	MemberID   string
	InstanceID *string
}

// CheckCommit is Kafka 4's validateOffsetCommit for classic groups: nil
// when the commit may proceed.
func (gs *Groups) CheckCommit(c Commit) *kerr.Error {
	if c.Group == "" || len(c.Group) > MaxGroupIDLength {
		return kerr.InvalidGroupID
	}
	g, ok := gs.Group(c.Group)
	switch {
	case !ok && c.Generation < 0:
		return nil // a simple group, created by the commit
	case !ok && c.Version >= 9:
		return kerr.GroupIDNotFound
	case !ok:
		return kerr.IllegalGeneration
	case g.consumer != nil:
		return g.checkConsumerCommit(c, false)
	case c.Generation < 0 && g.State == Empty:
		return nil
	}
	if c.Generation >= 0 || c.MemberID != "" || c.InstanceID != nil {
		if code := g.validateMember(c.MemberID, c.InstanceID); code != nil {
			return code
		}
		if c.Generation != g.Generation {
			return kerr.IllegalGeneration
		}
	} else if g.State != Empty {
		return kerr.UnknownMemberID
	}
	if g.State == CompletingRebalance {
		return kerr.RebalanceInProgress
	}
	return nil
}

// Commit queues offsets that CheckCommit allowed. They are applied, and
// done called, after the append; a failed append changes nothing.
func (gs *Groups) Commit(c Commit, offsets []OffsetAt, now time.Time, done func(error)) {
	if len(offsets) == 0 {
		done(nil)
		return
	}
	if g, ok := gs.Group(c.Group); ok {
		if m := g.members[c.MemberID]; m != nil {
			m.lastSeen = now // a commit counts as a heartbeat
		}
	}
	w := Write{Partition: gs.Partition(c.Group)}
	for _, o := range offsets {
		w.Records = append(w.Records, Record{Key: offsetKey(c.Group, o.TopicPartition), Value: offsetValue(o.Offset)})
	}
	w.Done = func(err error) {
		if err == nil {
			g := gs.getOrCreate(c.Group, now)
			for _, o := range offsets {
				g.offsets[o.TopicPartition] = o.Offset
			}
		}
		done(err)
	}
	gs.writes = append(gs.writes, w)
}

// Offsets is the group's committed offsets (nil for an unknown group). The
// map is the group's own: read it only.
func (gs *Groups) Offsets(group string) map[TopicPartition]Offset {
	if g, ok := gs.Group(group); ok {
		return g.offsets
	}
	return nil
}

// DeleteOffsets is OffsetDelete: the top-level error, or one per partition.
// Offsets of topics the group's consumers subscribe to cannot be deleted.
func (gs *Groups) DeleteOffsets(group string, tps []TopicPartition, now time.Time, done func(error)) (*kerr.Error, []*kerr.Error) {
	if group == "" || len(group) > MaxGroupIDLength {
		return kerr.InvalidGroupID, nil
	}
	g, ok := gs.Group(group)
	if !ok {
		return kerr.GroupIDNotFound, nil
	}
	subscribed := map[string]bool{}
	if g.State != Empty {
		if g.ProtocolType != "consumer" {
			return kerr.NonEmptyGroup, nil
		}
		subscribed = g.subscribedTopics()
	}
	codes := make([]*kerr.Error, len(tps))
	w := Write{Partition: gs.Partition(group)}
	var gone []TopicPartition
	for i, tp := range tps {
		if subscribed[tp.Topic] {
			codes[i] = kerr.GroupSubscribedToTopic
			continue
		}
		if _, ok := g.offsets[tp]; ok {
			w.Records = append(w.Records, Record{Key: offsetKey(group, tp)})
			gone = append(gone, tp)
		}
	}
	if len(w.Records) == 0 {
		done(nil)
		return nil, codes
	}
	w.Done = func(err error) {
		if err == nil {
			for _, tp := range gone {
				delete(g.offsets, tp)
			}
		}
		done(err)
	}
	gs.writes = append(gs.writes, w)
	return nil, codes
}

// subscribedTopics reads the consumer protocol's subscriptions of every
// member for the chosen protocol.
func (g *Group) subscribedTopics() map[string]bool {
	out := map[string]bool{}
	if g.consumer != nil {
		return g.consumer.subscribedTopics()
	}
	for _, m := range g.members {
		var meta kmsg.ConsumerMemberMetadata
		if err := meta.ReadFrom(m.metadata(g.Protocol)); err == nil {
			for _, t := range meta.Topics {
				out[t] = true
			}
		}
	}
	return out
}

// DeleteGroup is DeleteGroups for one group: tombstones for its offsets and
// metadata; the group is dead once they are appended.
func (gs *Groups) DeleteGroup(group string, now time.Time, done func(error)) *kerr.Error {
	if group == "" || len(group) > MaxGroupIDLength {
		return kerr.InvalidGroupID
	}
	g, ok := gs.Group(group)
	switch {
	case !ok:
		return kerr.GroupIDNotFound
	case g.State != Empty:
		return kerr.NonEmptyGroup
	}
	gs.writes = append(gs.writes, Write{Partition: gs.Partition(group), Records: g.tombstones(), Done: func(err error) {
		if err == nil {
			g.setState(Dead, now)
			delete(gs.groups, group)
		}
		done(err)
	}})
	return nil
}

func (g *Group) tombstones() []Record {
	var rs []Record
	for _, tp := range sortedTPs(g.offsets) {
		rs = append(rs, Record{Key: offsetKey(g.ID, tp)})
	}
	if g.consumer != nil {
		return append(rs, g.consumer.tombstones(g.ID)...)
	}
	return append(rs, Record{Key: groupKey(g.ID)})
}

func sortedTPs(m map[TopicPartition]Offset) []TopicPartition {
	out := make([]TopicPartition, 0, len(m))
	for tp := range m {
		out = append(out, tp)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// ExpireOffsets drops offsets older than offsets.retention.minutes, as
// Kafka's cleanupGroupMetadata: those of an empty group count from when it
// became empty (from the commit for groups that never had members); those of
// a stable consumer group only for topics it no longer subscribes to. An
// empty group left without offsets is deleted.
func (gs *Groups) ExpireOffsets(now time.Time) {
	nowMs := now.UnixMilli()
	retention := gs.cfg.OffsetsRetention.Milliseconds()
	for _, g := range gs.All() {
		var subscribed map[string]bool
		switch {
		case g.State == Empty:
		case g.State == Stable && g.ProtocolType == "consumer":
			subscribed = g.subscribedTopics()
		default:
			continue
		}
		var expired []TopicPartition
		for _, tp := range sortedTPs(g.offsets) {
			o := g.offsets[tp]
			if subscribed[tp.Topic] {
				continue
			}
			base := o.CommitTimestamp
			if g.State == Empty && g.ProtocolType != "" {
				base = g.StateTime.UnixMilli()
			}
			if (o.ExpireTimestamp > 0 && nowMs >= o.ExpireTimestamp) || (o.ExpireTimestamp <= 0 && nowMs-base >= retention) {
				expired = append(expired, tp)
			}
		}
		w := Write{Partition: gs.Partition(g.ID)}
		for _, tp := range expired {
			w.Records = append(w.Records, Record{Key: offsetKey(g.ID, tp)})
			delete(g.offsets, tp)
		}
		if g.State == Empty && len(g.offsets) == 0 && len(g.pending) == 0 {
			w.Records = append(w.Records, g.metadataTombstones()...)
			g.setState(Dead, now)
			delete(gs.groups, g.ID)
		}
		if len(w.Records) > 0 {
			w.Done = func(error) {}
			gs.writes = append(gs.writes, w)
		}
	}
}

// Unload forgets the groups of a partition this node no longer leads.
// Waiting members are told NOT_COORDINATOR, so they look it up again.
func (gs *Groups) Unload(partition int32) {
	for pid, ps := range gs.pending {
		keep := ps[:0]
		for _, p := range ps {
			if gs.Partition(p.group) != partition {
				keep = append(keep, p)
			}
		}
		if len(keep) == 0 {
			delete(gs.pending, pid)
		} else {
			gs.pending[pid] = keep
		}
	}
	for id, g := range gs.groups {
		if gs.Partition(id) != partition {
			continue
		}
		for _, m := range g.members {
			if m.joinReply != nil {
				m.joinReply(joinError(m.joinVersion, kerr.NotCoordinator, m.ID))
			}
			if m.syncReply != nil {
				m.syncReply(&kmsg.SyncGroupResponse{Version: m.syncVersion, ErrorCode: kerr.NotCoordinator.Code})
			}
		}
		delete(gs.groups, id)
	}
}
