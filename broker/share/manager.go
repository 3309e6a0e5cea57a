package share

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/config"
)

// Config is the share-group settings (group.share.*), checked against
// their bounds by broker/config.
type Config struct {
	LockDuration      time.Duration // group.share.record.lock.duration.ms
	DeliveryLimit     int16         // group.share.delivery.count.limit
	MaxRecordLocks    int           // group.share.partition.max.record.locks
	SessionTimeout    time.Duration // group.share.session.timeout.ms
	HeartbeatInterval time.Duration // group.share.heartbeat.interval.ms
	MaxSize           int           // group.share.max.size
	MaxSessions       int           // group.share.max.share.sessions
	// AutoOffsetReset is where a share partition starts when the group
	// first reads it: "latest" (Kafka's default for share.auto.offset.reset)
	// or "earliest".
	AutoOffsetReset string
	// IsolationLevel is share.isolation.level: read_uncommitted (Kafka's
	// default) or read_committed.
	IsolationLevel string
	// EmptyRetention is how long an empty group that was never assigned
	// a partition is kept (offsets.retention.minutes; 0: for ever).
	EmptyRetention time.Duration
}

// ConfigFrom reads the broker's group.share.* settings.
func ConfigFrom(b *config.Broker) Config {
	ms := func(n string) time.Duration { return time.Duration(b.Int(n)) * time.Millisecond }
	return Config{
		LockDuration:      ms("group.share.record.lock.duration.ms"),
		DeliveryLimit:     int16(b.Int("group.share.delivery.count.limit")),
		MaxRecordLocks:    int(b.Int("group.share.partition.max.record.locks")),
		SessionTimeout:    ms("group.share.session.timeout.ms"),
		HeartbeatInterval: ms("group.share.heartbeat.interval.ms"),
		MaxSize:           int(b.Int("group.share.max.size")),
		MaxSessions:       int(b.Int("group.share.max.share.sessions")),
		AutoOffsetReset:   "latest",
		IsolationLevel:    "read_uncommitted",
		EmptyRetention:    time.Duration(b.Int("offsets.retention.minutes")) * time.Minute,
	}
}

// SetGroupSettings replaces the group configs in force (groups not in s
// use the broker's): called when the metadata log's group configs change.
//
// A group whose settings changed has its waiting fetches woken: one
// waiting at the last stable offset may have records to take under
// read_uncommitted.
func (m *Manager) SetGroupSettings(s map[string]config.GroupSettings) {
	old := m.settings.Swap(&s)
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.waiters {
		var was config.GroupSettings
		had := false
		if old != nil {
			was, had = (*old)[k.Group]
		}
		if now, has := s[k.Group]; has != had || now != was {
			m.signal(k)
		}
	}
}

// cfgFor is the configuration group works with: the broker's, with the
// group's own configs over it.
func (m *Manager) cfgFor(group string) Config {
	c := m.cfg
	if p := m.settings.Load(); p != nil {
		if s, ok := (*p)[group]; ok {
			c.LockDuration, c.DeliveryLimit, c.MaxRecordLocks = s.ShareLockDuration, s.ShareDeliveryLimit, s.ShareMaxRecordLocks
			c.SessionTimeout, c.HeartbeatInterval = s.ShareSessionTimeout, s.ShareHeartbeatInterval
			c.AutoOffsetReset, c.IsolationLevel = s.ShareAutoOffsetReset, s.ShareIsolationLevel
		}
	}
	return c
}

// LockDuration is a group's record lock duration (share.record.lock.duration.ms).
func (m *Manager) LockDuration(group string) time.Duration { return m.cfgFor(group).LockDuration }

// IsolationLevel is a group's share.isolation.level.
func (m *Manager) IsolationLevel(group string) string { return m.cfgFor(group).IsolationLevel }

// Key names one share partition.
type Key struct {
	Group     string
	Topic     [16]byte
	Partition int32
}

// TP is a topic partition by id, as share requests name them.
type TP struct {
	Topic     [16]byte
	Partition int32
}

type sessionKey struct{ group, member string }

// session is a share session (Kafka's ShareSession): the partitions a
// member fetches from this broker, and the epoch its next request must
// carry.
type session struct {
	owner any // the connection that opened it
	epoch int32
	parts map[TP]struct{}
}

