package share

// OwnsSession says whether owner (a connection) still holds member's
// share session: a session closed, replaced from another connection or
// dropped when its member left is no longer the connection's to track.
func (m *Manager) OwnsSession(groupID, member string, owner any) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[sessionKey{groupID, member}]
	return s != nil && s.owner == owner
}
