package share

import (
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func initTestManager(t *testing.T, st Store, reset string) *Manager {
	t.Helper()
	m, err := NewManager(Config{MaxSize: 200, SessionTimeout: time.Minute, HeartbeatInterval: time.Second, MaxSessions: 20, DeliveryLimit: 5, MaxRecordLocks: 20, LockDuration: time.Minute, AutoOffsetReset: reset}, st, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A share partition the store has no state for is refused
// (UNKNOWN_SERVER_ERROR, Kafka 4.4's answer) and leaves nothing here; one
// the coordinator initialized starts where share.auto.offset.reset says,
// decided when the leader first reads it.
func TestAcquireRefusesUninitialized(t *testing.T) {
	for _, reset := range []string{"earliest", "latest"} {
		st := &flakyStore{state: map[Key]Snapshot{}}
		m := initTestManager(t, st, reset)
		k := Key{Group: "made-up", Topic: [16]byte{1}}
		if got, e := m.Acquire(k, 0, "m1", 10, 5, 0); e != ErrUninitialized || len(got) != 0 {
			t.Fatalf("acquire without state: %v %v, want UNKNOWN_SERVER_ERROR", got, e)
		}
		if e := m.Acknowledge(k, 0, "m1", []AckBatch{{First: 0, Last: 0, Types: []int8{AckAccept}}}); e != kerr.UnknownTopicOrPartition {
			t.Fatalf("acknowledge without state: %v, want UNKNOWN_TOPIC_OR_PARTITION", e)
		}
		m.flush()
		m.mu.Lock()
		left := len(m.parts) + len(m.epochs) + len(m.states) + len(m.fresh) + len(m.pending) + len(m.verify)
		m.mu.Unlock()
		if left != 0 || len(st.state) != 0 {
			t.Fatalf("a refused share partition left %d entries here and %d states in the store", left, len(st.state))
		}
		st.state[k] = Snapshot{StartOffset: StartUnset}
		got, e := m.Acquire(k, 0, "m1", 10, 5, 2)
		want := int64(2)
		if reset == "latest" {
			want = 5
		}
		if e != nil || m.mustStart(t, k) != want {
			t.Fatalf("%s: acquire after initialization: %v %v, start %d, want %d", reset, got, e, m.mustStart(t, k), want)
		}
		m.flush()
		if s := st.get(k); s.StartOffset != want || s.Create {
			t.Fatalf("%s: written state %+v, want start %d and no create", reset, s, want)
		}
	}
}

func (m *Manager) mustStart(t *testing.T, k Key) int64 {
	t.Helper()
	s, ok := m.StartOffset(k)
	if !ok {
		t.Fatal("no share partition")
	}
	return s
}

// recInit is an Initializer that records its calls, fails while fail is
// set, and can be held.
type recInit struct {
	mu      sync.Mutex
	calls   [][]Key
	fail    error
	hold    chan struct{}
	running int
	maxRun  int
	onCall  func(keys []Key) // before it answers
}

func (r *recInit) init(group string, keys []Key) map[Key]error {
	r.mu.Lock()
	r.calls = append(r.calls, keys)
	r.running++
	r.maxRun = max(r.maxRun, r.running)
	hold, fail, onCall := r.hold, r.fail, r.onCall
	r.mu.Unlock()
	if onCall != nil {
		onCall(keys)
	}
	if hold != nil {
		<-hold
	}
	r.mu.Lock()
	r.running--
	r.mu.Unlock()
	if fail == nil {
		return nil
	}
	out := map[Key]error{}
	for _, k := range keys {
		out[k] = fail
	}
	return out
}

func hbJoin(group, member string, topics ...string) HeartbeatRequest {
	r := kmsg.NewPtrShareGroupHeartbeatRequest()
	r.GroupID, r.MemberID, r.MemberEpoch, r.SubscribedTopicNames = group, member, 0, topics
	return HeartbeatRequest{ShareGroupHeartbeatRequest: r}
}

func assigned(resp *kmsg.ShareGroupHeartbeatResponse) int {
	n := 0
	if resp.Assignment != nil {
		for _, tp := range resp.Assignment.TopicPartitions {
			n += len(tp.Partitions)
		}
	}
	return n
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting: " + what)
		}
	}
}

// A refused heartbeat initializes nothing: an unknown member's, a full
// group's, a group of another type's (review finding 1).
func TestRefusedHeartbeatInitializesNothing(t *testing.T) {
	r := &recInit{}
	m := initTestManager(t, &flakyStore{state: map[Key]Snapshot{}}, "latest")
	m.SetInitializer(r.init)
	topics := map[string]TopicMeta{"t": {ID: [16]byte{7}, Partitions: 3}}
	// A group of another type, and a member epoch for a group not here.
	if resp := m.Heartbeat(hbJoin("classic", "m1", "t"), topics, true); resp.ErrorCode == 0 {
		t.Fatal("a heartbeat naming another type's group was accepted")
	}
	stale := hbJoin("nogroup", "m1", "t")
	stale.MemberEpoch = 3
	if resp := m.Heartbeat(stale, topics, false); resp.ErrorCode == 0 {
		t.Fatal("a made-up member epoch was accepted")
	}
	// An unknown member of a group that exists but has no partitions to
	// initialize (its topic is gone), then a full group.
	m.cfg.MaxSize = 1
	if resp := m.Heartbeat(hbJoin("g", "m1", "gone"), topics, false); resp.ErrorCode != 0 {
		t.Fatal(resp.ErrorCode)
	}
	if resp := m.Heartbeat(hbJoin("g", "m2", "t"), topics, false); resp.ErrorCode == 0 {
		t.Fatal("a member past group.share.max.size was accepted")
	}
	unknown := hbJoin("g", "stranger", "t")
	unknown.MemberEpoch = 1
	if resp := m.Heartbeat(unknown, topics, false); resp.ErrorCode == 0 {
		t.Fatal("an unknown member was accepted")
	}
	time.Sleep(50 * time.Millisecond) // a run started by mistake would have called by now
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.calls) != 0 {
		t.Fatalf("refused heartbeats initialized %v", r.calls)
	}
}

