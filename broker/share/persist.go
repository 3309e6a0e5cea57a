package share

import (
	"errors"
	"hash/fnv"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Share-group membership persists in __consumer_offsets (records.go), as
// Kafka 4.4 keeps it: the group's coordinator writes what a heartbeat,
// a session expiry or a delete changed, and replays the records when it
// loads the partition, so a group outlives its coordinator's restart or
// move at the same group epoch and its members go on where they were.
//
// Writes leave through one goroutine (the outbox), in the order they
// were made under mu: neither the timer that expires locks and sessions
// nor mu ever waits on __consumer_offsets. A heartbeat waits for its own
// write before it answers, as Kafka's does.
//
// Each load and unload of a partition starts a generation (the
// coordinator's); a group belongs to the generation its partition was
// loaded at. A heartbeat checked against an older generation is
// NOT_COORDINATOR and creates nothing, an unload drops the partition's
// groups here, and the coordinator drops a write of an older generation:
// a heartbeat that raced the partition moving away leaves no ghost group.

// Sink appends share records to __consumer_offsets: the group
// coordinator. Write must not wait for replication: done runs once the
// records are committed or failed.
type Sink interface {
	Write(partition int32, gen uint64, recs []Record, done func(error))
}

type outItem struct {
	g    *group
	part int32
	gen  uint64
	recs []Record
	done *pendingWrite
}

// pendingWrite is the outcome of one save, which may leave in several
// batches: done once every batch is committed or failed, with the first
// error. waited says somebody reads the error (else it is logged).
type pendingWrite struct {
	mu     sync.Mutex
	left   int
	err    error
	fin    chan struct{}
	waited bool
}

func (p *pendingWrite) finished() bool {
	select {
	case <-p.fin:
		return true
	default:
		return false
	}
}

func (p *pendingWrite) finish(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil && p.err == nil {
		p.err = err
	}
	if p.left--; p.left == 0 {
		close(p.fin)
	}
}

// maxBatchBytes bounds one membership write, well under
// __consumer_offsets' max.message.bytes (1 MiB): a save larger than that
// leaves in several batches, in order, so that a large group's change is
// written and one member's oversized record fails alone. A variable for
// tests.
var maxBatchBytes = 256 << 10

// batches splits recs, in order, into runs of at most maxBatchBytes
// (a larger record alone).
func batches(recs []Record) [][]Record {
	var out [][]Record
	start, size := 0, 0
	for i, r := range recs {
		n := len(r.Key) + len(r.Value) + 32
		if i > start && size+n > maxBatchBytes {
			out = append(out, recs[start:i])
			start, size = i, 0
		}
		size += n
	}
	return append(out, recs[start:])
}

// tooLarge says the log refused a write for its size: writing it again
// fails the same way, so it is not retried (see writer).
func tooLarge(err error) bool {
	return errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge)
}

// SetSink makes the manager persist membership through s; partitionOf
// maps a group to its __consumer_offsets partition. Call before Start.
func (m *Manager) SetSink(s Sink, partitionOf func(string) int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sink, m.partOf = s, partitionOf
}

// writer sends the outbox to the sink, in order, off the timer and
// request paths.
func (m *Manager) writer() {
	for {
		select {
		case <-m.stop:
			return
		case <-m.outWake:
		}
		m.mu.Lock()
		items := m.outbox
		m.outbox = nil
		m.mu.Unlock()
		for _, it := range items {
			m.sink.Write(it.part, it.gen, it.recs, func(err error) {
				switch {
				case err == nil:
				case tooLarge(err):
					// Not marked unknown: a record the log refuses
					// for its size would fail every later write of
					// the group. The change is rejected instead;
					// the records stay taken as written, so a reload
					// does not know the change (a member of it is
					// fenced and joins again).
					m.logger.Warn("share-group records too large to write", "partition", it.part, "group", it.g.id, "err", err)
				default:
					m.unsure(it.g, it.recs)
				}
				if !it.done.waited && err != nil && !errors.Is(err, kerr.NotCoordinator) && !tooLarge(err) {
					m.logger.Warn("share-group records not written", "partition", it.part, "err", err)
				}
				it.done.finish(err)
			})
		}
	}
}

// save queues what changed in g since its last write; the write
// returned (nil when nothing changed) gets its outcome. mu must be held.
func (m *Manager) save(g *group, wait bool) *pendingWrite {
	return m.saveMember(g, wait, "")
}

