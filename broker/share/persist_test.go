package share

import (
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// memLog stands for __consumer_offsets behind the group coordinator, as
// WriteShare is: a write of a generation other than the partition's is
// dropped with NOT_COORDINATOR. block, while set, holds every write.
type memLog struct {
	mu     sync.Mutex
	gens   map[int32]uint64
	recs   []Record
	writes int
	block  chan struct{}
	fail   int // the next writes that fail (appended or not: unknown)
	// maxBytes, if set, refuses a larger write MESSAGE_TOO_LARGE, as
	// __consumer_offsets' max.message.bytes does.
	maxBytes int
	discard  bool // keep no records (a test measuring the manager's memory)
}

func (l *memLog) Write(p int32, gen uint64, recs []Record, done func(error)) {
	l.mu.Lock()
	b := l.block
	l.mu.Unlock()
	if b != nil {
		<-b
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	if l.fail > 0 {
		l.fail--
		done(kerr.CoordinatorNotAvailable)
		return
	}
	if l.gens[p] != gen {
		done(kerr.NotCoordinator)
		return
	}
	size := 0
	for _, r := range recs {
		size += len(r.Key) + len(r.Value)
	}
	if l.maxBytes > 0 && size > l.maxBytes {
		done(kerr.MessageTooLarge)
		return
	}
	if !l.discard {
		l.recs = append(l.recs, recs...)
	}
	done(nil)
}

func (l *memLog) snapshot() []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Record(nil), l.recs...)
}

// clock is a test's time, safe to move while the timer reads it.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) add(d time.Duration) { c.ns.Add(int64(d)) }
func newClock() *clock               { c := &clock{}; c.ns.Store(time.Unix(1000, 0).UnixNano()); return c }
func testPersistCfg() Config {
	return Config{MaxSize: 10, SessionTimeout: time.Second, HeartbeatInterval: 100 * time.Millisecond, MaxSessions: 10,
		DeliveryLimit: 5, MaxRecordLocks: 100, LockDuration: time.Minute, AutoOffsetReset: "earliest", EmptyRetention: time.Hour}
}

