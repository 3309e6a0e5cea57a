package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/share"
)

// TestShareResetReachesLeaderCopy: an administrator's reset made at the
// share coordinator (InitializeShareGroupState at a new state epoch, the
// real __share_group_state store) reaches the partition leader that still
// holds the old state in memory: a new share session makes it reload, a
// write of the old copy is fenced (NOT_LEADER_OR_FOLLOWER to the client,
// as Kafka maps FENCED_STATE_EPOCH) and drops it, and after a delete the
// old copy's write is refused and the next use begins afresh.
func TestShareResetReachesLeaderCopy(t *testing.T) {
	s := startAdminBroker(t, shareProps)
	id := admCreateTopic(t, s, "rz", 1, nil)
	m := s.shares
	const g = "rg"
	k := share.Key{Group: g, Topic: id, Partition: 0}
	tp := []share.TP{{Topic: id, Partition: 0}}
	reset := func(start int64) {
		t.Helper()
		found, next, errs := s.shareState.Summaries(g, []share.Key{k})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		if errs := s.shareState.Initialize(g, map[share.Key]shareInit{k: {Epoch: max(found[k].StateEpoch, next[k]) + 1, Start: start}}); len(errs) > 0 {
			t.Fatal(errs)
		}
	}
	session := func(member string) {
		t.Helper()
		if _, e := m.Session("conn", g, member, 0, tp, nil, false); e != nil {
			t.Fatal(e)
		}
	}
	reset(0) // share.auto.offset.reset is latest: begin at 0 as an administrator would
	session("m1")
	if got, e := m.Acquire(k, 0, "m1", 10, 5, 0); e != nil || len(got) != 1 || got[0].Last != 4 {
		t.Fatalf("acquire: %v %v", got, e)
	}
	if e := m.Acknowledge(k, 0, "m1", []share.AckBatch{{First: 0, Last: 4, Types: []int8{share.AckAccept}}}); e != nil {
		t.Fatal(e)
	}
	m.CloseSession(g, "m1")
	if st, ok, _ := s.shareState.Read(k); !ok || st.StartOffset != 5 {
		t.Fatalf("stored after the acks: %+v %v, want start 5", st, ok)
	}

	// Reset to 0 at the coordinator; the leader's copy says 5. A member
	// opening a session gets everything again.
	reset(0)
	session("m2")
	got, e := m.Acquire(k, 0, "m2", 10, 5, 0)
	if e != nil || len(got) != 1 || got[0].First != 0 || got[0].Last != 4 || got[0].Count != 1 {
		t.Fatalf("after the reset to 0: %v %v, want 0-4 at delivery count 1", got, e)
	}
	// Without a reset, a new session keeps the copy (and m2's locks).
	session("m3")
	if got, _ := m.Acquire(k, 0, "m3", 10, 5, 0); len(got) != 0 {
		t.Fatalf("m3 acquired %v while m2 holds 0-4", got)
	}

	// Reset to 2 while m2 holds 0-4: m2's release is written at the old
	// state epoch, fenced, and the copy dropped: the next use reads 2.
	reset(2)
	if e := m.Acknowledge(k, 0, "m2", []share.AckBatch{{First: 0, Last: 4, Types: []int8{share.AckRelease}}}); e != kerr.NotLeaderForPartition {
		t.Fatalf("a release written at the old state epoch: %v, want NOT_LEADER_OR_FOLLOWER", e)
	}
	if got, e := m.Acquire(k, 0, "m3", 10, 5, 0); e != nil || len(got) != 1 || got[0].First != 2 || got[0].Last != 4 {
		t.Fatalf("after the reset to 2: %v %v, want 2-4", got, e)
	}

	// Delete while m3 holds 2-4: m3's release is refused (no state to
	// write to), the copy dropped, and the state stays deleted; the next
	// use begins at share.auto.offset.reset (latest: the high watermark).
	if errs := s.shareState.Delete(g, []share.Key{k}); len(errs) > 0 {
		t.Fatal(errs)
	}
	if e := m.Acknowledge(k, 0, "m3", []share.AckBatch{{First: 2, Last: 4, Types: []int8{share.AckRelease}}}); e != kerr.NotLeaderForPartition {
		t.Fatalf("a release after the delete: %v, want NOT_LEADER_OR_FOLLOWER", e)
	}
	if st, ok, _ := s.shareState.Read(k); ok {
		t.Fatalf("the deleted state came back: %+v", st)
	}
	// Deleted is uninitialized: refused until the group's coordinator
	// initializes it again.
	if got, e := m.Acquire(k, 0, "m3", 10, 5, 0); e != share.ErrUninitialized || len(got) != 0 {
		t.Fatalf("after the delete: %v %v, want UNKNOWN_SERVER_ERROR", got, e)
	}
	if errs := s.shareState.InitializeNew(g, []share.Key{k}); len(errs) > 0 {
		t.Fatal(errs)
	}
	if got, e := m.Acquire(k, 0, "m3", 10, 5, 0); e != nil || len(got) != 0 {
		t.Fatalf("after the delete and a new initialization: %v %v, want nothing below the high watermark 5", got, e)
	}
	if got, e := m.Acquire(k, 0, "m3", 10, 7, 0); e != nil || len(got) != 1 || got[0].First != 5 || got[0].Last != 6 || got[0].Count != 1 {
		t.Fatalf("after the delete, 2 records more: %v %v, want 5-6 at delivery count 1", got, e)
	}
	if e := m.Acknowledge(k, 0, "m3", []share.AckBatch{{First: 5, Last: 6, Types: []int8{share.AckAccept}}}); e != nil {
		t.Fatalf("acks of the state begun after the delete: %v", e)
	}
	if st, ok, _ := s.shareState.Read(k); !ok || st.StartOffset < 5 || st.StateEpoch != 4 {
		// Epochs: resets 1, 2, 3; the delete's marker 4, where the state
		// begun afresh starts.
		t.Fatalf("stored after the delete and acks: %+v %v, want start 5 or more at a state epoch past the deleted one's", st, ok)
	}
}
