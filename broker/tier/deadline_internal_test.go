package tier

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestChunkLoadTimeout: a chunk load that hangs (a DataNode that accepts
// and never answers) fails its readers with a retriable error after the
// timeout and frees its slot for other loads; only when as many loads as
// there are slots hang does the cache refuse new ones, with an error,
// not a wait that never ends (it used to hand out c.freed, never closed).
func TestChunkLoadTimeout(t *testing.T) {
	t.Parallel()
	c := newChunkCache(4<<10, 1<<10, 100*time.Millisecond) // 2 slots
	release := make(chan struct{})
	defer close(release)
	hang := func() ([]byte, error) { <-release; return []byte("late"), nil }
	k := chunkKey{dir: "d", seg: "s", suffix: ".log"}
	_, wait, err := c.get(k, hang, 100)
	if err != nil || wait == nil {
		t.Fatalf("get: %v %v, want a load started", wait, err)
	}
	select {
	case <-wait:
	case <-time.After(5 * time.Second):
		t.Fatal("the hung load's readers were never woken")
	}
	if _, _, err := c.get(k, hang, 100); !errors.Is(err, ErrUnavailable) || !strings.Contains(fmt.Sprint(err), errTimedOut.Error()) {
		t.Fatalf("after the timeout: %v, want ErrUnavailable (timed out)", err)
	}
	// Its slot is free: another chunk loads.
	k2 := chunkKey{dir: "d", seg: "s", suffix: ".log", i: 1}
	_, wait, err = c.get(k2, func() ([]byte, error) { return []byte("ok"), nil }, 2)
	if err != nil || wait == nil {
		t.Fatalf("get of another chunk: %v %v", wait, err)
	}
	<-wait
	if data, _, err := c.get(k2, nil, 2); err != nil || string(data) != "ok" {
		t.Fatalf("the other chunk: %q %v", data, err)
	}
	// Both slots' loads hung: refused at once, with an error.
	k3 := chunkKey{dir: "d", seg: "s", suffix: ".log", i: 2}
	if _, wait, err = c.get(k3, hang, 100); err != nil {
		t.Fatal(err)
	}
	<-wait
	c.get(k3, nil, 0) // forget the failure
	if _, wait, err := c.get(chunkKey{dir: "d", seg: "s", suffix: ".log", i: 3}, hang, 100); !errors.Is(err, errTimedOut) || wait != nil {
		t.Fatalf("with every slot's load hung: %v %v, want an error at once", wait, err)
	}
}