// persisted is a manager writing to log, with partition 0 loaded at
// generation 1 and its writer running (not its timer: tests tick it).
func persisted(t *testing.T, log *memLog, c *clock, cfg Config) *Manager {
	t.Helper()
	m, err := NewManager(cfg, nil, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	m.now = c.now
	m.SetSink(log, func(string) int32 { return 0 })
	log.mu.Lock()
	if log.gens == nil {
		log.gens = map[int32]uint64{}
	}
	log.gens[0]++
	gen := log.gens[0]
	log.mu.Unlock()
	m.LoadShare(0, gen, log.snapshot(), testTopics)
	go m.writer()
	t.Cleanup(func() { close(m.stop) })
	return m
}

var testTopics = map[string]TopicMeta{"t": {ID: [16]byte{1}, Partitions: 3}}

func hb(m *Manager, group, member string, epoch int32, topics ...string) *kmsg.ShareGroupHeartbeatResponse {
	r := kmsg.NewPtrShareGroupHeartbeatRequest()
	r.GroupID, r.MemberID, r.MemberEpoch = group, member, epoch
	if topics != nil {
		r.SubscribedTopicNames = topics
	}
	m.mu.Lock()
	gen := m.gens[0]
	m.mu.Unlock()
	return m.Heartbeat(HeartbeatRequest{ShareGroupHeartbeatRequest: r, ClientID: "cl-" + member, ClientHost: "/127.0.0.1", Gen: gen}, testTopics, false)
}

// TestShareMembershipReplays: what the heartbeats wrote, loaded by a new
// manager (a restarted or new coordinator), is the same group at the same
// epoch, and its members go on with the epochs they had.
func TestShareMembershipReplays(t *testing.T) {
	log, c := &memLog{}, newClock()
	m := persisted(t, log, c, testPersistCfg())
	a := hb(m, "g", "a", 0, "t")
	b := hb(m, "g", "b", 0, "t")
	a = hb(m, "g", "a", a.MemberEpoch)
	if a.ErrorCode != 0 || b.ErrorCode != 0 {
		t.Fatalf("joins: %v %v", kerr.ErrorForCode(a.ErrorCode), kerr.ErrorForCode(b.ErrorCode))
	}
	names := map[[16]byte]string{{1}: "t"}
	before := m.Describe("g", names)
	// A steady heartbeat writes nothing.
	n := len(log.snapshot())
	if r := hb(m, "g", "b", b.MemberEpoch); r.ErrorCode != 0 || len(log.snapshot()) != n {
		t.Fatalf("steady heartbeat: %v, %d records written", kerr.ErrorForCode(r.ErrorCode), len(log.snapshot())-n)
	}

	m2 := persisted(t, log, c, testPersistCfg())
	after := m2.Describe("g", names)
	if after.ErrorCode != 0 || after.GroupEpoch != before.GroupEpoch || len(after.Members) != 2 {
		t.Fatalf("reloaded: %+v, want epoch %d with 2 members", after, before.GroupEpoch)
	}
	for i := range before.Members {
		x, y := before.Members[i], after.Members[i]
		if x.MemberID != y.MemberID || x.MemberEpoch != y.MemberEpoch || x.ClientID != y.ClientID || x.ClientHost != y.ClientHost ||
			len(x.Assignment.TopicPartitions) != len(y.Assignment.TopicPartitions) ||
			len(y.Assignment.TopicPartitions) > 0 && len(x.Assignment.TopicPartitions[0].Partitions) != len(y.Assignment.TopicPartitions[0].Partitions) {
			t.Errorf("member %d: before %+v, after %+v", i, x, y)
		}
	}
	if r := hb(m2, "g", "b", b.MemberEpoch); r.ErrorCode != 0 || r.MemberEpoch != before.GroupEpoch {
		t.Fatalf("b after the reload: %v epoch %d, want epoch %d", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch, before.GroupEpoch)
	}
	// A member leaving is written too: a third load has one member.
	if r := hb(m2, "g", "a", -1); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	m3 := persisted(t, log, c, testPersistCfg())
	if d := m3.Describe("g", names); len(d.Members) != 1 || d.Members[0].MemberID != "b" || d.GroupEpoch != before.GroupEpoch+1 {
		t.Fatalf("after a left: %+v", d)
	}
	// Deleted: tombstones, and a load finds nothing.
	if r := hb(m3, "g", "b", -1); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	if code := m3.DeleteGroup("g"); code != nil {
		t.Fatal(code)
	}
	if m4 := persisted(t, log, c, testPersistCfg()); m4.Has("g") {
		t.Fatal("a deleted group came back with the next load")
	}
}

// TestHeartbeatRacingUnload (review 1): a heartbeat let in at one
// generation of the partition that reaches the manager after the
// partition was unloaded creates no group and writes nothing; one that
// made a group just before the unload leaves none behind, and its write
// is dropped, not retried.
func TestHeartbeatRacingUnload(t *testing.T) {
	log, c := &memLog{}, newClock()
	m := persisted(t, log, c, testPersistCfg())
	r := kmsg.NewPtrShareGroupHeartbeatRequest()
	r.GroupID, r.MemberID, r.SubscribedTopicNames = "g", "a", []string{"t"}
	stale := HeartbeatRequest{ShareGroupHeartbeatRequest: r, Gen: 1}
	log.mu.Lock()
	log.gens[0] = 2
	log.mu.Unlock()
	m.UnloadShare(0, 2) // the partition moved away after the request was let in
	if resp := m.Heartbeat(stale, testTopics, false); resp.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("stale heartbeat: %v, want NOT_COORDINATOR", kerr.ErrorForCode(resp.ErrorCode))
	}
	if m.Has("g") || len(m.Groups()) != 0 {
		t.Fatal("a heartbeat of an unloaded partition left a ghost group")
	}
	log.mu.Lock()
	n := log.writes
	log.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d writes for a partition not loaded", n)
	}

	// Loaded again (generation 3): a group made, then its partition
	// unloaded while its write is held: gone here, and the write of the
	// old generation dropped once.
	log.mu.Lock()
	log.gens[0] = 3
	log.mu.Unlock()
	m.LoadShare(0, 3, nil, testTopics)
	hold := make(chan struct{})
	log.mu.Lock()
	log.block = hold
	log.mu.Unlock()
	res := make(chan *kmsg.ShareGroupHeartbeatResponse, 1)
	go func() { res <- hb(m, "g", "a", 0, "t") }()
	waitFor(t, "the join's group", func() bool { return m.Has("g") })
	log.mu.Lock()
	log.gens[0] = 4
	log.block = nil
	log.mu.Unlock()
	m.UnloadShare(0, 4)
	close(hold)
	if resp := <-res; resp.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("heartbeat whose partition moved while it wrote: %v, want NOT_COORDINATOR", kerr.ErrorForCode(resp.ErrorCode))
	}
	if m.Has("g") {
		t.Fatal("ghost group after the unload")
	}
	m.mu.Lock()
	left := len(m.outbox)
	m.mu.Unlock()
	log.mu.Lock()
	n, recs := log.writes, len(log.recs)
	log.mu.Unlock()
	if left != 0 || n != 1 || recs != 0 {
		t.Fatalf("after the unload: %d queued, %d writes, %d records; want the one write, dropped", left, n, recs)
	}
}

