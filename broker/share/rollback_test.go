package share

import (
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// flakyStore is a Store whose writes can be made to fail, after landing
// or not, as a state partition with no leader or too few in-sync
// replicas makes them fail.
type flakyStore struct {
	mu    sync.Mutex
	state map[Key]Snapshot
	fail  error
	land  bool // a failing write is stored all the same (the answer was lost)
}

func (s *flakyStore) Read(k Key) (Snapshot, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.state[k]
	return v, ok, nil
}

func (s *flakyStore) Write(k Key, v *Snapshot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil && !s.land {
		return s.fail
	}
	if v == nil {
		delete(s.state, k)
	} else {
		s.state[k] = *v
	}
	return s.fail
}

func (s *flakyStore) set(fail error, land bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail, s.land = fail, land
}

func (s *flakyStore) get(k Key) Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state[k]
}

// TestAckRolledBackWhenWriteFails: an acknowledgement whose state write
// fails is answered with the write's error and undone, as Kafka's
// SharePartition rolls back on a failed persister write: the records
// stay the member's, come back when the lock expires and are delivered
// again; the store ends up without the acknowledgement even when the
// failed write did land.
func TestAckRolledBackWhenWriteFails(t *testing.T) {
	for _, land := range []bool{false, true} {
		st := &flakyStore{state: map[Key]Snapshot{}}
		m, err := NewManager(Config{MaxSize: 200, SessionTimeout: time.Minute, HeartbeatInterval: time.Second, MaxSessions: 20, DeliveryLimit: 5, MaxRecordLocks: 20, LockDuration: time.Second, AutoOffsetReset: "earliest"}, st, slog.Default())
		if err != nil {
			t.Fatal(err)
		}
		now := time.Unix(1000, 0)
		m.now = func() time.Time { return now }
		k := Key{Group: "g", Topic: [16]byte{1}, Partition: 0}
		st.state[k] = Snapshot{StartOffset: StartUnset} // initialized by the coordinator
		got, e := m.Acquire(k, 0, "m1", 10, 5, 0)
		if e != nil || len(got) != 1 || got[0].First != 0 || got[0].Last != 4 {
			t.Fatalf("acquire: %v %v", got, e)
		}
		m.flush()

		st.set(kerr.NotEnoughReplicas, land)
		ack := []AckBatch{{First: 0, Last: 2, Types: []int8{AckAccept}}, {First: 3, Last: 3, Types: []int8{AckRelease}}}
		if e := m.Acknowledge(k, 0, "m1", ack); e != kerr.CoordinatorNotAvailable {
			t.Fatalf("land=%v: ack with a failing write answered %v, want COORDINATOR_NOT_AVAILABLE", land, e)
		}
		for off := int64(0); off < 5; off++ {
			m.mu.Lock()
			s, n := m.parts[k].State(off)
			m.mu.Unlock()
			if s != Acquired || n != 1 {
				t.Fatalf("land=%v: offset %d is %v (count %d) after the failed ack, want acquired (1)", land, off, s, n)
			}
		}
		if start, _ := m.StartOffset(k); start != 0 {
			t.Fatalf("land=%v: SPSO %d after the failed ack, want 0", land, start)
		}
		// Nothing released by the failed ack can be acquired meanwhile.
		if got, _ := m.Acquire(k, 0, "m2", 10, 5, 0); len(got) != 0 {
			t.Fatalf("land=%v: m2 acquired %v while m1 holds everything", land, got)
		}

		st.set(nil, false)
		now = now.Add(2 * time.Second)
		m.expire() // flushes the state as rolled back
		if s := st.get(k); s.StartOffset != 0 || len(s.Batches) != 1 || s.Batches[0] != (Batch{First: 0, Last: 4, State: Available, Count: 1}) {
			t.Fatalf("land=%v: stored state %+v, want 0-4 available at count 1 (nothing acknowledged)", land, s)
		}
		got, e = m.Acquire(k, 0, "m2", 10, 5, 0)
		if e != nil || len(got) != 1 || got[0].First != 0 || got[0].Last != 4 || got[0].Count != 2 {
			t.Fatalf("land=%v: redelivery after the lock expired: %v %v, want 0-4 at count 2", land, got, e)
		}

		// The same acknowledgement now succeeds and holds.
		if e := m.Acknowledge(k, 0, "m2", ack); e != nil {
			t.Fatalf("land=%v: ack: %v", land, e)
		}
		if start, _ := m.StartOffset(k); start != 3 {
			t.Fatalf("land=%v: SPSO %d after the ack, want 3", land, start)
		}
		if got, _ := m.Acquire(k, 0, "m1", 10, 5, 0); len(got) != 1 || got[0].First != 3 || got[0].Last != 3 {
			t.Fatalf("land=%v: after releasing 3, m1 acquired %v", land, got)
		}
	}
}

// TestAckFencedWriteAnswersNotLeader: a write refused as fenced (a newer
// leader wrote the state) answers NOT_LEADER_OR_FOLLOWER, Kafka's mapping
// of FENCED_LEADER_EPOCH from the persister.
func TestAckFencedWriteAnswersNotLeader(t *testing.T) {
	st := &flakyStore{state: map[Key]Snapshot{}}
	m, err := NewManager(Config{MaxSize: 200, SessionTimeout: time.Minute, HeartbeatInterval: time.Second, MaxSessions: 20, DeliveryLimit: 5, MaxRecordLocks: 20, LockDuration: time.Minute, AutoOffsetReset: "earliest"}, st, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Group: "g", Topic: [16]byte{2}}
	st.state[k] = Snapshot{StartOffset: StartUnset}
	if _, e := m.Acquire(k, 0, "m1", 10, 2, 0); e != nil {
		t.Fatal(e)
	}
	st.set(errors.Join(kerr.FencedLeaderEpoch), false)
	if e := m.Acknowledge(k, 0, "m1", []AckBatch{{First: 0, Last: 1, Types: []int8{AckAccept}}}); e != kerr.NotLeaderForPartition {
		t.Fatalf("fenced write answered %v, want NOT_LEADER_OR_FOLLOWER", e)
	}
}
