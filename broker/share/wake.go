package share

import "github.com/twmb/franz-go/pkg/kerr"

// waiter is one share partition's wake channel and how many fetches took
// it: the entry goes when the last one stops waiting, so share partitions
// fetched once (or group ids a stranger made up) leave nothing behind.
type waiter struct {
	ch chan struct{}
	n  int
}

// Unwatch says a fetch that took ch from Released(k) no longer waits on
// it. A channel already closed (and replaced) is left alone: its entry
// went when it was closed.
func (m *Manager) Unwatch(k Key, ch <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if w := m.waiters[k]; w != nil && w.ch == ch {
		if w.n--; w.n <= 0 {
			delete(m.waiters, k)
		}
	}
}

// Waiting is how many share partitions have fetches waiting on them.
func (m *Manager) Waiting() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.waiters)
}

// Member checks that member belongs to share group groupID on this
// broker, its coordinator: GROUP_ID_NOT_FOUND without the group,
// UNKNOWN_MEMBER_ID without the member. A ShareFetch or ShareAcknowledge
// from anyone else would create share-partition state nobody can see or
// delete (review M1).
func (m *Manager) Member(groupID, member string) *kerr.Error {
	m.mu.Lock()
	defer m.mu.Unlock()
	g := m.groups[groupID]
	if g == nil {
		return kerr.GroupIDNotFound
	}
	if g.members[member] == nil {
		return kerr.UnknownMemberID
	}
	return nil
}