// TestTimerNeverWaitsOnWrites (review 2): while __consumer_offsets takes
// no write at all, a member's session still expires and an acquisition
// lock still runs out on time: the timer queues the member's removal and
// goes on.
func TestTimerNeverWaitsOnWrites(t *testing.T) {
	log, c := &memLog{}, newClock()
	cfg := testPersistCfg()
	cfg.LockDuration = 200 * time.Millisecond
	m := persisted(t, log, c, cfg)
	if r := hb(m, "g", "a", 0, "t"); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	if r := hb(m, "h", "b", 0, "t"); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	k := Key{Group: "h", Topic: [16]byte{1}}
	if got, code := m.Acquire(k, 0, "b", 5, 5, 0); code != nil || len(got) == 0 {
		t.Fatalf("acquire: %v %v", got, code)
	}
	hold := make(chan struct{})
	defer close(hold)
	log.mu.Lock()
	log.block = hold
	log.mu.Unlock()
	// a's session runs out, and b's lock: a's removal is a write that
	// cannot land (b keeps its session).
	c.add(2 * time.Second)
	m.mu.Lock()
	m.groups["h"].members["b"].lastSeen = c.now()
	m.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.expire()
		m.expire() // the writer is stuck in the first tick's write by now, or soon
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the share timer waited on a __consumer_offsets write")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if st, _ := m.parts[k].State(0); st != Available {
		t.Fatalf("record 0 after its lock ran out: %v, want available", st)
	}
	if g := m.groups["g"]; g == nil || len(g.members) != 0 {
		t.Fatal("a's session did not expire")
	}
}

