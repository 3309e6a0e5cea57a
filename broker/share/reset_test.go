package share

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// epochStore is a Store that fences writes older than the stored state
// epoch, as the share coordinator does (FENCED_STATE_EPOCH), and lets the
// test reset a key as an administrator's InitializeShareGroupState does.
type epochStore struct {
	mu    sync.Mutex
	state map[Key]Snapshot
}

func (s *epochStore) Read(k Key) (Snapshot, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.state[k]
	return v, ok, nil
}

func (s *epochStore) Write(k Key, v *Snapshot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, ok := s.state[k]; ok && v != nil && v.StateEpoch < cur.StateEpoch {
		return kerr.FencedStateEpoch
	}
	if v == nil {
		delete(s.state, k)
	} else {
		s.state[k] = *v
	}
	return nil
}

func (s *epochStore) reset(k Key, start int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state[k] = Snapshot{StateEpoch: s.state[k].StateEpoch + 1, StartOffset: start}
}

// TestResetReachesLeaderCopy: an administrator's reset made at the share
// coordinator (a new state epoch) reaches the partition leader that still
// holds the old state in memory: a new share session makes it reload,
// and a write of the old copy is fenced and drops it.
func TestResetReachesLeaderCopy(t *testing.T) {
	st := &epochStore{state: map[Key]Snapshot{}}
	m, err := NewManager(Config{MaxSize: 200, SessionTimeout: time.Minute, HeartbeatInterval: time.Second, MaxSessions: 20, DeliveryLimit: 5, MaxRecordLocks: 20, LockDuration: time.Minute, AutoOffsetReset: "earliest"}, st, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Group: "g", Topic: [16]byte{1}, Partition: 0}
	tp := []TP{{Topic: k.Topic, Partition: 0}}
	if _, e := m.Session("conn", "g", "m1", 0, tp, nil, false); e != nil {
		t.Fatal(e)
	}
	if got, e := m.Acquire(k, 0, "m1", 10, 5, 0); e != nil || len(got) != 1 || got[0].Last != 4 {
		t.Fatalf("acquire: %v %v", got, e)
	}
	if e := m.Acknowledge(k, 0, "m1", []AckBatch{{First: 0, Last: 4, Types: []int8{AckAccept}}}); e != nil {
		t.Fatal(e)
	}
	m.CloseSession("g", "m1")

	// Reset to 0 elsewhere; the leader's copy says 5. A member opening a
	// session gets everything again.
	st.reset(k, 0)
	if _, e := m.Session("conn", "g", "m2", 0, tp, nil, false); e != nil {
		t.Fatal(e)
	}
	got, e := m.Acquire(k, 0, "m2", 10, 5, 0)
	if e != nil || len(got) != 1 || got[0].First != 0 || got[0].Last != 4 || got[0].Count != 1 {
		t.Fatalf("after the reset to 0: %v %v, want 0-4 at delivery count 1", got, e)
	}
	// Without the reset, a new session keeps the copy (and m2's locks).
	if _, e := m.Session("conn", "g", "m3", 0, tp, nil, false); e != nil {
		t.Fatal(e)
	}
	if got, _ := m.Acquire(k, 0, "m3", 10, 5, 0); len(got) != 0 {
		t.Fatalf("m3 acquired %v while m2 holds 0-4", got)
	}

	// Reset to 2 while m2 holds 0-4: m2's release is written at the old
	// state epoch, fenced, and the copy dropped: the next use reads 2.
	st.reset(k, 2)
	if e := m.Acknowledge(k, 0, "m2", []AckBatch{{First: 0, Last: 4, Types: []int8{AckRelease}}}); e != kerr.FencedStateEpoch {
		t.Fatalf("a release written at the old state epoch: %v, want FENCED_STATE_EPOCH", e)
	}
	if got, e := m.Acquire(k, 0, "m3", 10, 5, 0); e != nil || len(got) != 1 || got[0].First != 2 || got[0].Last != 4 {
		t.Fatalf("after the reset to 2: %v %v, want 2-4", got, e)
	}
}
