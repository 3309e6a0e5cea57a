package group

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"time"
)

// Records of a KIP-848 consumer group in __consumer_offsets, in Kafka's
// schemas (group-coordinator/src/main/resources/common/message). kmsg does
// not generate these record types, so this file codes the few fields they
// have by hand; every key is non-flexible, every value flexible (compact
// strings and arrays, an empty tagged-field section after each struct):
//
//	key type  key fields           value
//	3         group                ConsumerGroupMetadataValue v0: Epoch int32;
//	                                 tag 0: MetadataHash int64 (KIP-1101)
//	5         group, member        ConsumerGroupMemberMetadataValue v0: InstanceId?, RackId?,
//	                                 ClientId, ClientHost, SubscribedTopicNames []string,
//	                                 SubscribedTopicRegex?, RebalanceTimeoutMs int32, ServerAssignor?;
//	                                 tag 0: ClassicMemberMetadata? {SessionTimeoutMs int32,
//	                                 SupportedProtocols [Name, Metadata bytes]} (migrated groups)
//	6         group                ConsumerGroupTargetAssignmentMetadataValue v0: AssignmentEpoch int32
//	7         group, member        ConsumerGroupTargetAssignmentMemberValue v0: [TopicId uuid, Partitions []int32]
//	8         group, member        ConsumerGroupCurrentMemberAssignmentValue v0: MemberEpoch int32,
//	                                 PreviousMemberEpoch int32, State int8,
//	                                 AssignedPartitions [..], PartitionsPendingRevocation [..];
//	                                 each topic's tag 0: AssignmentEpochs []int32 (KIP-1251)
//
// A value starts with its int16 version. A reader skips tagged fields it
// does not know, and a value of a newer version is read for the fields
// above, which Kafka never removes. Our MetadataHash is not Kafka's hash
// (hashSig): only our coordinators compare it. Key type 4
// (ConsumerGroupPartitionMetadata, written by Kafka 3.x) is read past. A
// null value is a tombstone: of the member for types 5, 7 and 8, of the
// group for type 3.
const (
	cgMetadataKey       = 3
	cgPartitionMetaKey  = 4
	cgMemberKey         = 5
	cgTargetMetaKey     = 6
	cgTargetMemberKey   = 7
	cgCurrentAssignKey  = 8
	cgValueVersion      = 0
	errShortRecordValue = "broker/group: consumer group record too short"
)

func cgKey(typ int16, group, member string, withMember bool) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(typ))
	b = appendStr16(b, group)
	if withMember {
		b = appendStr16(b, member)
	}
	return b
}

func appendStr16(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// enc builds a flexible value.
type enc struct{ b []byte }

func newValue() *enc { return &enc{b: binary.BigEndian.AppendUint16(nil, cgValueVersion)} }

func (e *enc) i32(v int32)  { e.b = binary.BigEndian.AppendUint32(e.b, uint32(v)) }
func (e *enc) i8(v int8)    { e.b = append(e.b, byte(v)) }
func (e *enc) uv(v uint64)  { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) str(s string) { e.uv(uint64(len(s)) + 1); e.b = append(e.b, s...) }
func (e *enc) nstr(s *string) {
	if s == nil {
		e.uv(0)
		return
	}
	e.str(*s)
}
func (e *enc) tags() []byte { e.uv(0); return e.b }

func (e *enc) assignment(a tpSet) { e.assignmentAt(a, nil) }

// assignmentAt codes a with, when at is not nil, each partition's
// assignment epoch (KIP-1251's AssignmentEpochs, tagged field 0 of each
// topic, aligned with its partitions).
func (e *enc) assignmentAt(a tpSet, at map[tpKey]int32) {
	byTopic := a.byTopic()
	e.uv(uint64(len(byTopic)) + 1)
	for _, t := range byTopic {
		e.b = append(e.b, t.id[:]...)
		e.uv(uint64(len(t.parts)) + 1)
		for _, p := range t.parts {
			e.i32(p)
		}
		if at == nil {
			e.uv(0)
			continue
		}
		field := &enc{}
		field.uv(uint64(len(t.parts)) + 1)
		for _, p := range t.parts {
			epoch, ok := at[tpKey{t.id, p}]
			if !ok {
				epoch = -1
			}
			field.i32(epoch)
		}
		e.uv(1) // one tagged field
		e.uv(0) // tag 0
		e.uv(uint64(len(field.b)))
		e.b = append(e.b, field.b...)
	}
}

// dec reads a flexible value; the first error sticks.
type dec struct {
	b   []byte
	err error
}

func (d *dec) need(n int) bool {
	// n < 0: a length over 2^63 read from a varint.
	if d.err == nil && (n < 0 || len(d.b) < n) {
		d.err = errors.New(errShortRecordValue)
	}
	return d.err == nil
}
func (d *dec) i32() int32 {
	if !d.need(4) {
		return 0
	}
	v := int32(binary.BigEndian.Uint32(d.b))
	d.b = d.b[4:]
	return v
}
func (d *dec) i8() int8 {
	if !d.need(1) {
		return 0
	}
	v := int8(d.b[0])
	d.b = d.b[1:]
	return v
}
func (d *dec) uv() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errors.New(errShortRecordValue)
		return 0
	}
	d.b = d.b[n:]
	return v
}
func (d *dec) nstr() *string {
	n := d.uv()
	if n == 0 || !d.need(int(n-1)) {
		return nil
	}
	s := string(d.b[:n-1])
	d.b = d.b[n-1:]
	return &s
}
func (d *dec) str() string {
	if s := d.nstr(); s != nil {
		return *s
	}
	return ""
}
func (d *dec) count() int {
	n := d.uv()
	if n == 0 || n-1 > uint64(len(d.b)) {
		return 0 // a null array, or a count no value this short can hold
	}
	return int(n - 1)
}
func (d *dec) skipTags() {
	for n := d.uv(); n > 0 && d.err == nil; n-- {
		d.uv()
		size := d.uv()
		if d.need(int(size)) {
			d.b = d.b[size:]
		}
	}
}
func (d *dec) assignment() tpSet { return d.assignmentAt(nil) }