// TestEmptyGroupExpires (review 3): an empty group that was never
// assigned a partition is deleted after the retention, with tombstones,
// so that the next load does not bring it back; one that was assigned a
// partition stays.
func TestEmptyGroupExpires(t *testing.T) {
	log, c := &memLog{}, newClock()
	m := persisted(t, log, c, testPersistCfg())
	if r := hb(m, "stranger", "x", 0, "nosuchtopic"); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	if r := hb(m, "stranger", "x", -1); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	if r := hb(m, "real", "a", 0, "t"); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	if r := hb(m, "real", "a", -1); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	c.add(30 * time.Minute)
	m.expire()
	if !m.Has("stranger") {
		t.Fatal("expired before the retention")
	}
	// Reloaded meanwhile: the clock starts again from the load, at worst.
	m = persisted(t, log, c, testPersistCfg())
	if !m.Has("stranger") || !m.Has("real") {
		t.Fatal("groups lost by a reload")
	}
	log.mu.Lock()
	n := len(log.recs)
	log.mu.Unlock()
	c.add(61 * time.Minute)
	m.expire()
	// Gone once its tombstones are written (the writer is not the
	// timer), and a reload does not bring it back.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		log.mu.Lock()
		more := len(log.recs) > n
		log.mu.Unlock()
		if !m.Has("stranger") && more {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("an empty group never assigned a partition outlived the retention (in memory %v, tombstones written %v)", m.Has("stranger"), more)
		}
	}
	if !m.Has("real") {
		t.Fatal("a group that had partitions expired")
	}
	m2 := persisted(t, log, c, testPersistCfg())
	if m2.Has("stranger") || !m2.Has("real") {
		t.Fatalf("after a reload: stranger %v, real %v; want only real", m2.Has("stranger"), m2.Has("real"))
	}
}

