package share

import (
	"encoding/binary"
	"testing"
)

// FuzzStateRecords: records of __share_group_state are read back when a
// broker loads a state partition, so no byte string may panic the
// parsers or make them allocate beyond the record's size.
func FuzzStateRecords(f *testing.F) {
	snap := SnapshotValue(Snapshot{StartOffset: 5, Batches: []Batch{{First: 5, Last: 9, State: 2, Count: 1}}})
	f.Add(snap)
	f.Add(StateKey(Key{Group: "g", Partition: 1}))
	// A tag length whose varint is past MaxInt64 (negative as an int),
	// and a batch count that overflows (n-1)*20.
	neg := append([]byte{}, snap[:len(snap)-1]...)
	neg = append(neg, 1, 0)
	neg = binary.AppendUvarint(neg, 1<<63+5)
	f.Add(neg)
	huge := append([]byte{}, snap[:2+3*4+3*8]...)
	huge = binary.AppendUvarint(huge, 1<<62)
	f.Add(huge)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _, _ = ParseStateKey(b)
		if s, err := ParseSnapshot(b); err == nil && len(s.Batches) > len(b)/20+1 {
			t.Fatalf("%d batches from %d bytes", len(s.Batches), len(b))
		}
		s := Snapshot{}
		_ = ApplyUpdate(&s, b)
	})
}