// Initialization runs in the background: every member's join is answered
// at once, however slow the store, with one run per group at a time; the
// partitions come into the assignment once initialized (finding 2).
func TestInitializationInBackground(t *testing.T) {
	r := &recInit{hold: make(chan struct{})}
	m := initTestManager(t, &flakyStore{state: map[Key]Snapshot{}}, "latest")
	m.SetInitializer(r.init)
	m.Start()
	defer m.Stop()
	topics := map[string]TopicMeta{"t": {ID: [16]byte{7}, Partitions: 4}}
	defer func() {
		// Lets a run held by a failed check end.
		select {
		case <-r.hold:
		default:
			close(r.hold)
		}
	}()
	for i := range 5 {
		answered := make(chan *kmsg.ShareGroupHeartbeatResponse, 1)
		go func() { answered <- m.Heartbeat(hbJoin("g", "m"+itoa(i), "t"), topics, false) }()
		var resp *kmsg.ShareGroupHeartbeatResponse
		select {
		case resp = <-answered:
		case <-time.After(10 * time.Second):
			t.Fatalf("join %d not answered in 10 s: it waits for the initialization", i)
		}
		if resp.ErrorCode != 0 || assigned(resp) != 0 {
			t.Fatalf("join %d: error %d, %d partitions before initialization", i, resp.ErrorCode, assigned(resp))
		}
	}
	waitFor(t, "the initialization to start", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.calls) > 0
	})
	time.Sleep(50 * time.Millisecond) // a second run would have called by now
	r.mu.Lock()
	calls, maxRun := len(r.calls), r.maxRun
	r.mu.Unlock()
	if calls != 1 || maxRun != 1 {
		t.Fatalf("%d initialization calls (%d at once) for one group, want 1", calls, maxRun)
	}
	close(r.hold)
	waitFor(t, "the initialization run to end", func() bool { return !m.InitRunning("g") })
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.MemberEpoch = "g", "m0", 1
	resp := m.Heartbeat(HeartbeatRequest{ShareGroupHeartbeatRequest: hb}, topics, false)
	if resp.ErrorCode != 0 || assigned(resp) == 0 {
		t.Fatalf("after initialization: error %d, %d partitions", resp.ErrorCode, assigned(resp))
	}
}

