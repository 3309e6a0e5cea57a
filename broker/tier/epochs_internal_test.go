package tier

import (
	"errors"
	"slices"
	"testing"

	"github.com/tributary-io/tributary/broker/log"
)

// TestParseEpochCheckpoint: a remote segment's leader-epoch checkpoint is
// parsed by broker/log's parser (its format errors are ErrCorruptCheckpoint),
// and on top of it the epochs and their start offsets must increase, as a
// log's do, before a follower starts from them.
func TestParseEpochCheckpoint(t *testing.T) {
	want := []log.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 2, StartOffset: 40}}
	if got, err := parseEpochCheckpoint("ok", epochCheckpoint(want)); err != nil || !slices.Equal(got, want) {
		t.Errorf("what epochCheckpoint writes: %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{
		"1\n1\n0 0\n",        // another version
		"0\n2\n0 0\n",        // fewer entries than counted
		"0\n1\n0 0\n1 5\n",   // more
		"0\n1\n-1 0\n",       // a negative epoch
		"0\n1\n0 x\n",        // not a number
		"0\n2\n0 0\n0 10\n",  // an epoch again
		"0\n2\n1 10\n2 10\n", // an offset again
		"0\n2\n2 10\n1 20\n", // epochs going back
	} {
		if got, err := parseEpochCheckpoint("bad", []byte(bad)); err == nil {
			t.Errorf("%q parsed as %v", bad, got)
		}
	}
	if _, err := parseEpochCheckpoint("bad", []byte("2\n")); !errors.Is(err, log.ErrCorruptCheckpoint) {
		t.Errorf("a bad version: %v, want broker/log's ErrCorruptCheckpoint", err)
	}
}
