package share

import (
	"maps"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Share-partition initialization, as Kafka 4.4's group coordinator does
// it (GroupMetadataManager's initializing topics, the persister's
// InitializeShareGroupState): a share partition has state in the store
// only once its group's coordinator put it there, when the group's
// assignment first included it. A partition leader refuses a share
// partition without state (Manager.load), so a ShareFetch under a made-up
// group id, at a leader that is not the group's coordinator and so cannot
// know the group, acquires nothing and leaves nothing behind.
//
// The coordinator holds back from the assignment the partitions not yet
// initialized (only those: what a member has keeps), initializes them in
// the background, one run per group at a time and with backoff on
// failure, and adds them to the assignment once their state is written;
// the heartbeat that asked is answered at once, and members see the new
// assignment at their next heartbeat, as in Kafka.

// StartUnset is the start offset an initialization leaves: the partition
// leader picks it from share.auto.offset.reset when it first uses the
// share partition, as Kafka's SharePartition does with the -1 its
// coordinator initializes.
const StartUnset int64 = -2

// ErrUninitialized answers a ShareFetch or ShareAcknowledge for a share
// partition the store has no state for: Kafka 4.4's share-partition
// leader answers UNKNOWN_SERVER_ERROR, without a message, for a share
// partition its persister never initialized.
var ErrUninitialized = kerr.UnknownServerError

// Initializer creates the state of keys (all of group) in the store if
// they have none, and leaves any state they have; it returns the keys
// that failed. It may wait for I/O.
type Initializer func(group string, keys []Key) map[Key]error

// SetInitializer makes this manager's coordinator initialize share
// partitions through init before assigning them. Without one (no store)
// every partition is assigned at once.
func (m *Manager) SetInitializer(init Initializer) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.init = init
}

// initBackoff bounds the wait between failed initializations of a group.
var initBackoff = [2]time.Duration{100 * time.Millisecond, 5 * time.Second}

// uninitialized is the group's subscribed partitions not yet initialized.
// mu must be held.
func (g *group) uninitialized() []tpKey {
	var out []tpKey
	for _, tm := range g.shape {
		for p := range tm.Partitions {
			if k := (tpKey{tm.ID, p}); !g.ready[k] {
				out = append(out, k)
			}
		}
	}
	return out
}

// pruneReady forgets partitions no longer subscribed (a topic left)
// unless the type-15 record has them initialized: a group that empties
// and is joined again, or whose members move between topics, gets what
// has state at once, as Kafka's assignor does from that record, and what
// the group remembers stays bounded by the partitions of existing topics
// it ever read (a deleted topic leaves both, ForgetTopics). Subscribed
// again, the others are initialized again: create-only, so their state
// is kept.
func (g *group) pruneReady() {
	n := 0
	for _, tm := range g.shape {
		n += int(tm.Partitions)
	}
	for _, t := range g.state.initialized {
		n += len(t.parts)
	}
	if len(g.ready) <= n {
		return
	}
	ids := make(map[[16]byte]int32, len(g.shape))
	for _, tm := range g.shape {
		ids[tm.ID] = tm.Partitions
	}
	for k := range g.ready {
		if p, ok := ids[k.topic]; (!ok || k.partition >= p) && !slices.Contains(g.state.initialized[k.topic].parts, k.partition) {
			delete(g.ready, k)
		}
	}
}

// maybeInitialize starts the group's initialization run if some of its
// subscribed partitions are not initialized, none runs, and no
// administrator's call is changing the group. mu must be held.
func (m *Manager) maybeInitialize(g *group) {
	// The subscribed partitions change only with the group epoch: a
	// heartbeat at an epoch already checked costs nothing, however many
	// partitions the group reads.
	if m.init == nil || m.initing[g.id] || m.busy[g.id] || g.checked == g.epoch {
		return
	}
	g.pruneReady()
	if len(g.uninitialized()) == 0 {
		g.checked = g.epoch
		return
	}
	m.initing[g.id] = true
	m.initWG.Add(1)
	go func() {
		defer m.initWG.Done()
		m.initialize(g.id)
	}()
}