// saveMember is save after a heartbeat of member: when the group epoch
// did not move only that member's records can have changed, and only
// they are compared (a steady heartbeat costs O(1), not O(members)).
func (m *Manager) saveMember(g *group, wait bool, member string) *pendingWrite {
	if m.sink == nil {
		return nil
	}
	live := m.groups[g.id] == g && !g.deleting
	var recs []Record
	if mb := g.members[member]; live && mb != nil && g.written != nil && g.epoch == g.writtenEpoch {
		recs = g.diffMember(mb)
	} else {
		recs = g.diff(live)
	}
	if len(recs) == 0 {
		// Nothing new, but an earlier write of the group may still be
		// on its way (a retried or repeated heartbeat right after a
		// join): the answer waits for it, as Kafka's coordinator holds
		// a response until the partition's pending writes commit.
		if pw := g.lastWrite; wait && pw != nil && !pw.finished() {
			return pw
		}
		return nil
	}
	bs := batches(recs)
	pw := &pendingWrite{left: len(bs), fin: make(chan struct{}), waited: wait}
	for _, b := range bs {
		m.outbox = append(m.outbox, outItem{g: g, part: g.part, gen: m.gens[g.part], recs: b, done: pw})
	}
	g.lastWrite = pw
	select {
	case m.outWake <- struct{}{}:
	default:
	}
	return pw
}

// unknownValue marks a record whose last write failed: it may or may not
// be in the log, so the next save writes it again, or its tombstone.
const unknownValue = 0

// unsure marks the records of a failed write of g, and makes g's next
// save compare all its records. It runs in the coordinator's callback
// (its lock held, which is taken before mu everywhere).
func (m *Manager) unsure(g *group, recs []Record) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if g.written == nil {
		g.written = map[recID]uint64{}
	}
	for _, r := range recs {
		if typ, _, mid, err := parseKey(r.Key); err == nil {
			g.written[recID{typ, mid}] = unknownValue
		}
	}
	g.writtenEpoch = -1
}

// await waits for a queued write (nil: none).
func (m *Manager) await(pw *pendingWrite) error {
	if pw == nil {
		return nil
	}
	select {
	case <-pw.fin:
		pw.mu.Lock()
		defer pw.mu.Unlock()
		return pw.err
	case <-m.stop:
		return kerr.CoordinatorNotAvailable
	}
}

// coordinatorErr is how a failed membership write is answered, as
// Kafka's group coordinator maps append failures.
func coordinatorErr(err error) *kerr.Error {
	var ke *kerr.Error
	if errors.As(err, &ke) && (ke == kerr.NotCoordinator || ke == kerr.NotLeaderForPartition) {
		return kerr.NotCoordinator
	}
	if tooLarge(err) {
		// As Kafka's GroupCoordinatorService answers a write the log
		// refused for its size: retrying cannot help.
		return kerr.UnknownServerError
	}
	return kerr.CoordinatorNotAvailable
}

// recID names a record of a group: its type and member ("" for the
// group's own). The group id is implicit, so the written copy holds no
// key bytes (a group id may be 32 KiB).
type recID struct {
	typ    int16
	member string
}

type idRecord struct {
	id    recID
	value []byte
}

// records is every record of g as it is now, in the order Kafka writes
// them: members, the group epoch, the target assignment, the current
// assignments. Keys are made by key, for those that are written.
func (g *group) records() []idRecord {
	ids := slices.Sorted(maps.Keys(g.members))
	var out []idRecord
	for _, id := range ids {
		out = append(out, idRecord{recID{recMember, id}, memberValue(g.members[id])})
	}
	if !g.state.empty() {
		out = append(out, idRecord{recID{recStatePartMeta, ""}, statePartValue(g.state)})
	}
	out = append(out, idRecord{recID{recMetadata, ""}, metadataValue(g.epoch, g.hash())})
	for _, id := range ids {
		out = append(out, idRecord{recID{recTargetMember, id}, targetMemberValue(g.members[id].assigned)})
	}
	out = append(out, idRecord{recID{recTargetMeta, ""}, targetMetaValue(g.epoch)})
	for _, id := range ids {
		out = append(out, idRecord{recID{recCurrentAssign, id}, currentValue(g.members[id])})
	}
	return out
}

