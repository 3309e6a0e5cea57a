package share

import (
	"encoding/binary"
	"errors"
)

// Share-partition state is kept in __share_group_state as Kafka's share
// coordinator keeps it (share-coordinator's ShareSnapshotKey/Value and
// ShareUpdateKey/Value schemas), so that the topic's records are the same
// bytes Kafka writes and reads:
//
//	key:   type int16 (0 snapshot, 1 update) │ group string16 │
//	       topic id [16] │ partition int32
//	snapshot value: version int16 (0) │ SnapshotEpoch int32 │
//	       StateEpoch int32 │ LeaderEpoch int32 │ StartOffset int64 │
//	       CreateTimestamp int64 │ WriteTimestamp int64 │
//	       StateBatches compact array │ tagged fields
//	update value:   version int16 (0) │ SnapshotEpoch int32 │
//	       LeaderEpoch int32 │ StartOffset int64 (-1: unchanged) │
//	       StateBatches compact array │ tagged fields
//	state batch: FirstOffset int64 │ LastOffset int64 │
//	       DeliveryState int8 │ DeliveryCount int16 │ tagged fields
//
// A nil value is a tombstone: the share partition's state is deleted.
// Tributary writes only snapshots (each a whole state), which compaction
// reduces to one record per share partition; it reads updates too, as
// Kafka writes them between snapshots.

const (
	recordSnapshot int16 = 0
	recordUpdate   int16 = 1
)

// Snapshot is a share partition's persisted state.
type Snapshot struct {
	SnapshotEpoch int32
	StateEpoch    int32
	LeaderEpoch   int32
	StartOffset   int64
	Created       int64 // ms
	Written       int64 // ms
	Batches       []Batch
	// Create, not persisted, marks a partition leader's write of a share
	// partition it began from nothing (share.auto.offset.reset): the
	// store may create the key's state for it; any other write to a key
	// without state is refused, as Kafka refuses a write to an
	// uninitialized share partition.
	Create bool
}

// StateKey is the record key of a share partition's state.
func StateKey(k Key) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(recordSnapshot))
	b = binary.BigEndian.AppendUint16(b, uint16(len(k.Group)))
	b = append(b, k.Group...)
	b = append(b, k.Topic[:]...)
	return binary.BigEndian.AppendUint32(b, uint32(k.Partition))
}

// SnapshotValue is the ShareSnapshotValue record of a state.
func SnapshotValue(s Snapshot) []byte {
	b := make([]byte, 0, 2+4*3+8*3+1+len(s.Batches)*20+1)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(s.SnapshotEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(s.StateEpoch))
	b = binary.BigEndian.AppendUint32(b, uint32(s.LeaderEpoch))
	b = binary.BigEndian.AppendUint64(b, uint64(s.StartOffset))
	b = binary.BigEndian.AppendUint64(b, uint64(s.Created))
	b = binary.BigEndian.AppendUint64(b, uint64(s.Written))
	b = appendBatches(b, s.Batches)
	return append(b, 0) // no tagged fields
}

func appendBatches(b []byte, bs []Batch) []byte {
	b = binary.AppendUvarint(b, uint64(len(bs))+1)
	for _, bt := range bs {
		b = binary.BigEndian.AppendUint64(b, uint64(bt.First))
		b = binary.BigEndian.AppendUint64(b, uint64(bt.Last))
		b = append(b, byte(bt.State))
		b = binary.BigEndian.AppendUint16(b, uint16(bt.Count))
		b = append(b, 0)
	}
	return b
}

var errBadStateRecord = errors.New("broker/share: malformed __share_group_state record")

// ParseStateKey reads a record key: the share partition and whether the
// record is an update (else a snapshot).
func ParseStateKey(b []byte) (k Key, update bool, err error) {
	d := rd{b: b}
	typ := d.i16()
	if typ != recordSnapshot && typ != recordUpdate {
		return k, false, errBadStateRecord
	}
	n := int(d.i16())
	if n < 0 || !d.need(n+16+4) {
		return k, false, errBadStateRecord
	}
	k.Group = string(d.take(n))
	copy(k.Topic[:], d.take(16))
	k.Partition = d.i32()
	if d.bad || len(d.b) != 0 {
		return k, false, errBadStateRecord
	}
	return k, typ == recordUpdate, nil
}