// TestFailedWriteIsWrittenAgain: a membership write that failed (the
// client was told to retry) is not taken as written: the member's retry
// writes the group again, and a load then has it. A tombstone that failed
// is written again too.
func TestFailedWriteIsWrittenAgain(t *testing.T) {
	log, c := &memLog{}, newClock()
	m := persisted(t, log, c, testPersistCfg())
	log.mu.Lock()
	log.fail = 1
	log.mu.Unlock()
	if r := hb(m, "g", "a", 0, "t"); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("join whose write failed: %v, want COORDINATOR_NOT_AVAILABLE", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := hb(m, "g", "a", 1); r.ErrorCode != 0 || r.MemberEpoch != 1 {
		t.Fatalf("retry: %v epoch %d", kerr.ErrorForCode(r.ErrorCode), r.MemberEpoch)
	}
	if d := peek(t, log).Describe("g", nil); d.ErrorCode != 0 || d.GroupEpoch != 1 || len(d.Members) != 1 {
		t.Fatalf("loaded after the retry: %+v", d)
	}
	if r := hb(m, "g", "b", 0, "t"); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	log.mu.Lock()
	log.fail = 1
	log.mu.Unlock()
	if r := hb(m, "g", "b", -1); r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("leave whose write failed: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if r := hb(m, "g", "a", 1); r.ErrorCode != 0 || r.MemberEpoch != 3 {
		t.Fatalf("a after b left: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if d := peek(t, log).Describe("g", nil); len(d.Members) != 1 || d.Members[0].MemberID != "a" || d.GroupEpoch != 3 {
		t.Fatalf("loaded after b's failed leave and a's heartbeat: %+v", d)
	}
}

// peek is what a load of log would find, without fencing the manager
// that writes it.
func peek(t *testing.T, log *memLog) *Manager {
	t.Helper()
	m, err := NewManager(testPersistCfg(), nil, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	m.LoadShare(0, 1, log.snapshot(), testTopics)
	return m
}

// TestOversizedMemberDoesNotBlockGroup: a subscription no topic can have
// is refused INVALID_REQUEST, and a member whose records the log refuses
// for their size fails alone: the other members' joins and heartbeats are
// written and answered, now and after it (not wedged behind its record).
func TestOversizedMemberDoesNotBlockGroup(t *testing.T) {
	log, c := &memLog{}, newClock()
	m := persisted(t, log, c, testPersistCfg())
	long := string(make([]byte, 250))
	if r := hb(m, "g", "x", 0, long); r.ErrorCode != kerr.InvalidRequest.Code || r.ErrorMessage == nil {
		t.Fatalf("250-byte topic name: %v, want INVALID_REQUEST with a message", kerr.ErrorForCode(r.ErrorCode))
	}
	many := make([]string, maxSubscribedTopics+1)
	for i := range many {
		many[i] = "t" + itoa(i)
	}
	if r := hb(m, "g", "x", 0, many...); r.ErrorCode != kerr.InvalidRequest.Code {
		t.Fatalf("%d topics: %v, want INVALID_REQUEST", len(many), kerr.ErrorForCode(r.ErrorCode))
	}
	if m.Has("g") {
		t.Fatal("a refused subscription made a group")
	}

	// Batches of 4 KiB against a log taking at most 4 KiB: a member
	// subscribed to 30 valid 200-byte names has a record over it.
	old := maxBatchBytes
	maxBatchBytes = 4 << 10
	t.Cleanup(func() { maxBatchBytes = old })
	log.mu.Lock()
	log.maxBytes = 4 << 10
	log.mu.Unlock()
	big := make([]string, 30)
	for i := range big {
		big[i] = string(make([]byte, 190)) + itoa(100+i)
	}
	if r := hb(m, "g", "big", 0, big...); r.ErrorCode == 0 {
		t.Fatal("a member whose record is over the log's limit was answered as written")
	}
	for i, id := range []string{"a", "b"} {
		r := hb(m, "g", id, 0, "t")
		if r.ErrorCode != 0 {
			t.Fatalf("join of %s after the oversized member: %v", id, kerr.ErrorForCode(r.ErrorCode))
		}
		if r = hb(m, "g", id, r.MemberEpoch); r.ErrorCode != 0 {
			t.Fatalf("heartbeat %d of %s: %v", i, id, kerr.ErrorForCode(r.ErrorCode))
		}
	}
	m2 := persisted(t, log, c, testPersistCfg())
	d := m2.Describe("g", map[[16]byte]string{{1}: "t"})
	ids := map[string]bool{}
	for _, mb := range d.Members {
		ids[mb.MemberID] = true
	}
	if !ids["a"] || !ids["b"] {
		t.Fatalf("after a reload the members are %v, want a and b", ids)
	}
}

// TestFailedDeleteKeepsGroup: a DeleteGroups whose tombstones fail is
// answered with a retriable error and leaves the group in memory, so the
// administrator's retry deletes it (not GROUP_ID_NOT_FOUND while the log
// still has it, to come back at the next load). An expiry whose
// tombstones fail leaves the group to expire again.
func TestFailedDeleteKeepsGroup(t *testing.T) {
	log, c := &memLog{}, newClock()
	m := persisted(t, log, c, testPersistCfg())
	for _, g := range []string{"del", "exp"} {
		topic := "t"
		if g == "exp" {
			topic = "nosuchtopic" // never assigned: expirable
		}
		if r := hb(m, g, "a", 0, topic); r.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(r.ErrorCode))
		}
		if r := hb(m, g, "a", -1); r.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(r.ErrorCode))
		}
	}
	log.mu.Lock()
	log.fail = 1
	log.mu.Unlock()
	if code := m.DeleteGroup("del"); code == nil || code == kerr.GroupIDNotFound {
		t.Fatalf("delete with failing tombstones: %v, want a retriable error", code)
	}
	if !m.Has("del") {
		t.Fatal("a delete whose tombstones failed dropped the group from memory")
	}
	if code := m.DeleteGroup("del"); code != nil {
		t.Fatalf("retried delete: %v", code)
	}
	if m.Has("del") {
		t.Fatal("deleted group still in memory")
	}

	log.mu.Lock()
	log.fail = 1
	log.mu.Unlock()
	c.add(2 * time.Hour)
	m.expire()
	// The failed expiry ends with the group still here, and the next
	// expiry deletes it for good.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		log.mu.Lock()
		failed := log.fail == 0
		log.mu.Unlock()
		m.mu.Lock()
		g := m.groups["exp"]
		settled := g != nil && !g.deleting
		m.mu.Unlock()
		if failed && settled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after an expiry whose tombstones failed: in memory %v, want the group kept", m.Has("exp"))
		}
	}
	m.expire()
	for deadline := time.Now().Add(30 * time.Second); m.Has("exp"); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the expiry after a failed one did not delete the group")
		}
	}
	m2 := persisted(t, log, c, testPersistCfg())
	if m2.Has("del") || m2.Has("exp") {
		t.Fatalf("after a reload: del %v, exp %v; want neither", m2.Has("del"), m2.Has("exp"))
	}
}