// A failed initialization is retried with backoff, not at once in a loop
// nor never.
func TestInitializationRetriedWithBackoff(t *testing.T) {
	r := &recInit{fail: errFake}
	m := initTestManager(t, &flakyStore{state: map[Key]Snapshot{}}, "latest")
	m.SetInitializer(r.init)
	m.Start()
	defer m.Stop()
	topics := map[string]TopicMeta{"t": {ID: [16]byte{7}, Partitions: 1}}
	m.Heartbeat(hbJoin("g", "m0", "t"), topics, false)
	time.Sleep(250 * time.Millisecond)
	r.mu.Lock()
	n := len(r.calls)
	r.fail = nil
	r.mu.Unlock()
	if n < 1 || n > 4 {
		t.Fatalf("%d initialization attempts in 250 ms with 100 ms backoff doubling", n)
	}
	waitFor(t, "the retried initialization", func() bool { return !m.InitRunning("g") })
}

type fakeErr struct{}

func (fakeErr) Error() string { return "store down" }

var errFake = fakeErr{}

// Holding back a partition not yet initialized leaves the others where
// they are: a topic growing keeps every member's partitions (finding 3).
func TestHeldBackPartitionsOnly(t *testing.T) {
	r := &recInit{}
	m := initTestManager(t, &flakyStore{state: map[Key]Snapshot{}}, "latest")
	m.SetInitializer(r.init)
	m.Start()
	defer m.Stop()
	topics := map[string]TopicMeta{"t": {ID: [16]byte{7}, Partitions: 2}}
	join := m.Heartbeat(hbJoin("g", "m0", "t"), topics, false)
	waitFor(t, "the first initialization", func() bool { return !m.InitRunning("g") })
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.MemberEpoch = "g", "m0", join.MemberEpoch
	resp := m.Heartbeat(HeartbeatRequest{ShareGroupHeartbeatRequest: hb}, topics, false)
	if assigned(resp) != 2 {
		t.Fatalf("%d partitions after initialization, want 2", assigned(resp))
	}
	// The topic grows; its new partitions are held back, its old stay.
	r.mu.Lock()
	r.hold = make(chan struct{})
	r.mu.Unlock()
	grown := map[string]TopicMeta{"t": {ID: [16]byte{7}, Partitions: 4}}
	hb.MemberEpoch = resp.MemberEpoch
	resp = m.Heartbeat(HeartbeatRequest{ShareGroupHeartbeatRequest: hb}, grown, false)
	if resp.ErrorCode != 0 || assigned(resp) != 2 {
		t.Fatalf("while the new partitions initialize: error %d, %d partitions, want the 2 already assigned", resp.ErrorCode, assigned(resp))
	}
	close(r.hold)
	waitFor(t, "the second initialization", func() bool { return !m.InitRunning("g") })
	hb.MemberEpoch = resp.MemberEpoch
	if resp = m.Heartbeat(HeartbeatRequest{ShareGroupHeartbeatRequest: hb}, grown, false); assigned(resp) != 4 {
		t.Fatalf("%d partitions after the new ones initialized, want 4", assigned(resp))
	}
}