// initialize runs one group's initializations until every subscribed
// partition is initialized, the group is gone, an administrator's call
// begins, or the manager stops.
func (m *Manager) initialize(id string) {
	backoff := initBackoff[0]
	for {
		m.mu.Lock()
		g := m.groups[id]
		var todo []tpKey
		if g != nil && !m.busy[id] && !m.stopped() {
			todo = g.uninitialized()
		}
		if len(todo) == 0 {
			delete(m.initing, id)
			m.mu.Unlock()
			return
		}
		init := m.init
		keys := make([]Key, len(todo))
		names := map[[16]byte]string{}
		for n, tm := range g.shape {
			names[tm.ID] = n
		}
		// Topics already deleting at the snapshot are a deletion left
		// unfinished, which this run ends; any other that enters
		// deleting meanwhile is an administrator's, whose state goes.
		wasDeleting := maps.Clone(g.state.deleting)
		for i, tp := range todo {
			keys[i] = Key{Group: id, Topic: tp.topic, Partition: tp.partition}
			if !slices.Contains(g.state.initialized[tp.topic].parts, tp.partition) {
				addParts(&g.state.initializing, tp.topic, names[tp.topic], tp.partition)
			}
		}
		// As Kafka's coordinator: the partitions are recorded
		// initializing (type 15) before their state is created, so that
		// a group whose state may exist is neither forgotten nor
		// expired, whatever happens to this coordinator meanwhile.
		saved := m.save(g, true)
		m.mu.Unlock()
		var failed map[Key]error
		if err := m.await(saved); err != nil {
			failed = map[Key]error{}
			for _, k := range keys {
				failed[k] = err
			}
		} else {
			failed = init(id, keys)
		}
		m.mu.Lock()
		// An administrator's call that began meanwhile (possible only
		// across an unload and reload, AdminGroup refusing while a run
		// is under way) or a topic it moved to deleting decides: marked
		// initialized here, the state it deletes would never be
		// initialized again.
		if g2 := m.groups[id]; g2 == g && len(failed) < len(keys) && !m.busy[id] {
			added := false
			for _, k := range keys {
				if _, now := g.state.deleting[k.Topic]; now {
					if _, before := wasDeleting[k.Topic]; !before {
						continue
					}
				}
				if _, bad := failed[k]; !bad {
					tp := tpKey{k.Topic, k.Partition}
					added = added || !g.ready[tp]
					g.ready[tp] = true
					addParts(&g.state.initialized, k.Topic, names[k.Topic], k.Partition)
					removeParts(g.state.initializing, k.Topic, k.Partition)
					// A deletion left unfinished (its coordinator gone)
					// is over: the partition has state again.
					delete(g.state.deleting, k.Topic)
				}
			}
			if added {
				// A new group epoch: members get the partitions at their
				// next heartbeat.
				g.epoch++
				g.assign()
			}
			// Initialized (and the new epoch and assignment) recorded;
			// not waited for: a failed write is written again with the
			// group's next change (persist.go).
			m.save(g, false)
		}
		m.mu.Unlock()
		if len(failed) == 0 {
			backoff = initBackoff[0]
			continue
		}
		for k, err := range failed {
			m.logger.Warn("share partition not initialized", "group", id, "partition", k.Partition, "err", err)
			break
		}
		select {
		case <-time.After(backoff):
		case <-m.stop:
		}
		backoff = min(2*backoff, initBackoff[1])
	}
}

func (m *Manager) stopped() bool {
	select {
	case <-m.stop:
		return true
	default:
		return false
	}
}

// InitRunning says whether a group's initialization run is under way
// (tests).
func (m *Manager) InitRunning(group string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.initing[group]
}