// Manager holds this broker's share groups (membership, on the group's
// coordinator) and share partitions (acquisition state, on the
// partition's leader), with their share sessions. Its methods are safe for
// concurrent use; mu guards everything and is never held across I/O:
// state writes are queued under it and flushed without it.
type Manager struct {
	cfg    Config
	logger *slog.Logger

	mu       sync.Mutex
	groups   map[string]*group
	parts    map[Key]*Partition
	sessions map[sessionKey]*session
	// waiters has, per share partition a fetch waits on, a channel
	// closed when records of that partition become available again, so
	// a release wakes only the fetches of its partition.
	waiters map[Key]*waiter
	store   Store           // nil: state is not persisted
	epochs  map[Key]int32   // the topic partition's leader epoch each share partition was loaded in
	states  map[Key]int32   // the state epoch each share partition was loaded at (bumped by an administrator's reset)
	verify  map[Key]bool    // loaded share partitions to check against the store's state epoch at their next use
	fresh   map[Key]bool    // share partitions begun here with no state in the store: their writes may create it
	busy    map[string]bool // groups an administrator's offset call is changing (AdminGroup to AdminDone)
	init    Initializer     // nil: partitions are assigned without initialization (init.go)
	initing map[string]bool // groups whose initialization run is under way
	initWG  sync.WaitGroup
	pending map[Key]*Snapshot
	wmu     sync.Mutex // one writer of pending at a time, so a key's writes stay in order
	// settings are the group configs of the groups that set some
	// (broker/config's GroupSettings, from the metadata log); the others
	// use cfg.
	settings  atomic.Pointer[map[string]config.GroupSettings]
	maxGroups int // 0: MaxGroups (tests lower it)
	now       func() time.Time

	// Membership persistence (persist.go): nil sink keeps it in memory.
	sink    Sink
	partOf  func(string) int32
	gens    map[int32]uint64 // each __consumer_offsets partition's generation
	outbox  []outItem
	outWake chan struct{}

	stop chan struct{}
	done chan struct{}
}

// Store keeps share-partition state durably: broker/server's
// __share_group_state. Both calls may wait for I/O.
type Store interface {
	// Read returns k's state; found is false when it has none, and then
	// s.StateEpoch is the state epoch a new state starts at (past a
	// deleted state's).
	Read(k Key) (s Snapshot, found bool, err error)
	// Write replaces k's state (nil deletes it) and returns once it is
	// committed; a write older than the stored leader epoch is refused
	// with FENCED_LEADER_EPOCH, one older than the stored state epoch
	// with FENCED_STATE_EPOCH, and one to a key without state, unless
	// s.Create, with INVALID_REQUEST.
	Write(k Key, s *Snapshot) error
}

// NewManager returns a Manager; with store set, share-partition state is
// written there and read back when a share partition is first used at a
// leader epoch.
func NewManager(cfg Config, store Store, logger *slog.Logger) (*Manager, error) {
	m := &Manager{
		cfg: cfg, logger: logger,
		groups:   map[string]*group{},
		parts:    map[Key]*Partition{},
		sessions: map[sessionKey]*session{},
		store:    store,
		epochs:   map[Key]int32{},
		states:   map[Key]int32{},
		verify:   map[Key]bool{},
		fresh:    map[Key]bool{},
		busy:     map[string]bool{},
		initing:  map[string]bool{},
		pending:  map[Key]*Snapshot{},
		waiters:  map[Key]*waiter{},
		now:      time.Now,
		gens:     map[int32]uint64{},
		outWake:  make(chan struct{}, 1),
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	return m, nil
}

// Start runs the timers: expired locks and members.
func (m *Manager) Start() {
	if m.sink != nil {
		go m.writer()
	}
	go func() {
		defer close(m.done)
		t := time.NewTicker(tick(m.cfg))
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				m.expire()
			}
		}
	}()
}

// tick is how often locks and sessions are checked: a tenth of the lock
// duration, within [10 ms, 1 s].
func tick(cfg Config) time.Duration {
	return min(max(cfg.LockDuration/10, 10*time.Millisecond), time.Second)
}

