package server

import "github.com/twmb/franz-go/pkg/kmsg"

// handleLeaveGroup removes members: one (v0-v2) or a batch (v3+, KIP-345),
// each with its own error.
func (s *Server) handleLeaveGroup(c *conn, req *kmsg.LeaveGroupRequest) (*kmsg.LeaveGroupResponse, error) {
	if s.isShareGroup(req.Group) {
		return leaveShareGroup(req), nil
	}
	resp := req.ResponseKind().(*kmsg.LeaveGroupResponse)
	members := req.Members
	if req.Version < 3 {
		members = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	top, codes := s.groups.Leave(req.Group, members)
	if top != nil {
		resp.ErrorCode = top.Code
		return resp, nil
	}
	if req.Version < 3 {
		if codes[0] != nil {
			resp.ErrorCode = codes[0].Code
		}
		return resp, nil
	}
	for i, m := range members {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID, rm.InstanceID = m.MemberID, m.InstanceID
		if codes[i] != nil {
			rm.ErrorCode = codes[i].Code
		}
		resp.Members = append(resp.Members, rm)
	}
	return resp, nil
}