// key is the record key of id in g.
func (g *group) key(id recID) []byte { return recKey(id.typ, g.id, id.member) }

// hash is the MetadataHash of the group's subscribed topics at its
// epoch: the one loaded while no heartbeat recomputed the shape.
func (g *group) hash() int64 {
	if g.shape == nil {
		return g.loadedHash
	}
	return shapeHash(g.shape)
}

// diff returns the records that bring the log from what was written of g
// to g as it is (all tombstones when it is gone: members first, the
// group epoch last, as Kafka deletes a group), and takes them as written.
func (g *group) diff(live bool) []Record {
	if g.written == nil {
		g.written = map[recID]uint64{}
	}
	now := map[recID]uint64{}
	var vals []Record
	if live {
		if g.ready == nil {
			// No initializer (no store): what is assigned is what has
			// state. With one, init.go records it.
			g.noteInitialized()
		}
		for _, r := range g.records() {
			h := valueHash(r.value)
			now[r.id] = h
			if old, ok := g.written[r.id]; !ok || old != h {
				vals = append(vals, Record{g.key(r.id), r.value})
			}
		}
	}
	var gone []recID
	for id := range g.written {
		if _, ok := now[id]; !ok {
			gone = append(gone, id)
		}
	}
	// Member records before the group's, and among the group's the
	// epoch last: a reader never sees a group deleted before its members.
	order := map[int16]int{recCurrentAssign: 0, recTargetMember: 1, recMember: 2, recTargetMeta: 3, recStatePartMeta: 4, recMetadata: 5}
	slices.SortFunc(gone, func(a, b recID) int {
		ta, ma, tb, mb := a.typ, a.member, b.typ, b.member
		if ma != mb {
			if ma == "" {
				return 1
			}
			if mb == "" {
				return -1
			}
			if ma < mb {
				return -1
			}
			return 1
		}
		return order[ta] - order[tb]
	})
	tombs := make([]Record, 0, len(gone)+len(vals))
	for _, id := range gone {
		tombs = append(tombs, Record{Key: g.key(id)})
	}
	g.written, g.writtenEpoch = now, g.epoch
	return append(tombs, vals...)
}

// diffMember is diff for one member's records, the group's unchanged.
func (g *group) diffMember(mb *member) []Record {
	var out []Record
	for _, r := range []idRecord{
		{recID{recMember, mb.id}, memberValue(mb)},
		{recID{recTargetMember, mb.id}, targetMemberValue(mb.assigned)},
		{recID{recCurrentAssign, mb.id}, currentValue(mb)},
	} {
		h := valueHash(r.value)
		if old, ok := g.written[r.id]; !ok || old != h {
			g.written[r.id] = h
			out = append(out, Record{g.key(r.id), r.value})
		}
	}
	return out
}

// valueHash stands for a written value: a changed value is written again.
func valueHash(v []byte) uint64 {
	h := fnv.New64a()
	h.Write(v)
	return h.Sum64()
}

// noteInitialized adds the partitions assigned now to those the group
// has share state for (the type-15 record), when no initializer records
// them: a group that ever had one assigned is kept until deleted.
func (g *group) noteInitialized() {
	names := map[[16]byte]string{}
	for n, tm := range g.shape {
		names[tm.ID] = n
	}
	for _, mb := range g.members {
		for id, ps := range mb.assigned {
			if len(ps) > 0 {
				addParts(&g.state.initialized, id, names[id], ps...)
			}
		}
	}
}