// An administrator's call does not run beside an initialization: it waits
// (COORDINATOR_LOAD_IN_PROGRESS) for one under way, and none starts while
// it runs (finding 5).
func TestNoInitializationDuringAdminCall(t *testing.T) {
	r := &recInit{hold: make(chan struct{})}
	m := initTestManager(t, &flakyStore{state: map[Key]Snapshot{}}, "latest")
	m.SetInitializer(r.init)
	m.Start()
	defer m.Stop()
	topics := map[string]TopicMeta{"t": {ID: [16]byte{7}, Partitions: 1}}
	m.Heartbeat(hbJoin("g", "m0", "t"), topics, false)
	leave := kmsg.NewPtrShareGroupHeartbeatRequest()
	leave.GroupID, leave.MemberID, leave.MemberEpoch = "g", "m0", -1
	m.Heartbeat(HeartbeatRequest{ShareGroupHeartbeatRequest: leave}, topics, false)
	if e := adminGroup(m, "g", false); e == nil {
		t.Fatal("an administrator's call began while an initialization ran")
	}
	close(r.hold)
	waitFor(t, "the initialization", func() bool { return !m.InitRunning("g") })
	if e := adminGroup(m, "g", false); e != nil {
		t.Fatal(e)
	}
	r.mu.Lock()
	before := len(r.calls)
	r.hold = nil
	r.mu.Unlock()
	// AdminDone forgets what was initialized; a join during the call is
	// refused and starts nothing.
	if resp := m.Heartbeat(hbJoin("g", "m1", "t"), topics, false); resp.ErrorCode == 0 {
		t.Fatal("a join during the administrator's call was accepted")
	}
	time.Sleep(50 * time.Millisecond)
	r.mu.Lock()
	during := len(r.calls)
	r.mu.Unlock()
	if during != before {
		t.Fatalf("%d initializations during the administrator's call", during-before)
	}
	m.AdminDone("g")
	// After the call the group goes on: the partition is assigned, from
	// what the first run initialized or after a new run (which of the two
	// depends on whether that run saw m0's subscription before it left).
	resp := m.Heartbeat(hbJoin("g", "m1", "t"), topics, false)
	waitFor(t, "the partition assigned after the call", func() bool {
		if resp.ErrorCode != 0 {
			t.Fatalf("join after the call: error %d", resp.ErrorCode)
		}
		if assigned(resp) == 1 {
			return true
		}
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.GroupID, hb.MemberID, hb.MemberEpoch = "g", "m1", resp.MemberEpoch
		resp = m.Heartbeat(HeartbeatRequest{ShareGroupHeartbeatRequest: hb}, topics, false)
		return assigned(resp) == 1
	})
}

// What a group remembers as initialized is bounded by the partitions of
// existing topics it read: a deleted topic is forgotten.
func TestReadyPrunedToSubscriptions(t *testing.T) {
	r := &recInit{}
	m := initTestManager(t, &flakyStore{state: map[Key]Snapshot{}}, "latest")
	m.SetInitializer(r.init)
	m.Start()
	defer m.Stop()
	topics := map[string]TopicMeta{"a": {ID: [16]byte{1}, Partitions: 3}, "b": {ID: [16]byte{2}, Partitions: 1}}
	join := m.Heartbeat(hbJoin("g", "m0", "a"), topics, false)
	waitFor(t, "the initialization of a", func() bool { return !m.InitRunning("g") })
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = "g", "m0", join.MemberEpoch, []string{"b"}
	m.Heartbeat(HeartbeatRequest{ShareGroupHeartbeatRequest: hb}, topics, false)
	waitFor(t, "the initialization of b", func() bool { return !m.InitRunning("g") })
	ready := func() int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return len(m.groups["g"].ready)
	}
	// a's partitions have state (the type-15 record says so): kept, so
	// that subscribing to a again assigns them at once.
	if n := ready(); n != 4 {
		t.Fatalf("the group remembers %d initialized partitions, want a's 3 and b's 1", n)
	}
	m.ForgetTopics(map[[16]byte]bool{{1}: true})
	if n := ready(); n != 1 {
		t.Fatalf("after a was deleted the group remembers %d initialized partitions, subscribing to one", n)
	}
}
