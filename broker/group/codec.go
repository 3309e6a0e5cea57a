package group

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Records of __consumer_offsets, Kafka's schemas (kmsg generates them from
// Kafka's own definitions). A key starts with its int16 version, which says
// what it is:
//
//	key version 0, 1   OffsetCommitKey    group, topic, partition
//	key version 2      GroupMetadataKey   group
//
// We write OffsetCommitKey v1 with OffsetCommitValue v3 (v1 when the commit
// carries an expire timestamp), and GroupMetadataKey v2 with
// GroupMetadataValue v3, as Kafka 4 does. A null value is a tombstone: the
// log cleaner keeps the last record per key, so deleting is appending one.
// A reader must skip keys of versions it does not know (Kafka 4's
// coordinator writes more record types, for KIP-848 groups, that the
// classic protocol does not use).
const (
	offsetKeyVersion   = 1
	groupKeyVersion    = 2
	offsetValueVersion = 3
	groupValueVersion  = 3
)

func offsetKey(group string, tp TopicPartition) []byte {
	k := kmsg.OffsetCommitKey{Version: offsetKeyVersion, Group: group, Topic: tp.Topic, Partition: tp.Partition}
	return k.AppendTo(nil)
}

func offsetValue(o Offset) []byte {
	v := kmsg.NewOffsetCommitValue()
	v.Version = offsetValueVersion
	if o.ExpireTimestamp > 0 {
		v.Version = 1
	}
	v.Offset, v.LeaderEpoch, v.Metadata, v.CommitTimestamp, v.ExpireTimestamp = o.Offset, o.LeaderEpoch, o.Metadata, o.CommitTimestamp, o.ExpireTimestamp
	return v.AppendTo(nil)
}

func groupKey(group string) []byte {
	k := kmsg.GroupMetadataKey{Version: groupKeyVersion, Group: group}
	return k.AppendTo(nil)
}

func (g *Group) metadataValue(now time.Time) []byte {
	v := kmsg.NewGroupMetadataValue()
	v.Version = groupValueVersion
	v.ProtocolType, v.Generation, v.CurrentStateTimestamp = g.ProtocolType, g.Generation, now.UnixMilli()
	if g.Protocol != "" {
		p := g.Protocol
		v.Protocol = &p
	}
	if g.Leader != "" {
		l := g.Leader
		v.Leader = &l
	}
	for _, m := range g.Members() {
		v.Members = append(v.Members, kmsg.GroupMetadataValueMember{MemberID: m.ID, InstanceID: m.InstanceID,
			ClientID: m.ClientID, ClientHost: m.ClientHost,
			RebalanceTimeoutMillis: int32(m.RebalanceTimeout.Milliseconds()), SessionTimeoutMillis: int32(m.SessionTimeout.Milliseconds()),
			Subscription: m.metadata(g.Protocol), Assignment: m.Assignment})
	}
	return v.AppendTo(nil)
}