// Stop ends the timers and the initializations.
func (m *Manager) Stop() {
	close(m.stop)
	<-m.done
	m.initWG.Wait()
}

// Released is closed the next time records of share partition k become
// available again (an acknowledgement released them, a lock expired, a
// member left), for fetches waiting for records. A fetch takes it before
// it looks for records, so that a release in between still wakes it,
// and hands it back with Unwatch once it no longer waits (wake.go).
func (m *Manager) Released(k Key) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	w := m.waiters[k]
	if w == nil {
		w = &waiter{ch: make(chan struct{})}
		m.waiters[k] = w
	}
	w.n++
	return w.ch
}

// signal wakes the fetches waiting on share partition k. mu must be held.
func (m *Manager) signal(k Key) {
	if w := m.waiters[k]; w != nil {
		close(w.ch)
		delete(m.waiters, k)
	}
}

func (m *Manager) expire() {
	defer m.flush()
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	// Members whose session ran out, by group, are released in the same
	// one pass over the share partitions that expires locks, so a tick
	// costs O(groups + partitions) however many members leave (review M3).
	gone := map[string][]string{}
	for _, g := range m.groups {
		if ids := g.expire(now, m.cfgFor(g.id).SessionTimeout, g.shape); len(ids) > 0 {
			gone[g.id] = ids
			for _, id := range ids {
				delete(m.sessions, sessionKey{g.id, id})
			}
		}
	}
	for id := range gone {
		// Queued, not waited for: the timer never waits on
		// __consumer_offsets (locks would expire late).
		if g := m.groups[id]; g != nil {
			g.noteEmpty(now)
			m.save(g, false)
		}
	}
	m.expireEmpty(now)
	for k, p := range m.parts {
		released := false
		limit := m.cfgFor(k.Group).DeliveryLimit
		for _, id := range gone[k.Group] {
			released = p.ReleaseMember(id, limit) || released
		}
		if p.Expire(now.UnixNano(), limit) || released {
			m.signal(k)
		}
		m.persist(k, p)
	}
}

// maxSessionPartitions bounds the partitions one share session names, so
// that requests naming made-up partitions cannot grow a session without
// bound (Kafka bounds them only by the request size).
const maxSessionPartitions = 10000

// releaseMember releases what member holds in the group's partitions,
// waking the fetches waiting on those, and forgets its share session. mu
// must be held.
func (m *Manager) releaseMember(groupID, member string) {
	delete(m.sessions, sessionKey{groupID, member})
	limit := m.cfgFor(groupID).DeliveryLimit
	for k, p := range m.parts {
		if k.Group == groupID && p.ReleaseMember(member, limit) {
			m.signal(k)
		}
		m.persist(k, p)
	}
}

// persist queues the partition's state for the store when it changed;
// flush writes it. mu must be held.
func (m *Manager) persist(k Key, p *Partition) {
	if !p.TakeDirty() || m.store == nil {
		return
	}
	epoch, ok := m.epochs[k]
	if !ok {
		epoch = -1 // an administrator's change, not a leader's: not fenced
	}
	m.pending[k] = &Snapshot{StateEpoch: m.states[k], LeaderEpoch: epoch, StartOffset: p.StartOffset(), Batches: p.Batches(), Create: m.fresh[k]}
}

