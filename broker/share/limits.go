package share

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// MaxGroups bounds the share groups one broker holds (Kafka 4.4 has no
// such limit; a share group with state is kept until deleted, so without
// one any client allowed to read a group pattern could create them
// without end: review M3). A new group past it is GROUP_MAX_SIZE_REACHED.
const MaxGroups = 10000

// groupLimit is MaxGroups, or the lower bound a test sets.
func (m *Manager) groupLimit() int {
	if m.maxGroups > 0 {
		return m.maxGroups
	}
	return MaxGroups
}

// tooManyGroups says whether a new group would pass the bound, with the
// message to answer. mu must be held.
func (m *Manager) tooManyGroups() (string, bool) {
	if len(m.groups) < m.groupLimit() {
		return "", false
	}
	return fmt.Sprintf("This broker holds the most share groups it keeps (%d): delete unused ones.", m.groupLimit()), true
}

// ForgetTopics drops the share partitions of deleted topics, as Kafka
// deletes a topic's share state with the topic.
func (m *Manager) ForgetTopics(ids map[[16]byte]bool) {
	if len(ids) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.parts {
		if ids[k.Topic] {
			m.drop(k)
		}
	}
	for _, s := range m.sessions {
		for tp := range s.parts {
			if ids[tp.Topic] {
				delete(s.parts, tp)
			}
		}
	}
	// The groups' type-15 records forget the topic too (its state is
	// gone with it), as Kafka's coordinator does when topics are deleted.
	for _, g := range m.groups {
		changed := false
		for id := range ids {
			_, a := g.state.initializing[id]
			_, b := g.state.initialized[id]
			_, c := g.state.deleting[id]
			if a || b || c {
				delete(g.state.initializing, id)
				delete(g.state.initialized, id)
				delete(g.state.deleting, id)
				changed = true
			}
		}
		for k := range g.ready {
			if ids[k.topic] {
				delete(g.ready, k)
			}
		}
		if changed {
			m.save(g, false)
		}
	}
}

// errGroupCount is the answer to a new group past MaxGroups.
var errGroupCount = kerr.GroupMaxSizeReached
