package server

import "github.com/twmb/franz-go/pkg/kmsg"

// handleDeleteGroups deletes empty groups and their offsets: GROUP_ID_NOT_FOUND
// for unknown groups, NON_EMPTY_GROUP for groups with members.
func (s *Server) handleDeleteGroups(c *conn, req *kmsg.DeleteGroupsRequest) (*kmsg.DeleteGroupsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DeleteGroupsResponse)
	for _, g := range req.Groups {
		rg := kmsg.NewDeleteGroupsResponseGroup()
		rg.Group = g
		if s.shares.Has(g) {
			// A share group (broker/share): empty, with its share state.
			// The group stays empty from the check to the delete: no
			// member joins while its state is deleted.
			if part, gen, code := s.groups.ShareStatus(g); code != nil {
				rg.ErrorCode = code.Code
			} else if code := s.shares.AdminGroup(g, false, part, gen); code != nil {
				rg.ErrorCode = code.Code
			} else {
				// As Kafka's coordinator: the group's topics are recorded
				// deleting before their state goes, so a coordinator that
				// loads the group meanwhile does not take them as
				// initialized.
				if code := s.shares.StateDeleting(g, s.shares.StateTopics(g), gen); code != nil {
					rg.ErrorCode = code.Code
				} else if code := s.deleteShareGroupState(g); code != nil {
					rg.ErrorCode = code.Code
				} else if code := s.shares.DeleteGroup(g); code != nil {
					rg.ErrorCode = code.Code
				}
				s.shares.AdminDone(g)
			}
		} else if code := s.groups.DeleteGroup(g); code != nil {
			rg.ErrorCode = code.Code
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp, nil
}
