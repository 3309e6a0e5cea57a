package share

import (
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// persistedInit is persisted (persist_test.go) with an initializer, set
// before the load as the server sets it.
func persistedInit(t *testing.T, log *memLog, c *clock, r *recInit) *Manager {
	t.Helper()
	m, err := NewManager(testPersistCfg(), nil, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	m.now = c.now
	m.SetSink(log, func(string) int32 { return 0 })
	m.SetInitializer(r.init)
	log.mu.Lock()
	if log.gens == nil {
		log.gens = map[int32]uint64{}
	}
	log.gens[0]++
	gen := log.gens[0]
	log.mu.Unlock()
	m.LoadShare(0, gen, log.snapshot(), testTopics)
	go m.writer()
	t.Cleanup(func() { close(m.stop); m.initWG.Wait() })
	return m
}

// statePartsIn is the type-15 values written to log, in order.
func statePartsIn(t *testing.T, log *memLog) []statePart {
	var out []statePart
	for _, r := range log.snapshot() {
		if typ, _, _, err := parseKey(r.Key); err != nil || typ != recStatePartMeta || r.Value == nil {
			continue
		}
		d := readValue(r.Value)
		sp := readStatePart(d)
		if d.err != nil {
			t.Fatal(d.err)
		}
		out = append(out, sp)
	}
	return out
}

func joinUntilAssigned(t *testing.T, m *Manager, group, member string) int32 {
	t.Helper()
	r := hb(m, group, member, 0, "t")
	if r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	waitFor(t, member+" assigned", func() bool {
		r = hb(m, group, member, r.MemberEpoch)
		return r.ErrorCode == 0 && assigned(r) == 3
	})
	return r.MemberEpoch
}

// The type-15 record follows the initialization as Kafka's coordinator
// writes it: the partitions initializing before their state is created,
// initialized after; and a coordinator that loads the group (restart,
// move) takes what is initialized as initialized: a member that joins
// gets the partitions at its first heartbeat, with no new initialization
// (before, the new coordinator held them all back for a round).
func TestReplayedGroupKeepsItsInitializedPartitions(t *testing.T) {
	log, c := &memLog{}, newClock()
	r := &recInit{}
	recorded := make(chan bool, 10)
	r.onCall = func([]Key) {
		sps := statePartsIn(t, log)
		recorded <- len(sps) > 0 && len(sps[len(sps)-1].initializing[[16]byte{1}].parts) == 3
	}
	m := persistedInit(t, log, c, r)
	epochA := joinUntilAssigned(t, m, "g", "a")
	sps := statePartsIn(t, log)
	if len(sps) < 2 {
		t.Fatalf("type-15 records written: %+v, want initializing then initialized", sps)
	}
	first, last := sps[0], sps[len(sps)-1]
	if len(first.initializing[[16]byte{1}].parts) != 3 || len(first.initialized) != 0 {
		t.Fatalf("first type-15 record %+v, want partitions 0-2 of t initializing", first)
	}
	if len(last.initialized[[16]byte{1}].parts) != 3 || len(last.initializing) != 0 || last.initialized[[16]byte{1}].name != "t" {
		t.Fatalf("last type-15 record %+v, want partitions 0-2 of t initialized", last)
	}
	if !<-recorded {
		t.Fatal("the state was initialized before the type-15 record said it was initializing")
	}
	if len(r.calls) != 1 {
		t.Fatalf("initializations: %v, want 1", r.calls)
	}
	r2 := &recInit{}
	m2 := persistedInit(t, log, c, r2)
	b := hb(m2, "g", "b", 0, "t")
	if b.ErrorCode != 0 || assigned(b) == 0 {
		t.Fatalf("a member joining the reloaded group: %v with %d partitions, want some at once", kerr.ErrorForCode(b.ErrorCode), assigned(b))
	}
	if a := hb(m2, "g", "a", epochA); a.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(a.ErrorCode))
	}
	total := 0
	for _, mb := range m2.Describe("g", map[[16]byte]string{{1}: "t"}).Members {
		for _, tp := range mb.Assignment.TopicPartitions {
			total += len(tp.Partitions)
		}
	}
	if total != 3 {
		t.Fatalf("after the reload the members have %d partitions, want all 3 assigned", total)
	}
	time.Sleep(20 * time.Millisecond) // a run started by mistake would have called by now
	r2.mu.Lock()
	defer r2.mu.Unlock()
	if len(r2.calls) != 0 {
		t.Fatalf("the reloaded group initialized again: %v", r2.calls)
	}
}

