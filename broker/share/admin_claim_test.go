package share

import (
	"log/slog"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// fakeStore is the share-state store as the coordinator sees it: which
// share partitions have state. Its initializer can be held or made to
// fail.
type fakeStore struct {
	mu    sync.Mutex
	has   map[Key]bool
	fail  bool
	hold  chan struct{} // non-nil: initializations wait for it
	enter chan struct{} // told when a held initialization starts
}

func newFakeStore() *fakeStore { return &fakeStore{has: map[Key]bool{}} }

func (s *fakeStore) init(_ string, keys []Key) map[Key]error {
	s.mu.Lock()
	hold, enter, fail := s.hold, s.enter, s.fail
	s.mu.Unlock()
	if hold != nil {
		enter <- struct{}{}
		<-hold
	}
	failed := map[Key]error{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		if fail {
			failed[k] = kerr.CoordinatorNotAvailable
		} else {
			s.has[k] = true
		}
	}
	return failed
}

// deleteIfAllowed is what the DeleteGroups and DeleteShareGroupOffsets
// handlers do after StateDeleting: delete the topics' states only if it
// succeeded.
func (s *fakeStore) deleteIfAllowed(e *kerr.Error, topic [16]byte) {
	if e != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.has {
		if k.Topic == topic {
			delete(s.has, k)
		}
	}
}

// stateless is the ready partitions of m's group g that have no state in
// the store: a member assigned one is refused (ErrUninitialized), and
// nothing initializes it again.
func (s *fakeStore) stateless(m *Manager, g string) []tpKey {
	m.mu.Lock()
	defer m.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []tpKey
	if gr := m.groups[g]; gr != nil {
		for k := range gr.ready {
			if !s.has[Key{Group: g, Topic: k.topic, Partition: k.partition}] {
				out = append(out, k)
			}
		}
	}
	return out
}

// claimAdmin polls AdminGroup as a client retries it: the member's leave
// and the run it started end soon.
// It returns the generation the call was let in at.
func claimAdmin(t *testing.T, m *Manager, g string) uint64 {
	t.Helper()
	var e *kerr.Error
	gen := curGen(m)
	waitFor(t, "AdminGroup", func() bool { e = m.AdminGroup(g, false, 0, gen); return e != kerr.CoordinatorLoadInProgress })
	if e != nil {
		t.Fatal(e)
	}
	return gen
}

// curGen is the generation partition 0 is loaded at now.
func curGen(m *Manager) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.gens[0]
}

// adminGroup is AdminGroup as the coordinator lets it in: at the
// generation partition 0 is loaded at now.
func adminGroup(m *Manager, g string, create bool) *kerr.Error {
	return m.AdminGroup(g, create, 0, curGen(m))
}

func moveCoordinator(m *Manager, log *memLog, gen uint64) {
	log.mu.Lock()
	log.gens[0] = gen
	log.mu.Unlock()
	m.UnloadShare(0, gen)
}