// ParseSnapshot reads a ShareSnapshotValue.
func ParseSnapshot(b []byte) (Snapshot, error) {
	d := rd{b: b}
	var s Snapshot
	if d.i16() != 0 {
		return s, errBadStateRecord
	}
	s.SnapshotEpoch, s.StateEpoch, s.LeaderEpoch = d.i32(), d.i32(), d.i32()
	s.StartOffset, s.Created, s.Written = d.i64(), d.i64(), d.i64()
	s.Batches = d.batches()
	d.tags()
	if d.bad {
		return s, errBadStateRecord
	}
	return s, nil
}

// ApplyUpdate reads a ShareUpdateValue and applies it to s, as Kafka's
// share coordinator merges an update into the last snapshot: a start
// offset other than -1 moves the SPSO, and the update's batches replace
// the states of the offsets they cover.
func ApplyUpdate(s *Snapshot, b []byte) error {
	d := rd{b: b}
	if d.i16() != 0 {
		return errBadStateRecord
	}
	d.i32() // snapshot epoch
	leaderEpoch, start := d.i32(), d.i64()
	bs := d.batches()
	d.tags()
	if d.bad {
		return errBadStateRecord
	}
	s.LeaderEpoch = leaderEpoch
	if start >= 0 {
		s.StartOffset = start
	}
	s.Batches = mergeBatches(s.Batches, bs, s.StartOffset)
	return nil
}

// mergeBatches overlays upd on base per offset and drops what is below
// spso.
func mergeBatches(base, upd []Batch, spso int64) []Batch {
	var out []Batch
	add := func(b Batch) {
		if b.Last < spso {
			return
		}
		b.First = max(b.First, spso)
		out = append(out, b)
	}
	for _, b := range base {
		// The parts of b no update batch covers.
		pieces := []Batch{b}
		for _, u := range upd {
			var next []Batch
			for _, p := range pieces {
				if u.Last < p.First || u.First > p.Last {
					next = append(next, p)
					continue
				}
				if p.First < u.First {
					next = append(next, Batch{First: p.First, Last: u.First - 1, State: p.State, Count: p.Count})
				}
				if p.Last > u.Last {
					next = append(next, Batch{First: u.Last + 1, Last: p.Last, State: p.State, Count: p.Count})
				}
			}
			pieces = next
		}
		for _, p := range pieces {
			add(p)
		}
	}
	for _, u := range upd {
		add(u)
	}
	sortBatches(out)
	return out
}

func sortBatches(bs []Batch) {
	for i := 1; i < len(bs); i++ {
		for j := i; j > 0 && bs[j].First < bs[j-1].First; j-- {
			bs[j], bs[j-1] = bs[j-1], bs[j]
		}
	}
}

type rd struct {
	b   []byte
	bad bool
}

func (d *rd) need(n int) bool {
	// n comes from lengths in the record: a varint past MaxInt turns
	// negative, which must be refused, not sliced with.
	if d.bad || n < 0 || len(d.b) < n {
		d.bad = true
		return false
	}
	return true
}

// take consumes the next n bytes, or marks the record bad and returns nil
// when fewer are left: every fixed-width read goes through it, so a short
// record is refused the same way wherever it ends.
func (d *rd) take(n int) []byte {
	if !d.need(n) {
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *rd) i16() int16 {
	if b := d.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}

func (d *rd) i32() int32 {
	if b := d.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}

func (d *rd) i64() int64 {
	if b := d.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

func (d *rd) uv() uint64 {
	if d.bad {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

// tags skips tagged fields (DeliveryCompleteCount, KIP-1226, among them).
func (d *rd) tags() {
	for n := d.uv(); n > 0 && !d.bad; n-- {
		d.uv()
		d.take(int(d.uv()))
	}
}

func (d *rd) batches() []Batch {
	c := d.uv()
	// Each batch takes at least 20 bytes (two offsets, state, count, tags):
	// checking the count against what is left keeps (n-1)*20 from
	// overflowing and make from a huge capacity.
	if c == 0 || c-1 > uint64(len(d.b))/20 {
		d.bad = true
		return nil
	}
	n := int(c)
	if !d.need((n - 1) * 20) {
		d.bad = true
		return nil
	}
	out := make([]Batch, 0, n-1)
	for i := 0; i < n-1 && !d.bad; i++ {
		b := Batch{First: d.i64(), Last: d.i64()}
		if v := d.take(1); v != nil {
			b.State = State(v[0])
		}
		b.Count = d.i16()
		d.tags()
		out = append(out, b)
	}
	return out
}