// TestWrittenCopyIsSmall: what a group keeps of its written records does
// not hold the group id per record: 10 members of a group with a 32 KiB
// id (the largest a request carries) cost about one copy of the id, not
// 3 a member (~1 MB).
func TestWrittenCopyIsSmall(t *testing.T) {
	log, c := &memLog{discard: true}, newClock()
	m := persisted(t, log, c, testPersistCfg())
	gid := strings.Repeat("g", 32<<10)
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	before := heap()
	for i := range 10 {
		id := "member-" + itoa(i)
		r := hb(m, gid, id, 0, "t")
		if r.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(r.ErrorCode))
		}
		hb(m, gid, id, r.MemberEpoch)
	}
	grown := int64(heap()) - int64(before)
	m.mu.Lock()
	n := len(m.groups[gid].written)
	m.mu.Unlock()
	if n < 3*10+3 {
		t.Fatalf("%d records taken as written, want at least %d", n, 3*10+3)
	}
	if grown > 256<<10 {
		t.Fatalf("a group of 10 members with a 32 KiB id holds %d bytes, want well under 256 KiB", grown)
	}
	t.Logf("heap grown by %d bytes for %d records", grown, n)
}

// TestRepeatedHeartbeatWaitsForPendingWrite: a heartbeat with nothing new
// to write, sent while the join's write is still pending, is answered
// with that write's outcome: when it fails, the repeat is not told
// success for an epoch the log never had.
func TestRepeatedHeartbeatWaitsForPendingWrite(t *testing.T) {
	log, c := &memLog{}, newClock()
	m := persisted(t, log, c, testPersistCfg())
	release := make(chan struct{})
	log.mu.Lock()
	log.block = release
	log.mu.Unlock()
	first := make(chan *kmsg.ShareGroupHeartbeatResponse, 1)
	go func() { first <- hb(m, "g", "a", 0, "t") }()
	// The group exists once the join's write is queued (same lock).
	for deadline := time.Now().Add(30 * time.Second); !m.Has("g"); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the join never made the group")
		}
	}
	second := make(chan *kmsg.ShareGroupHeartbeatResponse, 1)
	go func() { second <- hb(m, "g", "a", 1) }()
	// Nothing may answer it while the write it depends on is held (a
	// window to catch the bug, not synchronization).
	select {
	case r := <-second:
		t.Fatalf("heartbeat answered %v while the join's write was still pending", kerr.ErrorForCode(r.ErrorCode))
	case <-time.After(100 * time.Millisecond):
	}
	// Two failures: the join's write, and the rewrite the repeat would
	// make had it come after the join failed.
	log.mu.Lock()
	log.fail = 2
	log.block = nil
	log.mu.Unlock()
	close(release)
	timeout := time.After(30 * time.Second)
	for i, ch := range []chan *kmsg.ShareGroupHeartbeatResponse{first, second} {
		select {
		case r := <-ch:
			if r.ErrorCode != kerr.CoordinatorNotAvailable.Code {
				t.Fatalf("heartbeat %d while the join's write was pending, which then failed: %v, want COORDINATOR_NOT_AVAILABLE", i+1, kerr.ErrorForCode(r.ErrorCode))
			}
		case <-timeout:
			t.Fatalf("heartbeat %d never answered", i+1)
		}
	}
}