// Replay applies one record of __consumer_offsets read back from the log,
// in log order. Members of a loaded group get a fresh session from now:
// they must heartbeat again, as after a coordinator move in Kafka.
func (gs *Groups) Replay(key, value []byte, now time.Time) error {
	if len(key) < 2 {
		return fmt.Errorf("broker/group: key of %d bytes", len(key))
	}
	switch binary.BigEndian.Uint16(key) {
	case 0, 1:
		var k kmsg.OffsetCommitKey
		if err := k.ReadFrom(key); err != nil {
			return fmt.Errorf("broker/group: offset commit key: %w", err)
		}
		tp := TopicPartition{k.Topic, k.Partition}
		if value == nil {
			if g, ok := gs.groups[k.Group]; ok {
				delete(g.offsets, tp)
				gs.dropIfGone(g)
			}
			return nil
		}
		var v kmsg.OffsetCommitValue
		if err := v.ReadFrom(value); err != nil {
			return fmt.Errorf("broker/group: offset commit value: %w", err)
		}
		if v.Version < 3 {
			v.LeaderEpoch = -1
		}
		if v.Version != 1 {
			v.ExpireTimestamp = -1
		}
		g := gs.getOrCreate(k.Group, time.UnixMilli(v.CommitTimestamp))
		g.offsets[tp] = Offset{Offset: v.Offset, LeaderEpoch: v.LeaderEpoch, Metadata: v.Metadata, CommitTimestamp: v.CommitTimestamp, ExpireTimestamp: v.ExpireTimestamp}
	case 2:
		var k kmsg.GroupMetadataKey
		if err := k.ReadFrom(key); err != nil {
			return fmt.Errorf("broker/group: group metadata key: %w", err)
		}
		g := gs.getOrCreate(k.Group, now)
		g.members, g.order, g.static, g.Leader, g.Protocol = map[string]*Member{}, nil, map[string]string{}, "", ""
		if value == nil {
			g.ProtocolType, g.Generation = "", 0
			g.setState(Empty, now)
			gs.dropIfGone(g)
			return nil
		}
		var v kmsg.GroupMetadataValue
		if err := v.ReadFrom(value); err != nil {
			return fmt.Errorf("broker/group: group metadata value: %w", err)
		}
		g.ProtocolType, g.Generation = v.ProtocolType, v.Generation
		if v.Protocol != nil {
			g.Protocol = *v.Protocol
		}
		for _, vm := range v.Members {
			m := &Member{ID: vm.MemberID, InstanceID: vm.InstanceID, ClientID: vm.ClientID, ClientHost: vm.ClientHost,
				SessionTimeout: time.Duration(vm.SessionTimeoutMillis) * time.Millisecond, ProtocolType: v.ProtocolType,
				RebalanceTimeout: time.Duration(vm.RebalanceTimeoutMillis) * time.Millisecond,
				Protocols:        []kmsg.JoinGroupRequestProtocol{{Name: g.Protocol, Metadata: vm.Subscription}},
				Assignment:       vm.Assignment, lastSeen: now}
			g.members[m.ID] = m
			g.order = append(g.order, m.ID)
			if m.InstanceID != nil {
				g.static[*m.InstanceID] = m.ID
			}
		}
		if v.Leader != nil && g.members[*v.Leader] != nil {
			g.Leader = *v.Leader
		} else if len(g.order) > 0 {
			g.Leader = g.order[0]
		}
		stateTime := now
		if v.CurrentStateTimestamp > 0 {
			stateTime = time.UnixMilli(v.CurrentStateTimestamp)
		}
		if len(g.members) > 0 {
			g.setState(Stable, stateTime)
		} else {
			g.setState(Empty, stateTime)
		}
	case cgMetadataKey, cgPartitionMetaKey, cgMemberKey, cgTargetMetaKey, cgTargetMemberKey, cgCurrentAssignKey:
		return gs.replayConsumer(binary.BigEndian.Uint16(key), key, value, now)
	default:
		// A record type of a newer coordinator: not ours to read.
	}
	return nil
}

func (gs *Groups) dropIfGone(g *Group) {
	if len(g.members) == 0 && len(g.offsets) == 0 && g.Generation == 0 {
		delete(gs.groups, g.ID)
	}
}

// describe prints a group for the data-driven tests.
func describe(g *Group) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s gen=%d type=%q protocol=%q leader=%q", g.ID, g.State, g.Generation, g.ProtocolType, g.Protocol, g.Leader)
	for _, m := range g.Members() {
		fmt.Fprintf(&b, "\n  member %s", m.ID)
		if m.InstanceID != nil {
			fmt.Fprintf(&b, " instance=%s", *m.InstanceID)
		}
		if len(m.Assignment) > 0 {
			fmt.Fprintf(&b, " assignment=%q", m.Assignment)
		}
		switch {
		case m.joinReply != nil:
			b.WriteString(" (awaiting join)")
		case m.syncReply != nil:
			b.WriteString(" (awaiting sync)")
		}
	}
	var pending []string
	for id := range g.pending {
		pending = append(pending, id)
	}
	sort.Strings(pending)
	for _, id := range pending {
		fmt.Fprintf(&b, "\n  pending %s", id)
	}
	for _, tp := range sortedTPs(g.offsets) {
		o := g.offsets[tp]
		fmt.Fprintf(&b, "\n  offset %s/%d=%d", tp.Topic, tp.Partition, o.Offset)
		if o.Metadata != "" {
			fmt.Fprintf(&b, " metadata=%q", o.Metadata)
		}
	}
	return b.String()
}