// assignmentAt reads an assignment and, into at when it is not nil, the
// partitions' assignment epochs where the record has them.
func (d *dec) assignmentAt(at map[tpKey]int32) tpSet {
	out := tpSet{}
	for range d.count() {
		var id [16]byte
		if !d.need(16) {
			return out
		}
		copy(id[:], d.b)
		d.b = d.b[16:]
		var parts []int32
		for range d.count() {
			p := d.i32()
			out[tpKey{id, p}] = struct{}{}
			parts = append(parts, p)
		}
		for n := d.uv(); n > 0 && d.err == nil; n-- {
			tag, size := d.uv(), d.uv()
			if !d.need(int(size)) {
				return out
			}
			field := &dec{b: d.b[:size]}
			d.b = d.b[size:]
			if tag != 0 || at == nil {
				continue
			}
			if c := field.count(); c == len(parts) {
				for _, p := range parts {
					if e := field.i32(); e >= 0 && field.err == nil {
						at[tpKey{id, p}] = e
					}
				}
			}
		}
	}
	return out
}

func readValue(v []byte) *dec {
	d := &dec{b: v}
	if d.need(2) {
		d.b = d.b[2:]
	}
	return d
}

func (m *cMember) metadataValue() []byte {
	e := newValue()
	e.nstr(m.InstanceID)
	e.nstr(m.RackID)
	e.str(m.ClientID)
	e.str(m.ClientHost)
	e.uv(uint64(len(m.Topics)) + 1)
	for _, t := range m.Topics {
		e.str(t)
	}
	e.nstr(m.Regex)
	e.i32(m.RebalanceTimeout)
	e.nstr(m.Assignor)
	return e.classicTag(m.Classic)
}

func (m *cMember) currentValue() []byte {
	e := newValue()
	e.i32(m.Epoch)
	e.i32(m.PrevEpoch)
	e.i8(m.State)
	e.assignmentAt(m.Assigned, m.assignedAt)
	e.assignmentAt(m.Pending, m.assignedAt)
	return e.tags()
}

func epochValue(epoch int32) []byte {
	e := newValue()
	e.i32(epoch)
	return e.tags()
}

func targetValue(a tpSet) []byte {
	e := newValue()
	e.assignment(a)
	return e.tags()
}

