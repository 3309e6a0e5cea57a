package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleSyncGroup waits, for a follower, until the leader's assignment is
// persisted.
func (s *Server) handleSyncGroup(c *conn, req *kmsg.SyncGroupRequest) (*kmsg.SyncGroupResponse, error) {
	if s.isShareGroup(req.Group) {
		resp := req.ResponseKind().(*kmsg.SyncGroupResponse)
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil
	}
	defer s.metrics.wait(purgatoryRebalance)()
	return s.groups.Sync(req, s.stopping), nil
}