// flush writes the queued states, without mu, and returns once they are
// committed or failed. A caller whose
// state another flush took waits for that flush through wmu. A write
// refused as fenced drops the share partition here: this broker is no
// longer its leader's latest epoch, the next use reloads it.
//
// The acknowledgements a written state holds (the partition's open txn
// when the state is taken) stand or fall with the write, as Kafka's
// SharePartition rolls its in-flight state back when the persister write
// fails: on failure their records are acquired again as before, and the
// state without them is queued again, so the store ends up agreeing with
// what the client was told even if the failed write did land.
func (m *Manager) flush() {
	if m.store == nil {
		return
	}
	m.wmu.Lock()
	defer m.wmu.Unlock()
	m.mu.Lock()
	pend := m.pending
	m.pending = map[Key]*Snapshot{}
	type held struct {
		p *Partition
		t *txn
	}
	txs := map[Key]held{}
	for k := range pend {
		if p := m.parts[k]; p != nil && p.open != nil {
			txs[k] = held{p, p.open}
			p.open = nil
		}
	}
	m.mu.Unlock()
	for k, s := range pend {
		err := m.store.Write(k, s)
		m.mu.Lock()
		if h, ok := txs[k]; ok {
			h.t.done, h.t.err = true, err
			if h.p.settle(h.t, err == nil) {
				m.signal(k)
			}
		}
		switch {
		case err == nil: // written
		case errors.Is(err, kerr.FencedLeaderEpoch), errors.Is(err, kerr.FencedStateEpoch), errors.Is(err, kerr.InvalidRequest):
			// A newer leader, or an administrator's reset (a new state
			// epoch) or delete (INVALID_REQUEST: no state to write to),
			// owns the state now: the next use reloads it.
			m.forget(k)
		default:
			if p := m.parts[k]; p != nil && s != nil {
				// Rebuilt from memory, not s: it lacks what was rolled
				// back, and a state queued meanwhile may hold it too.
				p.dirty = true
				m.persist(k, p)
			} else if _, newer := m.pending[k]; !newer {
				m.pending[k] = s // retried by the next flush
			}
			m.logger.Warn("share-group state not persisted", "group", k.Group, "partition", k.Partition, "err", err)
		}
		m.mu.Unlock()
	}
}

// persisterErr is the partition error for a failed state write, as
// Kafka's SharePartition maps the persister's (fetchPersisterError); the
// store's own failures (no leader, not enough replicas, timeouts) are
// what Kafka's share coordinator reports as COORDINATOR_NOT_AVAILABLE.
func persisterErr(err error) *kerr.Error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		switch ke {
		case kerr.FencedLeaderEpoch, kerr.FencedStateEpoch, kerr.InvalidRequest:
			// Kafka maps both fences to NOT_LEADER_OR_FOLLOWER, which
			// clients retry; a write refused for want of state (deleted
			// by an administrator) is a fence here too.
			return kerr.NotLeaderForPartition
		case kerr.GroupIDNotFound, kerr.UnknownTopicOrPartition:
			return ke
		}
	}
	return kerr.CoordinatorNotAvailable
}

