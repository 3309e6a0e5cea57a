package share

import (
	"encoding/binary"
	"errors"
	"hash/fnv"
	"slices"
	"sort"
)

// Share-group records of __consumer_offsets, in Kafka 4.4's schemas
// (group-coordinator's common/message/ShareGroup*.json): the key starts
// with its int16 record type, then its fields, non-flexible; the value
// starts with its int16 version (0), then its fields, flexible (compact
// strings and arrays, a tagged-field section after each struct).
//
//	type  key            value v0
//	10    group, member  ShareGroupMemberMetadataValue: RackId?, ClientId, ClientHost,
//	                       SubscribedTopicNames []string
//	11    group          ShareGroupMetadataValue: Epoch int32, MetadataHash int64
//	12    group          ShareGroupTargetAssignmentMetadataValue: AssignmentEpoch int32
//	                       (tag 0 AssignmentTimestamp: not written)
//	13    group, member  ShareGroupTargetAssignmentMemberValue: [TopicId uuid, Partitions []int32]
//	14    group, member  ShareGroupCurrentMemberAssignmentValue: MemberEpoch int32,
//	                       PreviousMemberEpoch int32, State int8 (0: STABLE),
//	                       AssignedPartitions [TopicId uuid, Partitions []int32]
//	15    group          ShareGroupStatePartitionMetadataValue: InitializingTopics,
//	                       InitializedTopics [TopicId uuid, TopicName, Partitions []int32],
//	                       DeletingTopics [TopicId uuid, TopicName]
//
// A null value is a tombstone. Our MetadataHash is not Kafka's (Murmur3
// over topics and racks): only our coordinators compare it, and a Kafka
// that loads these records starts one new group epoch for it.
const (
	recMember        = 10
	recMetadata      = 11
	recTargetMeta    = 12
	recTargetMember  = 13
	recCurrentAssign = 14
	recStatePartMeta = 15
)

// Record is one record of __consumer_offsets.
type Record struct{ Key, Value []byte }

func recKey(typ int16, group, member string) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(typ))
	b = appendStr16(b, group)
	if typ == recMember || typ == recTargetMember || typ == recCurrentAssign {
		b = appendStr16(b, member)
	}
	return b
}

func appendStr16(b []byte, s string) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	return append(b, s...)
}

// parseKey reads a share record's key: its type, group and member.
func parseKey(k []byte) (typ int16, group, member string, err error) {
	bad := errors.New("broker/share: short share record key")
	if len(k) < 2 {
		return 0, "", "", bad
	}
	typ, k = int16(binary.BigEndian.Uint16(k)), k[2:]
	str := func() (string, bool) {
		if len(k) < 2 || len(k) < 2+int(binary.BigEndian.Uint16(k)) {
			return "", false
		}
		n := int(binary.BigEndian.Uint16(k))
		s := string(k[2 : 2+n])
		k = k[2+n:]
		return s, true
	}
	var ok bool
	if group, ok = str(); !ok {
		return 0, "", "", bad
	}
	if typ == recMember || typ == recTargetMember || typ == recCurrentAssign {
		if member, ok = str(); !ok {
			return 0, "", "", bad
		}
	}
	return typ, group, member, nil
}

type enc struct{ b []byte }

func newValue() *enc { return &enc{b: []byte{0, 0}} }

func (e *enc) i32(v int32)  { e.b = binary.BigEndian.AppendUint32(e.b, uint32(v)) }
func (e *enc) i64(v int64)  { e.b = binary.BigEndian.AppendUint64(e.b, uint64(v)) }
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

