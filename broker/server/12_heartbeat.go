package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleHeartbeat(c *conn, req *kmsg.HeartbeatRequest) (*kmsg.HeartbeatResponse, error) {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if s.isShareGroup(req.Group) {
		resp.ErrorCode = kerr.UnknownMemberID.Code
		return resp, nil
	}
	if code := s.groups.Heartbeat(req); code != nil {
		resp.ErrorCode = code.Code
	}
	return resp, nil
}