// load makes k's share partition current for the topic partition's
// leader epoch: read from the store the first time it is used at that
// epoch (after a restart, or when this broker became the leader). Without
// a store it is a no-op.
func (m *Manager) load(k Key, epoch int32) *kerr.Error {
	m.mu.Lock()
	e, ok := m.epochs[k]
	check := m.verify[k]
	m.mu.Unlock()
	if ok && e == epoch && !check || m.store == nil {
		return nil
	}
	// Our own queued writes of k land first: a reload must see them.
	m.flush()
	s, found, err := m.store.Read(k)
	if err != nil {
		var ke *kerr.Error
		if errors.As(err, &ke) && ke == kerr.CoordinatorLoadInProgress {
			return ke
		}
		return kerr.CoordinatorNotAvailable
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if check && m.verify[k] {
		delete(m.verify, k)
		if e, ok := m.epochs[k]; ok && e == epoch && found && s.StateEpoch == m.states[k] && (m.parts[k] != nil || s.StartOffset == StartUnset) {
			// Still the state this copy was loaded from: keep the
			// copy, which holds the acquisitions not yet written.
			return nil
		}
	} else if e, ok := m.epochs[k]; ok && e == epoch {
		return nil // loaded meanwhile
	}
	delete(m.pending, k)
	if !found {
		// Never initialized by the group's coordinator (or deleted
		// since): refused, and nothing of it is kept here, as Kafka's
		// share-partition leader refuses it. Whoever asked may have made
		// the group up.
		m.forget(k)
		return ErrUninitialized
	}
	if s.StartOffset == StartUnset {
		// Initialized, never read: Acquire starts it where
		// share.auto.offset.reset says (Manager.partition).
		delete(m.parts, k)
	} else {
		m.parts[k] = Restore(s.StartOffset, s.Batches, m.cfgFor(k.Group).MaxRecordLocks)
		m.parts[k].dirty = true // written back at this epoch: fences the previous leader
	}
	m.states[k] = s.StateEpoch
	delete(m.fresh, k)
	m.epochs[k] = epoch
	return nil
}

// Heartbeat serves a ShareGroupHeartbeat. topics is the cluster's topics
// by name; isOther says the group id belongs to a classic or consumer
// group.
func (m *Manager) Heartbeat(req HeartbeatRequest, topics map[string]TopicMeta, isOther bool) *kmsg.ShareGroupHeartbeatResponse {
	resp, saved := m.heartbeat(req, topics, isOther)
	if err := m.await(saved); err != nil {
		// Not answered as done: the member retries, with the epoch it
		// had or, after a coordinator move, at the new coordinator,
		// which loaded what was committed.
		out := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		out.ErrorCode = coordinatorErr(err).Code
		return out
	}
	return resp
}

func (m *Manager) heartbeat(req HeartbeatRequest, topics map[string]TopicMeta, isOther bool) (*kmsg.ShareGroupHeartbeatResponse, *pendingWrite) {
	defer m.flush()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sink != nil && m.gens[req.Partition] != req.Gen {
		// The partition was unloaded (or reloaded) since the
		// coordinator let this request in: what it would write would
		// be dropped, and a group made here would be a ghost.
		resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		resp.ErrorCode = kerr.NotCoordinator.Code
		return resp, nil
	}
	g := m.groups[req.GroupID]
	if m.busy[req.GroupID] || (g != nil && g.deleting) {
		// An administrator is resetting or deleting the group's state:
		// no member joins (and gets partitions) until that ends, as
		// Kafka's assignor holds back partitions being initialized or
		// deleted. The client retries.
		resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		msg := "Group " + req.GroupID + " is being changed by an administrator."
		resp.ErrorCode, resp.ErrorMessage = kerr.CoordinatorLoadInProgress.Code, &msg
		return resp, nil
	}
	if g == nil {
		if isOther || req.MemberEpoch != 0 {
			resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
			resp.ErrorCode = kerr.GroupIDNotFound.Code
			msg := "Group " + req.GroupID + " not found."
			if isOther {
				msg = "Group " + req.GroupID + " is not a share group."
			}
			resp.ErrorMessage = &msg
			return resp, nil
		}
		if msg, full := m.tooManyGroups(); full {
			resp := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
			resp.ErrorCode, resp.ErrorMessage = errGroupCount.Code, &msg
			return resp, nil
		}
		g = &group{id: req.GroupID, part: req.Partition, members: map[string]*member{}}
	}
	if m.init != nil && g.ready == nil {
		g.ready = map[tpKey]bool{}
	}
	now := m.now()
	resp, left := g.heartbeat(req, topics, now, m.cfg.MaxSize, m.cfgFor(req.GroupID).HeartbeatInterval)
	if resp.ErrorCode == 0 {
		// A group exists from its first member on, and stays (empty)
		// until deleted, as Kafka's share groups do (or, if it never
		// had a partition, until expireEmpty).
		m.groups[g.id] = g
		// Only a heartbeat that was accepted initializes anything: a
		// refused one (unknown member, a full group...) would be a
		// stranger's way around the leaders' fence.
		m.maybeInitialize(g)
	}
	if left != "" {
		m.releaseMember(g.id, left)
	}
	if resp.ErrorCode != 0 {
		return resp, nil
	}
	g.noteEmpty(now)
	return resp, m.saveMember(g, true, req.MemberID)
}

// Describe serves one group of a ShareGroupDescribe.
func (m *Manager) Describe(id string, names map[[16]byte]string) kmsg.ShareGroupDescribeResponseGroup {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[id]
	if g == nil {
		d := kmsg.NewShareGroupDescribeResponseGroup()
		d.GroupID, d.ErrorCode = id, kerr.GroupIDNotFound.Code
		msg := "Group " + id + " not found."
		d.ErrorMessage = &msg
		return d
	}
	return g.describe(names)
}

// Group is a share group as lists show it.
type Group struct {
	ID, State string
	Members   int
}

// Groups lists the share groups this broker coordinates.
func (m *Manager) Groups() []Group {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Group, 0, len(m.groups))
	for _, g := range m.groups {
		out = append(out, Group{ID: g.id, State: g.stateName(), Members: len(g.members)})
	}
	return out
}

// Has says whether id is a share group here.
func (m *Manager) Has(id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.groups[id] != nil
}

