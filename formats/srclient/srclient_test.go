package srclient

import (
	"fmt"
	"testing"
)

// The message-index path as Confluent's serializers write it: [0] as one
// zero byte, others as a zigzag count then zigzag indexes.
func TestProtoIndexes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		idx  []int
		wire string
	}{
		{[]int{0}, "[0]"},
		{[]int{1}, "[2 2]"},
		{[]int{2, 0, 3}, "[6 4 0 6]"},
	} {
		b := AppendProtoIndexes(nil, c.idx)
		if fmt.Sprint(b) != c.wire {
			t.Errorf("%v encoded as %v, want %s", c.idx, b, c.wire)
		}
		got, rest, err := ProtoIndexes(append(b, 0xAA))
		if err != nil || fmt.Sprint(got) != fmt.Sprint(c.idx) || len(rest) != 1 {
			t.Errorf("%v read back as %v rest %v: %v", c.idx, got, rest, err)
		}
	}
	for _, bad := range [][]byte{nil, {0x80}, {3}, {2}, {0xfe, 0xff, 0xff, 0xff, 0x0f}} {
		if _, _, err := ProtoIndexes(bad); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}
