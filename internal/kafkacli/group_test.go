package kafkacli

import (
	"encoding/binary"
	"fmt"
	"testing"
)

// assignment encodes a ConsumerProtocolAssignment of the given version,
// with trailing bytes as later versions may add.
func assignment(version int16, topics map[string][]int32, trailer []byte) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(len(topics)))
	for _, t := range sortedKeys(topics) {
		b = binary.BigEndian.AppendUint16(b, uint16(len(t)))
		b = append(b, t...)
		b = binary.BigEndian.AppendUint32(b, uint32(len(topics[t])))
		for _, p := range topics[t] {
			b = binary.BigEndian.AppendUint32(b, uint32(p))
		}
	}
	b = binary.BigEndian.AppendUint32(b, 0xffffffff) // null user data
	return append(b, trailer...)
}

func TestDecodeAssignment(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []byte
		want string
	}{
		{"v0", assignment(0, map[string][]int32{"orders": {2, 0, 1}, "eu": {5}}, nil), "map[eu:[5] orders:[0 1 2]]"},
		{"v3 with trailing fields", assignment(3, map[string][]int32{"orders": {1}}, []byte{0, 0, 0, 0}), "map[orders:[1]]"},
		{"empty", nil, "map[]"},
		{"truncated", assignment(0, map[string][]int32{"orders": {1, 2}}, nil)[:14], "map[]"},
		{"negative count", []byte{0, 0, 0x80, 0, 0, 0}, "map[]"},
	} {
		m := GroupMember{Assignment: decodeAssignment(c.in)}
		if got := fmt.Sprint(map[string][]int(m.Assignment)); got != c.want && !(c.want == "map[]" && m.Assignment == nil) {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	m := GroupMember{Assignment: map[string][]int{"orders": {0, 1}, "eu": {5}}}
	if got := m.AssignedPartitions(); got != "eu(5) orders(0,1)" {
		t.Errorf("AssignedPartitions = %q", got)
	}
	if got := (&GroupMember{}).AssignedPartitions(); got != "-" {
		t.Errorf("AssignedPartitions of nothing = %q", got)
	}
}

func TestGroupActive(t *testing.T) {
	for state, want := range map[string]bool{StateEmpty: false, StateDead: false, StateStable: true, "PreparingRebalance": true, "CompletingRebalance": true} {
		if got := (&GroupDescription{State: state}).Active(); got != want {
			t.Errorf("%s: Active = %v", state, got)
		}
	}
}