// Session checks a request's share-session epoch and updates the session:
// epoch 0 opens a new one with add (no acknowledgements may come with
// it), a positive epoch must be the session's and adds add and removes
// forget, -1 closes it (after the caller applied the request's
// acknowledgements and called CloseSession). It returns the session's
// partitions. Kafka's ShareSessionCache.
func (m *Manager) Session(owner any, groupID, member string, epoch int32, add, forget []TP, acks bool) ([]TP, *kerr.Error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := sessionKey{groupID, member}
	s := m.sessions[k]
	switch {
	case epoch == 0:
		if acks {
			return nil, kerr.InvalidRequest
		}
		if s == nil && len(m.sessions) >= m.cfg.MaxSessions {
			return nil, kerr.ShareSessionLimitReached
		}
		s = &session{owner: owner, parts: map[TP]struct{}{}}
		m.sessions[k] = s
		// A new session is where a member (re)starts reading: check
		// that what is held here was not reset or deleted by an
		// administrator on another broker meanwhile (the group was empty
		// then, so no write of ours fenced it yet).
		for _, tp := range add {
			if sk := (Key{groupID, tp.Topic, tp.Partition}); m.parts[sk] != nil {
				m.verify[sk] = true
			}
		}
	case s == nil:
		return nil, kerr.ShareSessionNotFound
	case epoch == -1:
	case epoch != s.epoch:
		return nil, kerr.InvalidShareSessionEpoch
	}
	if epoch >= 0 {
		for _, tp := range add {
			if _, ok := s.parts[tp]; !ok && len(s.parts) >= maxSessionPartitions {
				return nil, kerr.InvalidRequest
			}
			s.parts[tp] = struct{}{}
		}
		for _, tp := range forget {
			delete(s.parts, tp)
		}
		s.epoch++
		if s.epoch < 0 {
			s.epoch = 1
		}
	}
	out := make([]TP, 0, len(s.parts))
	for tp := range s.parts {
		out = append(out, tp)
	}
	return out, nil
}

// CloseSession ends member's share session on this broker and releases
// what it holds here.
func (m *Manager) CloseSession(groupID, member string) {
	defer m.flush()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.releaseMember(groupID, member)
}

// CloseSessionOf closes member's share session if owner still owns it
// (a new epoch-0 request on another connection replaced it otherwise).
func (m *Manager) CloseSessionOf(groupID, member string, owner any) {
	defer m.flush()
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.sessions[sessionKey{groupID, member}]; s != nil && s.owner == owner {
		m.releaseMember(groupID, member)
	}
}

// partition returns the share partition, created at the start offset
// share.auto.offset.reset picks. mu must be held.
func (m *Manager) partition(k Key, hw, logStart int64) *Partition {
	p := m.parts[k]
	if p == nil {
		start := hw
		if m.cfgFor(k.Group).AutoOffsetReset == "earliest" {
			start = logStart
		}
		p = NewPartition(start)
		p.dirty = true
		m.parts[k] = p
		// With a store the state exists (initialized by the coordinator,
		// checked by load): the write never needs to create it, and must
		// not, or a write racing an administrator's delete would bring
		// the state back.
		m.fresh[k] = m.store == nil
	}
	p.Advance(logStart)
	return p
}

// Acquire hands member up to max records of the share partition below
// hw. epoch is the topic partition's leader epoch, logStart its log start
// offset. The acquisition (its delivery counts) is queued for the store
// and written by the next flush (an acknowledgement, the timer), not
// waited for, as Kafka persists delivery counts with the acknowledgement:
// a record acquired but never acknowledged before a leader moves comes
// back with the count it had.
func (m *Manager) Acquire(k Key, epoch int32, member string, maxRecords int, hw, logStart int64) ([]Range, *kerr.Error) {
	if e := m.load(k, epoch); e != nil {
		return nil, e
	}
	m.mu.Lock()
	p := m.partition(k, hw, logStart)
	now := m.now().UnixNano()
	cfg := m.cfgFor(k.Group)
	if p.Expire(now, cfg.DeliveryLimit) {
		m.signal(k)
	}
	out := p.Acquire(member, maxRecords, hw, cfg.MaxRecordLocks, now, int64(cfg.LockDuration))
	m.persist(k, p)
	m.mu.Unlock()
	return out, nil
}