// LoadShare replays the share records of a __consumer_offsets partition
// the coordinator loaded at generation gen. topics is the cluster's
// topics now: a group whose subscribed topics are as at its epoch keeps
// the epoch. Members get a full session from now to heartbeat again.
func (m *Manager) LoadShare(p int32, gen uint64, recs []Record, topics map[string]TopicMeta) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gens[p] = gen
	now := m.now()
	loaded := map[string]*group{}
	for _, r := range recs {
		typ, gid, mid, err := parseKey(r.Key)
		if err != nil {
			m.logger.Warn("skipping share record", "partition", p, "err", err)
			continue
		}
		g := loaded[gid]
		if g == nil {
			if r.Value == nil {
				continue
			}
			g = &group{id: gid, part: p, members: map[string]*member{}, written: map[recID]uint64{}, emptySince: now}
			loaded[gid] = g
		}
		if r.Value == nil {
			delete(g.written, recID{typ, mid})
		} else {
			g.written[recID{typ, mid}] = valueHash(r.Value)
		}
		if err := g.replay(typ, mid, r.Value, now); err != nil {
			m.logger.Warn("skipping share record", "partition", p, "group", gid, "err", err)
		}
		if typ == recMetadata && r.Value == nil {
			delete(loaded, gid)
		}
	}
	for id, g := range loaded {
		shape := map[string]TopicMeta{}
		for _, t := range g.subscribed() {
			if tm, ok := topics[t]; ok {
				shape[t] = tm
			}
		}
		if shapeHash(shape) == g.loadedHash {
			g.shape = shape
		} else {
			// The topics changed while nobody coordinated the group:
			// the next heartbeat starts a new epoch.
			g.shape = map[string]TopicMeta{}
		}
		g.writtenEpoch = g.epoch
		if m.init != nil {
			// What the record says is initialized is: the group's
			// partitions are not held back for a round of initialization
			// after a coordinator restart or move (init.go).
			g.ready = g.state.readyParts()
		}
		m.groups[id] = g
	}
}

// replay applies one record to g.
func (g *group) replay(typ int16, mid string, v []byte, now time.Time) error {
	var d *dec
	if v != nil {
		d = readValue(v)
	}
	mb := g.members[mid]
	if mid != "" && mb == nil && d != nil {
		mb = &member{id: mid, assigned: map[[16]byte][]int32{}, lastSeen: now}
		g.members[mid] = mb
	}
	switch typ {
	case recMember:
		if d == nil {
			delete(g.members, mid)
			break
		}
		mb.rack, mb.clientID, mb.clientHost = d.nstr(), d.str(), d.str()
		mb.topics = nil
		for range d.count() {
			mb.topics = append(mb.topics, d.str())
		}
		mb.topics = sortedTopics(mb.topics)
	case recMetadata:
		if d != nil {
			g.epoch, g.loadedHash = d.i32(), d.i64()
		}
	case recTargetMember:
		if d != nil && mb != nil {
			mb.assigned = d.parts()
		}
	case recCurrentAssign:
		if d != nil && mb != nil {
			mb.epoch, mb.prevEpoch = d.i32(), d.i32()
			d.i8()
			mb.assigned = d.parts()
		}
	case recStatePartMeta:
		g.state = statePart{}
		if d != nil {
			g.state = readStatePart(d)
		}
	}
	if d != nil && d.err != nil {
		return d.err
	}
	if len(g.members) > 0 {
		g.emptySince = time.Time{}
	} else if g.emptySince.IsZero() {
		g.emptySince = now
	}
	return nil
}

// UnloadShare drops the groups of a __consumer_offsets partition this
// broker no longer leads; gen is the partition's generation from now on.
func (m *Manager) UnloadShare(p int32, gen uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gens[p] = gen
	for id, g := range m.groups {
		if m.sink != nil && g.part == p {
			delete(m.groups, id)
			delete(m.busy, id)
		}
	}
}

// expireEmpty deletes the empty groups that were never assigned a
// partition and have been empty for the retention (offsets.retention.
// minutes), with tombstones so that a reload does not bring them back:
// groups now last until deleted, and without this a stranger could
// fill MaxGroups for good. mu must be held.
func (m *Manager) expireEmpty(now time.Time) {
	if m.cfg.EmptyRetention <= 0 {
		return
	}
	var old []*group
	for id, g := range m.groups {
		if len(g.members) == 0 && g.state.empty() && !m.busy[id] && !m.initing[id] && !g.deleting && !g.emptySince.IsZero() && now.Sub(g.emptySince) >= m.cfg.EmptyRetention {
			old = append(old, g)
		}
	}
	if len(old) == 0 {
		return
	}
	withParts := map[string]bool{}
	for k := range m.parts {
		withParts[k.Group] = true
	}
	for _, g := range old {
		if !withParts[g.id] {
			// Gone from memory once its tombstones commit (a failed
			// write leaves it to expire again), never waited for here.
			pw := m.tombstone(g, false)
			if pw == nil {
				delete(m.groups, g.id)
				continue
			}
			go func() { m.deleted(g, m.await(pw)) }()
		}
	}
}