// replayConsumer applies a consumer group record (key types 3 to 8) read
// back from the log. Members get a fresh session from now.
func (gs *Groups) replayConsumer(typ uint16, key, value []byte, now time.Time) error {
	if typ == cgPartitionMetaKey {
		return nil
	}
	kd := key[2:]
	str16 := func() (string, bool) {
		if len(kd) < 2 {
			return "", false
		}
		n := int(binary.BigEndian.Uint16(kd))
		if len(kd) < 2+n {
			return "", false
		}
		s := string(kd[2 : 2+n])
		kd = kd[2+n:]
		return s, true
	}
	groupID, ok := str16()
	if !ok {
		return fmt.Errorf("broker/group: consumer group key type %d too short", typ)
	}
	var memberID string
	if typ == cgMemberKey || typ == cgTargetMemberKey || typ == cgCurrentAssignKey {
		if memberID, ok = str16(); !ok {
			return fmt.Errorf("broker/group: consumer group key type %d too short", typ)
		}
	}
	if typ == cgMetadataKey && value == nil {
		if g, ok := gs.groups[groupID]; ok && g.consumer != nil {
			g.consumer, g.ProtocolType, g.Generation = nil, "", 0
			gs.dropIfGone(g)
		}
		return nil
	}
	if value == nil {
		// A tombstone of a member or of the assignment epoch deletes
		// nothing of a group that is not (or no longer) a consumer group.
		if g, ok := gs.groups[groupID]; !ok || g.consumer == nil {
			return nil
		}
	}
	g := gs.getOrCreate(groupID, now)
	cg := g.consumerState()
	if cg.Assignor == "" && len(gs.cfg.Consumer.Assignors) > 0 {
		// Not a record of its own: the members' choice or the default,
		// as the next assignment decides again.
		cg.Assignor = gs.cfg.Consumer.Assignors[0]
	}
	var d *dec
	if value != nil {
		d = readValue(value)
	}
	switch typ {
	case cgMetadataKey:
		cg.Epoch = d.i32()
		if h, ok := d.epochTagged(); ok {
			cg.topicsHash, cg.sigGen = h, 0
		}
		g.Generation = cg.Epoch
	case cgTargetMetaKey:
		if d != nil {
			cg.AssignmentEpoch = d.i32()
		}
	case cgMemberKey:
		if d == nil {
			cg.drop(memberID)
			break
		}
		m := cg.member(memberID, now)
		m.InstanceID, m.RackID = d.nstr(), d.nstr()
		m.ClientID, m.ClientHost = d.str(), d.str()
		m.Topics = nil
		for range d.count() {
			m.Topics = append(m.Topics, d.str())
		}
		sort.Strings(m.Topics)
		m.Regex = d.nstr()
		m.RebalanceTimeout = d.i32()
		m.Assignor = d.nstr()
		m.Classic = d.classicTagged()
		if m.InstanceID != nil {
			cg.static[*m.InstanceID] = memberID
		}
	case cgTargetMemberKey:
		if d == nil {
			delete(cg.target, memberID)
			break
		}
		cg.target[memberID] = d.assignment()
	case cgCurrentAssignKey:
		m, ok := cg.members[memberID]
		if !ok {
			if d == nil {
				break
			}
			m = cg.member(memberID, now)
		}
		if d == nil {
			m.Assigned, m.Pending = tpSet{}, tpSet{}
			break
		}
		m.Epoch, m.PrevEpoch, m.State = d.i32(), d.i32(), d.i8()
		at := map[tpKey]int32{}
		assigned := d.assignmentAt(at)
		pending := d.assignmentAt(at)
		m.assignedAt = at // setOwned takes the recorded epochs, the member's for the others
		cg.setOwned(m, assigned, pending)
		if m.State == memberUnrevoked {
			// Its deadline is not in the log: it gets a full rebalance
			// timeout from the load, as Kafka schedules on load, rather
			// than none (removed at the first tick).
			m.revokeDeadline = now.Add(m.rebalanceTimeout())
		}
	}
	if d != nil && d.err != nil {
		return fmt.Errorf("broker/group: consumer group record type %d of %s: %w", typ, groupID, d.err)
	}
	cg.rebuildOwners()
	g.refreshConsumerState(now)
	return nil
}

// metadataTombstones deletes the group's records other than its offsets:
// the classic group record, or every record of a consumer group.
func (g *Group) metadataTombstones() []Record {
	if g.consumer != nil {
		return g.consumer.tombstones(g.ID)
	}
	return []Record{{Key: groupKey(g.ID)}}
}

// tombstones deletes every record of a consumer group, members first, as
// Kafka does when it deletes one.
func (cg *consumerGroup) tombstones(group string) []Record {
	var rs []Record
	for _, id := range cg.memberIDs() {
		rs = append(rs, cg.memberTombstones(group, id)...)
	}
	return append(rs,
		Record{Key: cgKey(cgTargetMetaKey, group, "", false)},
		Record{Key: cgKey(cgMetadataKey, group, "", false)})
}

func (cg *consumerGroup) memberTombstones(group, member string) []Record {
	return []Record{
		{Key: cgKey(cgCurrentAssignKey, group, member, true)},
		{Key: cgKey(cgTargetMemberKey, group, member, true)},
		{Key: cgKey(cgMemberKey, group, member, true)},
	}
}

// hashSig is the MetadataHash persisted for a signature (consumerGroup's
// topicsHash). Kafka hashes the topics otherwise (Murmur3 over ids, names,
// partition counts and racks): a Kafka that loads our records sees a
// different hash and starts one new group epoch, which costs nothing else.
func hashSig(sig string) int64 {
	h := fnv.New64a()
	h.Write([]byte(sig))
	return int64(h.Sum64())
}

// epochRecord is the group epoch record (key 3) with the hash of the
// subscribed topics as they are now: Kafka's ConsumerGroupMetadataValue
// with MetadataHash, tagged field 0 (KIP-1101, Kafka 4.1+).
func (cg *consumerGroup) epochRecord(group string, topics map[string]TopicMeta) Record {
	e := newValue()
	e.i32(cg.Epoch)
	e.uv(1) // one tagged field
	e.uv(0) // tag 0: MetadataHash int64
	e.uv(8)
	e.b = binary.BigEndian.AppendUint64(e.b, uint64(hashSig(cg.signature(topics))))
	return Record{Key: cgKey(cgMetadataKey, group, "", false), Value: e.b}
}

// epochTagged reads the tagged fields of a group epoch record: the
// MetadataHash when there is one.
func (d *dec) epochTagged() (int64, bool) {
	var hash int64
	found := false
	for n := d.uv(); n > 0 && d.err == nil; n-- {
		tag, size := d.uv(), d.uv()
		if !d.need(int(size)) {
			return 0, false
		}
		if tag == 0 && size == 8 {
			hash, found = int64(binary.BigEndian.Uint64(d.b)), true
		}
		d.b = d.b[size:]
	}
	return hash, found
}
