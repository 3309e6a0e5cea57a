package server

import "github.com/twmb/franz-go/pkg/kmsg"

func (s *Server) handleHeartbeat(c *conn, req *kmsg.HeartbeatRequest) (*kmsg.HeartbeatResponse, error) {
	resp := req.ResponseKind().(*kmsg.HeartbeatResponse)
	if code := s.groups.Heartbeat(req); code != nil {
		resp.ErrorCode = code.Code
	}
	return resp, nil
}
