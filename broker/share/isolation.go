package share

// share.isolation.level: a read_committed share group acquires records
// only below the partition's last stable offset, and the records of
// aborted transactions it meets there are archived at once instead of
// being delivered (Kafka's SharePartition.filterAbortedTransactional-
// AcquiredRecords). The share consumer cannot drop them itself: a
// ShareFetch response carries no aborted-transaction list. The broker's
// ShareFetch handler finds the aborted batches (it reads the log and its
// transaction index) and calls Archive.

// ReadCommitted reports whether the group reads read_committed: its
// share.isolation.level, a group config of the metadata log
// (SetGroupSettings, whose change wakes the group's waiting fetches).
func (m *Manager) ReadCommitted(groupID string) bool {
	return m.cfgFor(groupID).IsolationLevel == "read_committed"
}

// Archive archives the offsets of ranges that member holds: records of
// aborted transactions it was just given under read_committed. They are
// never delivered and count as finished for the start offset.
func (m *Manager) Archive(k Key, member string, ranges []Range) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.parts[k]
	if p == nil {
		return
	}
	if p.Archive(member, ranges) {
		m.persist(k, p)
	}
}

// Archive archives the offsets of ranges held by member; it reports
// whether any was.
func (p *Partition) Archive(member string, ranges []Range) (changed bool) {
	for _, rg := range ranges {
		for off := max(rg.First, p.spso); off <= rg.Last && off < p.end; off++ {
			r := &p.recs[off-p.spso]
			if r.state == Acquired && r.owner == member && r.tx == nil {
				r.state, r.owner, r.deadline = Archived, "", 0
				changed = true
			}
		}
	}
	if changed {
		p.dirty = true
		p.slide()
	}
	return changed
}