// Unacquire gives back acquired offsets from `from` on that a fetch could
// not return.
func (m *Manager) Unacquire(k Key, member string, ranges []Range, from int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	// Waiting fetches wake only when records did come back (review L2).
	if p := m.parts[k]; p != nil && p.Unacquire(member, ranges, from) {
		m.signal(k)
	}
}

// AckBatch is one acknowledgement batch of a request.
type AckBatch struct {
	First, Last int64
	Types       []int8
}

// Acknowledge applies member's acknowledgement batches to one share
// partition all or nothing, as Kafka's SharePartition.acknowledge: on any
// error no batch is applied (Partition.AcknowledgeBatches). With a store
// the change holds only once written: if the write fails it is rolled
// back (the records are the member's again, and come back when their
// lock expires) and the answer is the write's error.
func (m *Manager) Acknowledge(k Key, epoch int32, member string, batches []AckBatch) *kerr.Error {
	if e := m.load(k, epoch); e == ErrUninitialized {
		// Kafka 4.4 answers an acknowledgement for a share partition
		// it has not loaded UNKNOWN_TOPIC_OR_PARTITION.
		return kerr.UnknownTopicOrPartition
	} else if e != nil {
		return e
	}
	t, err := m.acknowledge(k, member, batches)
	if err != nil || t == nil {
		m.flush() // what the partition changed besides (a slide) is written as before
		return err
	}
	m.flush()
	m.mu.Lock()
	defer m.mu.Unlock()
	if !t.done {
		// The state was replaced before any write took it (reloaded at
		// a new leader epoch): the acknowledgement is gone with it.
		return kerr.NotLeaderForPartition
	}
	if t.err != nil {
		return persisterErr(t.err)
	}
	return nil
}

// acknowledge applies the batches; the txn returned (nil without a store,
// or when nothing needs writing) tells how their write went.
func (m *Manager) acknowledge(k Key, member string, batches []AckBatch) (*txn, *kerr.Error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.parts[k]
	if p == nil {
		return nil, kerr.InvalidRecordState
	}
	var t *txn
	if m.store != nil {
		if p.open == nil {
			p.open = &txn{}
		}
		t = p.open
	}
	now := m.now().UnixNano()
	released, err := p.ackBatches(member, batches, m.cfgFor(k.Group).DeliveryLimit, now, int64(m.cfgFor(k.Group).LockDuration), t)
	if err != nil || !p.holds(t) {
		t = nil // nothing of this request waits for the write (refused, or renewals only)
	}
	m.persist(k, p)
	if released {
		m.signal(k)
	}
	return t, err
}

// LoadedPartitions says how many share partitions are held (metrics, tests).
func (m *Manager) LoadedPartitions() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.parts)
}

// Cfg is the manager's configuration.
func (m *Manager) Cfg() Config { return m.cfg }

// StartOffset is a share partition's SPSO here, if it has one.
func (m *Manager) StartOffset(k Key) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.parts[k]; p != nil {
		return p.StartOffset(), true
	}
	return 0, false
}

// Members is how many members a share group has (-1: no such group).
func (m *Manager) Members(groupID string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if g := m.groups[groupID]; g != nil {
		return len(g.members)
	}
	return -1
}

