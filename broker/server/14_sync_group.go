package server

import "github.com/twmb/franz-go/pkg/kmsg"

// handleSyncGroup waits, for a follower, until the leader's assignment is
// persisted.
func (s *Server) handleSyncGroup(c *conn, req *kmsg.SyncGroupRequest) (*kmsg.SyncGroupResponse, error) {
	defer s.metrics.wait(purgatoryRebalance)()
	return s.groups.Sync(req, s.stopping), nil
}