// A group whose initialization is failing, left by its members, is kept:
// its state may exist (recorded initializing), and expiring the group
// would leave that state behind with no group to delete it.
func TestInitializingGroupNotExpired(t *testing.T) {
	log, c := &memLog{}, newClock()
	r := &recInit{fail: fakeErr{}}
	m := persistedInit(t, log, c, r)
	if resp := hb(m, "g", "a", 0, "t"); resp.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
	}
	waitFor(t, "an initialization attempt", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.calls) > 0
	})
	if resp := hb(m, "g", "a", -1); resp.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
	}
	waitFor(t, "the run to end", func() bool { return !m.InitRunning("g") })
	c.add(2 * time.Hour)
	m.expire()
	if !m.Has("g") {
		t.Fatal("a group whose state was being initialized expired")
	}
	m2 := persistedInit(t, log, c, &recInit{})
	m2.mu.Lock()
	sp := m2.groups["g"].state
	m2.mu.Unlock()
	if len(sp.initializing[[16]byte{1}].parts) != 3 {
		t.Fatalf("reloaded type-15: %+v, want t's 3 partitions initializing", sp)
	}
}

// An administrator's deletion of a topic's state is recorded first
// (type-15 deleting topics, as Kafka's coordinator does): a coordinator
// that loads the group meanwhile does not take those partitions as
// initialized, but initializes them again before assigning them; done,
// the record no longer names the topic.
func TestDeletingTopicsNotReadyAfterReload(t *testing.T) {
	log, c := &memLog{}, newClock()
	m := persistedInit(t, log, c, &recInit{})
	joinUntilAssigned(t, m, "g", "a")
	if r := hb(m, "g", "a", -1); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	if code := adminGroup(m, "g", false); code != nil {
		t.Fatal(code)
	}
	if code := m.StateDeleting("g", map[[16]byte]string{{1}: ""}, curGen(m)); code != nil {
		t.Fatal(code)
	}
	// The coordinator moves before the deletion ends.
	r2 := &recInit{}
	m2 := persistedInit(t, log, c, r2)
	m2.mu.Lock()
	sp := m2.groups["g"].state
	m2.mu.Unlock()
	if sp.deleting[[16]byte{1}] != "t" || len(sp.initialized) != 0 {
		t.Fatalf("reloaded type-15 %+v, want t deleting", sp)
	}
	if b := hb(m2, "g", "b", 0, "t"); b.ErrorCode != 0 || assigned(b) != 0 {
		t.Fatalf("a join while t's state may be deleted: %v with %d partitions, want none until initialized", kerr.ErrorForCode(b.ErrorCode), assigned(b))
	}
	waitFor(t, "t initialized again", func() bool {
		r2.mu.Lock()
		defer r2.mu.Unlock()
		return len(r2.calls) > 0
	})
	waitFor(t, "the run to end", func() bool { return !m2.InitRunning("g") })
	m2.mu.Lock()
	sp = m2.groups["g"].state
	m2.mu.Unlock()
	if len(sp.deleting) != 0 || len(sp.initialized[[16]byte{1}].parts) != 3 {
		t.Fatalf("after the initialization: %+v, want t initialized and nothing deleting", sp)
	}
	// On the first coordinator's side the deletion ends normally.
	m.StateDeleted("g", [][16]byte{{1}}, curGen(m))
	m.AdminDone("g")
	m.mu.Lock()
	sp = m.groups["g"].state
	m.mu.Unlock()
	if !sp.empty() {
		t.Fatalf("after StateDeleted: %+v, want an empty record", sp)
	}
}

// A subscription too large for a __consumer_offsets batch is refused
// with INVALID_REQUEST: written, its member's record would fail, and,
// retried with every later change of the group, fail every member's
// writes (review of h/sharemember, H1).
func TestOversizedSubscriptionRefused(t *testing.T) {
	log, c := &memLog{}, newClock()
	m := persistedInit(t, log, c, &recInit{})
	epochA := joinUntilAssigned(t, m, "g", "a")
	var names []string
	for i := range 5000 {
		names = append(names, "topic-with-a-long-name-of-fifty-characters-"+itoa(100000+i))
	}
	if r := hb(m, "g", "stranger", 0, names...); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("a 5000-topic subscription: %v, want INVALID_REQUEST", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := hb(m, "g", "a", epochA); r.ErrorCode != 0 {
		t.Fatalf("the member after the refused join: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if d := m.Describe("g", nil); len(d.Members) != 1 {
		t.Fatalf("members after the refused join: %d, want 1", len(d.Members))
	}
}