// AdminGroup is the group check of the administrators' offset calls,
// on the group's coordinator: the share group must be empty
// (NON_EMPTY_GROUP); an unknown one is GROUP_ID_NOT_FOUND, or with create
// is created empty, as Kafka's AlterShareGroupOffsets does. The offsets
// themselves are in the store, wherever the state partitions are led
// (broker/server/90_share_group_offsets.go). On success the group is
// busy until AdminDone: no member joins it meanwhile, and another
// administrator's call is COORDINATOR_LOAD_IN_PROGRESS (retried by
// clients), so the group stays empty for the whole call (review M4).
//
// part and gen are the group's __consumer_offsets partition and the
// generation the coordinator had it loaded at when it let the call in
// (ShareStatus), as for heartbeats: if it was unloaded or reloaded
// since, the call is NOT_COORDINATOR. Otherwise a group created here
// would be a ghost on a broker that no longer leads its partition,
// never expiring once Initialized and counting toward MaxGroups.
func (m *Manager) AdminGroup(groupID string, create bool, part int32, gen uint64) *kerr.Error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sink != nil && m.gens[part] != gen {
		return kerr.NotCoordinator
	}
	g := m.groups[groupID]
	switch {
	case g != nil && len(g.members) > 0:
		// Said first: not retriable, unlike the answer below.
		return kerr.NonEmptyGroup
	case m.busy[groupID], m.initing[groupID], g != nil && g.deleting:
		// An initialization under way would race the call's own writes
		// (a delete it creates back); both end soon, the client retries.
		return kerr.CoordinatorLoadInProgress
	case g != nil:
	case !create:
		return kerr.GroupIDNotFound
	default:
		if _, full := m.tooManyGroups(); full {
			return errGroupCount
		}
		g = &group{id: groupID, members: map[string]*member{}, emptySince: m.now()}
		if m.partOf != nil {
			g.part = m.partOf(groupID)
		}
		m.groups[groupID] = g
		m.save(g, false)
	}
	m.busy[groupID] = true
	return nil
}

// AdminDone ends the administrator's call AdminGroup allowed.
func (m *Manager) AdminDone(groupID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.busy, groupID)
	if g := m.groups[groupID]; g != nil && g.ready != nil {
		// The call may have deleted states (recorded, StateDeleting) or
		// given some (Initialized): ready is what the type-15 record has
		// initialized, and the next join checks the rest again
		// (initialization leaves existing states alone).
		g.ready, g.checked = g.state.readyParts(), -1
	}
}

// Forget drops this broker's copies of share partitions whose state an
// administrator reset or deleted in the store: their next use reads it.
// (Copies on other brokers notice at their next share session, or are
// fenced by the new state epoch at their next write.)
func (m *Manager) Forget(keys []Key) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, k := range keys {
		delete(m.pending, k)
		m.forget(k)
	}
}

// DeleteGroup deletes an empty share group with its share partitions and
// its config.
//
// The group leaves memory only once its tombstones are committed: a
// failed write answers a retriable error with the group still here, so
// the administrator's retry deletes it again (rather than getting
// GROUP_ID_NOT_FOUND while the log still has the group, which would come
// back at the next load).
func (m *Manager) DeleteGroup(groupID string) *kerr.Error {
	g, saved, code := m.deleteGroup(groupID)
	if code != nil {
		return code
	}
	err := m.await(saved)
	m.deleted(g, err)
	if err != nil {
		return coordinatorErr(err)
	}
	return nil
}

func (m *Manager) deleteGroup(groupID string) (*group, *pendingWrite, *kerr.Error) {
	defer m.flush()
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[groupID]
	switch {
	case g == nil:
		return nil, nil, kerr.GroupIDNotFound
	case g.deleting:
		return nil, nil, kerr.CoordinatorLoadInProgress
	case len(g.members) > 0:
		return nil, nil, kerr.NonEmptyGroup
	}
	return g, m.tombstone(g, true), nil
}

// tombstone queues the tombstones of g, which stays (refusing joins)
// until deleted reports their outcome. mu must be held.
func (m *Manager) tombstone(g *group, wait bool) *pendingWrite {
	g.deleting = true
	return m.save(g, wait)
}

// deleted ends a delete of g that tombstone began: committed, g leaves
// memory with its share partitions; failed, g stays as it was (its
// records marked unknown, rewritten with its next change).
func (m *Manager) deleted(g *group, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g.deleting = false
	if m.groups[g.id] != g || err != nil {
		return
	}
	delete(m.groups, g.id)
	for k := range m.parts {
		if k.Group == g.id {
			m.drop(k)
		}
	}
}

// drop forgets one share partition, in the store too (a tombstone).
// mu must be held.
func (m *Manager) drop(k Key) {
	m.signal(k)
	m.forget(k)
	if m.store != nil {
		m.pending[k] = nil
	}
}

// forget drops this broker's copy of a share partition; the next use
// reads the store again. mu must be held.
func (m *Manager) forget(k Key) {
	delete(m.parts, k)
	delete(m.epochs, k)
	delete(m.states, k)
	delete(m.verify, k)
	delete(m.fresh, k)
}