// noteEmpty starts or stops the clock of an empty group's retention.
func (g *group) noteEmpty(now time.Time) {
	switch {
	case len(g.members) > 0:
		g.emptySince = time.Time{}
	case g.emptySince.IsZero():
		g.emptySince = now
	}
}

// Initialized notes share partitions an administrator gave state
// (AlterShareGroupOffsets), as Kafka records them in the group's
// type-15 record: the group is then kept until deleted.
func (m *Manager) Initialized(groupID string, keys []Key, names map[[16]byte]string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[groupID]
	if g == nil || len(keys) == 0 {
		return
	}
	for _, k := range keys {
		addParts(&g.state.initialized, k.Topic, names[k.Topic], k.Partition)
		removeParts(g.state.initializing, k.Topic, k.Partition)
	}
	m.save(g, false)
}

// StateDeleting records, before an administrator deletes the share state
// of topics (DeleteShareGroupOffsets, DeleteGroups), that it is being
// deleted, as Kafka's coordinator moves them to the type-15 record's
// deleting topics first: from then on no coordinator, this one or the
// next after a move, takes those partitions as initialized. It waits for
// the write.
//
// It answers NOT_COORDINATOR, and the caller deletes nothing, if the
// call's claim (AdminGroup) is lost: the group was unloaded meanwhile
// (a new coordinator has it from the log, its topics initialized, and
// would never initialize again the states deleted under it) or reloaded
// here, where a member may have joined and an initialization run would
// mark the topics initialized again.
func (m *Manager) StateDeleting(groupID string, topics map[[16]byte]string, gen uint64) *kerr.Error {
	var lost bool
	saved := func() *pendingWrite {
		m.mu.Lock()
		defer m.mu.Unlock()
		g := m.groups[groupID]
		if lost = !m.heldForAdmin(groupID, gen); lost || len(topics) == 0 {
			return nil
		}
		if g.state.deleting == nil {
			g.state.deleting = map[[16]byte]string{}
		}
		for id, name := range topics {
			if name == "" {
				name = g.state.initialized[id].name
			}
			if name == "" {
				name = g.state.initializing[id].name
			}
			g.state.deleting[id] = name
			delete(g.state.initialized, id)
			delete(g.state.initializing, id)
		}
		for k := range g.ready {
			if _, ok := topics[k.topic]; ok {
				delete(g.ready, k)
			}
		}
		g.checked = -1
		return m.save(g, true)
	}()
	if lost {
		return kerr.NotCoordinator
	}
	if err := m.await(saved); err != nil {
		return coordinatorErr(err)
	}
	return nil
}

// heldForAdmin is whether the administrator's call AdminGroup allowed
// at gen still holds the group here: loaded, busy (an unload or reload
// drops the claim) and no initialization running (one starts only on a
// group that is not busy, so after a reload), and its partition still
// at gen: after a reload another call may have claimed the group again.
// mu must be held.
func (m *Manager) heldForAdmin(groupID string, gen uint64) bool {
	g := m.groups[groupID]
	return g != nil && m.busy[groupID] && !m.initing[groupID] && (m.sink == nil || m.gens[g.part] == gen)
}

// StateDeleted ends StateDeleting for the topics whose state is gone.
// Those whose deletion failed stay deleting: they are initialized again
// (create-only) when next assigned. NOT_COORDINATOR if the call's claim
// was lost meanwhile (StateDeleting): the record here is no longer the
// group's, and its topics stay deleting in the log, so whichever
// coordinator has the group initializes them again.
func (m *Manager) StateDeleted(groupID string, topics [][16]byte, gen uint64) *kerr.Error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.heldForAdmin(groupID, gen) {
		return kerr.NotCoordinator
	}
	g := m.groups[groupID]
	for _, id := range topics {
		delete(g.state.deleting, id)
	}
	m.save(g, false)
	return nil
}

// StateTopics is the topics the group's type-15 record names: those
// with share state, or being initialized or deleted.
func (m *Manager) StateTopics(groupID string) map[[16]byte]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[groupID]
	if g == nil {
		return nil
	}
	out := map[[16]byte]string{}
	for id, t := range g.state.initializing {
		out[id] = t.name
	}
	for id, t := range g.state.initialized {
		out[id] = t.name
	}
	for id, name := range g.state.deleting {
		out[id] = name
	}
	return out
}