// The __consumer_offsets partition moves between an administrator's
// AdminGroup and StateDeleting (review of h/share, H1): StateDeleting
// must refuse, so that the caller deletes no state that the new
// coordinator, loading the group from the log, takes as initialized.
func TestStateDeletingRefusedAfterUnload(t *testing.T) {
	log, c, st := &memLog{}, newClock(), newFakeStore()
	m := persisted(t, log, c, testPersistCfg())
	m.SetInitializer(st.init)
	hb(m, "g", "a", 0, "t")
	waitFor(t, "initialized", func() bool { return !m.InitRunning("g") && len(m.StateTopics("g")) > 0 })
	if r := hb(m, "g", "a", -1); r.ErrorCode != 0 {
		t.Fatal(r.ErrorCode)
	}
	gen := claimAdmin(t, m, "g")
	moveCoordinator(m, log, 2)
	topic := testTopics["t"].ID
	e := m.StateDeleting("g", map[[16]byte]string{topic: "t"}, gen)
	if e != kerr.NotCoordinator {
		t.Errorf("StateDeleting for a group unloaded since AdminGroup: %v, want NOT_COORDINATOR", e)
	}
	st.deleteIfAllowed(e, topic)
	if e := m.StateDeleted("g", [][16]byte{topic}, gen); e != kerr.NotCoordinator {
		t.Errorf("StateDeleted for a group unloaded since AdminGroup: %v, want NOT_COORDINATOR", e)
	}
	m.AdminDone("g")

	m2, err := NewManager(testPersistCfg(), nil, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	m2.SetInitializer(st.init)
	m2.LoadShare(0, 2, log.snapshot(), testTopics)
	if bad := st.stateless(m2, "g"); len(bad) > 0 {
		t.Fatalf("the new coordinator takes %d partitions as initialized whose state was deleted: %v", len(bad), bad)
	}
}

// The same on one broker (H1's variant): the partition is unloaded and
// loaded again during the administrator's call, a member joins and an
// initialization of the topic runs. StateDeleting must refuse, and
// whatever the run marks initialized must have state, here and at the
// next coordinator.
func TestStateDeletingRefusedAfterReloadWithInitialization(t *testing.T) {
	log, c, st := &memLog{}, newClock(), newFakeStore()
	m := persisted(t, log, c, testPersistCfg())
	m.SetInitializer(st.init)
	// t recorded initializing, its initialization failing: after a
	// reload it is initialized again when a member is assigned it.
	st.fail = true
	hb(m, "g", "a", 0, "t")
	waitFor(t, "t initializing", func() bool { return len(m.StateTopics("g")) > 0 })
	if r := hb(m, "g", "a", -1); r.ErrorCode != 0 {
		t.Fatal(r.ErrorCode)
	}
	waitFor(t, "the run to end", func() bool { return !m.InitRunning("g") })
	gen := claimAdmin(t, m, "g")

	moveCoordinator(m, log, 2)
	m.LoadShare(0, 2, log.snapshot(), testTopics)
	st.mu.Lock()
	st.fail, st.hold, st.enter = false, make(chan struct{}), make(chan struct{}, 1)
	st.mu.Unlock()
	hb(m, "g", "b", 0, "t")
	<-st.enter
	topic := testTopics["t"].ID
	e := m.StateDeleting("g", map[[16]byte]string{topic: "t"}, gen)
	if e != kerr.NotCoordinator {
		t.Errorf("StateDeleting after a reload, with an initialization under way: %v, want NOT_COORDINATOR", e)
	}
	close(st.hold)
	waitFor(t, "the run to end", func() bool { return !m.InitRunning("g") })
	st.deleteIfAllowed(e, topic)
	m.AdminDone("g")
	if bad := st.stateless(m, "g"); len(bad) > 0 {
		t.Errorf("this coordinator assigns %d partitions whose state was deleted: %v", len(bad), bad)
	}
	m2, err := NewManager(testPersistCfg(), nil, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	m2.LoadShare(0, 2, log.snapshot(), testTopics)
	if bad := st.stateless(m2, "g"); len(bad) > 0 {
		t.Fatalf("the next coordinator takes %d partitions as initialized whose state was deleted: %v", len(bad), bad)
	}
}

// An initialization run that ends after the group became an
// administrator's and its topic moved to deleting marks nothing
// initialized (H1, second part): the state is about to go. Reached only
// by a path StateDeleting now refuses, so set up by hand.
func TestInitializationYieldsToDeleting(t *testing.T) {
	log, c, st := &memLog{}, newClock(), newFakeStore()
	m := persisted(t, log, c, testPersistCfg())
	st.hold, st.enter = make(chan struct{}), make(chan struct{}, 1)
	m.SetInitializer(st.init)
	hb(m, "g", "a", 0, "t")
	<-st.enter
	topic := testTopics["t"].ID
	m.mu.Lock()
	g := m.groups["g"]
	m.busy["g"] = true
	g.state.deleting = map[[16]byte]string{topic: "t"}
	delete(g.state.initializing, topic)
	m.mu.Unlock()
	close(st.hold)
	waitFor(t, "the run to end", func() bool { return !m.InitRunning("g") })
	m.mu.Lock()
	_, initialized := g.state.initialized[topic]
	_, deleting := g.state.deleting[topic]
	ready := len(g.ready)
	m.mu.Unlock()
	if initialized || !deleting || ready > 0 {
		t.Fatalf("a run ending during a deletion: initialized %v, deleting %v, ready %d; want the topic left deleting", initialized, deleting, ready)
	}
}

// An AlterShareGroupOffsets let in before its partition was unloaded
// creates no group here (review M1): it would be a ghost on a broker
// that is no longer the coordinator.
func TestAdminGroupRefusedAfterUnload(t *testing.T) {
	log, c := &memLog{}, newClock()
	m := persisted(t, log, c, testPersistCfg())
	m.mu.Lock()
	gen := m.gens[0]
	m.mu.Unlock()
	moveCoordinator(m, log, gen+1) // after ShareStatus, before AdminGroup
	if e := m.AdminGroup("g", true, 0, gen); e != kerr.NotCoordinator {
		t.Errorf("AdminGroup(create) at an old generation: %v, want NOT_COORDINATOR", e)
	}
	if m.Has("g") {
		t.Fatal("AdminGroup at an old generation created the group on a broker that no longer leads its partition")
	}
}

// After a reload during an administrator's call another call claims the
// group again (busy once more): the first call's StateDeleting must
// still refuse, its claim being of the old generation.
func TestStateDeletingRefusedAfterReloadAndNewClaim(t *testing.T) {
	log, c, st := &memLog{}, newClock(), newFakeStore()
	m := persisted(t, log, c, testPersistCfg())
	m.SetInitializer(st.init)
	hb(m, "g", "a", 0, "t")
	waitFor(t, "initialized", func() bool { return !m.InitRunning("g") && len(m.StateTopics("g")) > 0 })
	if r := hb(m, "g", "a", -1); r.ErrorCode != 0 {
		t.Fatal(r.ErrorCode)
	}
	first := claimAdmin(t, m, "g")
	moveCoordinator(m, log, 2)
	m.LoadShare(0, 2, log.snapshot(), testTopics)
	second := claimAdmin(t, m, "g")
	topic := testTopics["t"].ID
	if e := m.StateDeleting("g", map[[16]byte]string{topic: "t"}, first); e != kerr.NotCoordinator {
		t.Errorf("the first call's StateDeleting after a reload and a new claim: %v, want NOT_COORDINATOR", e)
	}
	if e := m.StateDeleting("g", map[[16]byte]string{topic: "t"}, second); e != nil {
		t.Errorf("the second call's StateDeleting: %v", e)
	}
	m.AdminDone("g")
}
