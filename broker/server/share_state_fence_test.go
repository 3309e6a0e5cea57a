package server

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/share"
)

// A partition leader's stale copy written after an administrator's
// DeleteShareGroupState must not bring the deleted state back: a write to
// a key without state is refused (INVALID_REQUEST, Kafka's
// WRITE_UNINITIALIZED_SHARE_PARTITION), and so is a create at one of the
// deleted state's epochs (review M1).
func TestShareStateWriteAfterDeleteRefused(t *testing.T) {
	s := startAdminBroker(t, shareProps)
	id := admCreateTopic(t, s, "dz", 1, nil)
	k := share.Key{Group: "dg", Topic: id, Partition: 0}
	if err := s.shareState.Write(k, &share.Snapshot{LeaderEpoch: 0, StartOffset: 7}); err != kerr.InvalidRequest {
		t.Fatalf("a leader's write to a key never initialized: %v, want INVALID_REQUEST", err)
	}
	if err := s.shareState.Write(k, &share.Snapshot{LeaderEpoch: 0, StartOffset: 7, Create: true}); err != nil {
		t.Fatal(err)
	}
	if errs := s.shareState.Delete("dg", []share.Key{k}); len(errs) > 0 {
		t.Fatal(errs)
	}
	// The old leader's pending write (lock expiry, a late ack) lands now.
	if err := s.shareState.Write(k, &share.Snapshot{LeaderEpoch: 0, StartOffset: 7}); err != kerr.InvalidRequest {
		t.Errorf("stale write after delete: %v, want INVALID_REQUEST", err)
	}
	if err := s.shareState.Write(k, &share.Snapshot{LeaderEpoch: 0, StartOffset: 7, Create: true}); err != kerr.FencedStateEpoch {
		t.Errorf("stale create at the deleted state's epoch: %v, want FENCED_STATE_EPOCH", err)
	}
	got, ok, _ := s.shareState.Read(k)
	if ok {
		t.Fatalf("deleted share-partition state resurrected by a stale write (start %d)", got.StartOffset)
	}
	// A leader beginning afresh uses the epoch the read gives it.
	if got.StateEpoch != 1 {
		t.Fatalf("no state after delete: next state epoch %d, want 1", got.StateEpoch)
	}
	if err := s.shareState.Write(k, &share.Snapshot{StateEpoch: got.StateEpoch, LeaderEpoch: 0, StartOffset: 0, Create: true}); err != nil {
		t.Fatalf("a new state after the delete: %v", err)
	}
	// The marker outlives a reload of the state partition.
	s.shareState.mu.Lock()
	for p := range s.shareState.loaded {
		st := map[share.Key]share.Snapshot{}
		if err := s.shareState.read(p, st); err != nil {
			t.Fatal(err)
		}
		if v, ok := st[k]; ok && (v.StateEpoch != 1 || v.StartOffset != 0) {
			t.Errorf("replayed state %+v, want epoch 1 start 0", v)
		}
	}
	s.shareState.mu.Unlock()
}

// Reset, delete, reset: the second reset must get a state epoch past the
// first's, or a leader's copy from the first reset is neither fenced on
// write nor reloaded by a new session's check (review M2).
func TestShareStateEpochNotReusedAfterDelete(t *testing.T) {
	s := startAdminBroker(t, shareProps)
	id := admCreateTopic(t, s, "ez", 1, nil)
	k := share.Key{Group: "eg", Topic: id, Partition: 0}
	alter := func(start int64) int32 {
		found, next, errs := s.shareState.Summaries("eg", []share.Key{k})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		ep := max(found[k].StateEpoch, next[k]) + 1 // as handleAlterShareGroupOffsets
		if errs := s.shareState.Initialize("eg", map[share.Key]shareInit{k: {Epoch: ep, Start: start}}); len(errs) > 0 {
			t.Fatal(errs)
		}
		return ep
	}
	e1 := alter(5)
	if errs := s.shareState.Delete("eg", []share.Key{k}); len(errs) > 0 {
		t.Fatal(errs)
	}
	e2 := alter(0)
	// The leader's copy from after the first reset (epoch e1, start 5) writes.
	err := s.shareState.Write(k, &share.Snapshot{StateEpoch: e1, LeaderEpoch: 0, StartOffset: 5})
	got, _, _ := s.shareState.Read(k)
	if e2 <= e1 || err != kerr.FencedStateEpoch || got.StartOffset != 0 {
		t.Errorf("epochs %d then %d; stale write %v; start %d: the second reset (to 0) was overwritten by the first reset's copy", e1, e2, err, got.StartOffset)
	}
}

// An initialization whose first attempt was appended but not committed in
// time (COORDINATOR_NOT_AVAILABLE, retried at the same epoch) succeeds on
// the retry: it took effect (review M3).
func TestShareStateInitializeRetrySameEpoch(t *testing.T) {
	s := startAdminBroker(t, shareProps)
	id := admCreateTopic(t, s, "iz", 1, nil)
	k := share.Key{Group: "ig", Topic: id, Partition: 0}
	// Creates and loads __share_group_state first.
	if errs := s.shareState.Initialize("other", map[share.Key]shareInit{{Group: "other", Topic: id}: {Epoch: 1}}); len(errs) > 0 {
		t.Fatal(errs)
	}
	s.shareState.uncommitted.Store(true)
	go func() { time.Sleep(20 * time.Millisecond); s.shareState.uncommitted.Store(false) }()
	errs := s.shareState.Initialize("ig", map[share.Key]shareInit{k: {Epoch: 1, Start: 3}})
	got, ok, _ := s.shareState.Read(k)
	if len(errs) > 0 || !ok || got.StateEpoch != 1 || got.StartOffset != 3 {
		t.Errorf("initialize errs=%v; state found=%v epoch=%d start=%d, want no error and epoch 1 start 3", errs, ok, got.StateEpoch, got.StartOffset)
	}
	// An older epoch is still fenced.
	if errs := s.shareState.Initialize("ig", map[share.Key]shareInit{k: {Epoch: 0, Start: 9}}); errs[k] != kerr.FencedStateEpoch {
		t.Errorf("an initialization at an older epoch: %v, want FENCED_STATE_EPOCH", errs)
	}
}