// parts codes an assignment, topics by id, partitions ascending.
func (e *enc) parts(a map[[16]byte][]int32) {
	ids := make([][16]byte, 0, len(a))
	for id, ps := range a {
		if len(ps) > 0 {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(x, y [16]byte) int { return slices.Compare(x[:], y[:]) })
	e.uv(uint64(len(ids)) + 1)
	for _, id := range ids {
		e.b = append(e.b, id[:]...)
		ps := slices.Sorted(slices.Values(a[id]))
		e.uv(uint64(len(ps)) + 1)
		for _, p := range ps {
			e.i32(p)
		}
		e.uv(0)
	}
}

type dec struct {
	b   []byte
	err error
}

var errShort = errors.New("broker/share: share record value too short")

func readValue(v []byte) *dec {
	d := &dec{b: v}
	if d.need(2) {
		d.b = d.b[2:]
	}
	return d
}

func (d *dec) need(n int) bool {
	if d.err == nil && (n < 0 || len(d.b) < n) {
		d.err = errShort
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
func (d *dec) i64() int64 {
	if !d.need(8) {
		return 0
	}
	v := int64(binary.BigEndian.Uint64(d.b))
	d.b = d.b[8:]
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
		d.err = errShort
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

// count is an array's length; a null array, or one longer than the bytes
// left could hold, is empty (and the latter an error).
func (d *dec) count() int {
	n := d.uv()
	if n == 0 {
		return 0
	}
	if n-1 > uint64(len(d.b)) {
		d.err = errShort
		return 0
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
func (d *dec) uuid() [16]byte {
	var id [16]byte
	if d.need(16) {
		copy(id[:], d.b)
		d.b = d.b[16:]
	}
	return id
}
func (d *dec) i32s() []int32 {
	var out []int32
	for range d.count() {
		out = append(out, d.i32())
	}
	return out
}
func (d *dec) parts() map[[16]byte][]int32 {
	out := map[[16]byte][]int32{}
	for range d.count() {
		id := d.uuid()
		out[id] = d.i32s()
		d.skipTags()
	}
	return out
}

func memberValue(m *member) []byte {
	e := newValue()
	e.nstr(m.rack)
	e.str(m.clientID)
	e.str(m.clientHost)
	e.uv(uint64(len(m.topics)) + 1)
	for _, t := range m.topics {
		e.str(t)
	}
	return e.tags()
}

func metadataValue(epoch int32, hash int64) []byte {
	e := newValue()
	e.i32(epoch)
	e.i64(hash)
	return e.tags()
}

func targetMetaValue(epoch int32) []byte {
	e := newValue()
	e.i32(epoch)
	return e.tags()
}

func targetMemberValue(a map[[16]byte][]int32) []byte {
	e := newValue()
	e.parts(a)
	return e.tags()
}

// memberStable is Kafka's MemberState.STABLE: a share member has nothing
// to revoke, so it is always stable.
const memberStable = 0

func currentValue(m *member) []byte {
	e := newValue()
	e.i32(m.epoch)
	e.i32(m.prevEpoch)
	e.b = append(e.b, memberStable)
	e.parts(m.assigned)
	return e.tags()
}

// initTopic is one topic of the type-15 record: the partitions whose
// share state is being initialized, or was.
type initTopic struct {
	name  string
	parts []int32
}

// statePart is the type-15 record (ShareGroupStatePartitionMetadata):
// where the group's share state is, as Kafka's coordinator keeps it
// around InitializeShareGroupState and DeleteShareGroupState.
// initializing: state may exist (recorded before it is created);
// initialized: it does; deleting: whole topics whose state an
// administrator is deleting.
type statePart struct {
	initializing, initialized map[[16]byte]initTopic
	deleting                  map[[16]byte]string
}

// readyParts is the partitions the record has initialized (and not
// being deleted): a coordinator assigns them without initializing.
func (s *statePart) readyParts() map[tpKey]bool {
	out := map[tpKey]bool{}
	for id, t := range s.initialized {
		if _, gone := s.deleting[id]; gone {
			continue
		}
		for _, p := range t.parts {
			out[tpKey{id, p}] = true
		}
	}
	return out
}

func (s *statePart) empty() bool {
	return len(s.initializing) == 0 && len(s.initialized) == 0 && len(s.deleting) == 0
}

// addParts adds partitions of topic id to *to.
func addParts(to *map[[16]byte]initTopic, id [16]byte, name string, parts ...int32) {
	if *to == nil {
		*to = map[[16]byte]initTopic{}
	}
	t := (*to)[id]
	if name != "" {
		t.name = name
	}
	t.parts = append(t.parts, parts...)
	slices.Sort(t.parts)
	t.parts = slices.Compact(t.parts)
	(*to)[id] = t
}

// removeParts removes partitions of topic id from m, and the topic once
// it has none.
func removeParts(m map[[16]byte]initTopic, id [16]byte, parts ...int32) {
	t, ok := m[id]
	if !ok {
		return
	}
	t.parts = slices.DeleteFunc(slices.Clone(t.parts), func(p int32) bool { return slices.Contains(parts, p) })
	if len(t.parts) == 0 {
		delete(m, id)
	} else {
		m[id] = t
	}
}

func sortedIDs[V any](m map[[16]byte]V) [][16]byte {
	ids := make([][16]byte, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(x, y [16]byte) int { return slices.Compare(x[:], y[:]) })
	return ids
}

func statePartValue(sp statePart) []byte {
	e := newValue()
	for _, topics := range []map[[16]byte]initTopic{sp.initializing, sp.initialized} {
		e.uv(uint64(len(topics)) + 1)
		for _, id := range sortedIDs(topics) {
			t := topics[id]
			e.b = append(e.b, id[:]...)
			e.str(t.name)
			ps := slices.Sorted(slices.Values(t.parts))
			e.uv(uint64(len(ps)) + 1)
			for _, p := range ps {
				e.i32(p)
			}
			e.uv(0)
		}
	}
	e.uv(uint64(len(sp.deleting)) + 1)
	for _, id := range sortedIDs(sp.deleting) {
		e.b = append(e.b, id[:]...)
		e.str(sp.deleting[id])
		e.uv(0)
	}
	return e.tags()
}

// readStatePart reads a type-15 value.
func readStatePart(d *dec) statePart {
	var sp statePart
	for _, to := range []*map[[16]byte]initTopic{&sp.initializing, &sp.initialized} {
		for range d.count() {
			id := d.uuid()
			name := d.str()
			addParts(to, id, name, d.i32s()...)
			d.skipTags()
		}
	}
	for range d.count() {
		id := d.uuid()
		if sp.deleting == nil {
			sp.deleting = map[[16]byte]string{}
		}
		sp.deleting[id] = d.str()
		d.skipTags()
	}
	return sp
}

// shapeHash is the MetadataHash we persist: of the subscribed topics'
// names, ids and partition counts at the group epoch, so that a reload
// that finds them unchanged keeps the epoch.
func shapeHash(shape map[string]TopicMeta) int64 {
	names := make([]string, 0, len(shape))
	for n := range shape {
		names = append(names, n)
	}
	sort.Strings(names)
	h := fnv.New64a()
	for _, n := range names {
		tm := shape[n]
		h.Write([]byte(n))
		h.Write([]byte{0})
		h.Write(tm.ID[:])
		h.Write(binary.BigEndian.AppendUint32(nil, uint32(tm.Partitions)))
	}
	return int64(h.Sum64())
}
