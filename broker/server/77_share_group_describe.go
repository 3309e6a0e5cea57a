package server

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleShareGroupDescribe describes share groups: DESCRIBE on the group,
// and on the topics its members subscribe to, as for consumer groups.
func (s *Server) handleShareGroupDescribe(c *conn, req *kmsg.ShareGroupDescribeRequest) (*kmsg.ShareGroupDescribeResponse, error) {
	resp := req.ResponseKind().(*kmsg.ShareGroupDescribeResponse)
	names := topicNames(s.ctrl.Image())
	for _, id := range req.GroupIDs {
		if !c.allowedGroup(opDescribe, id) {
			d := kmsg.NewShareGroupDescribeResponseGroup()
			d.GroupID, d.ErrorCode, d.AuthorizedOperations = id, kerr.GroupAuthorizationFailed.Code, math.MinInt32
			resp.Groups = append(resp.Groups, d)
			continue
		}
		if code := s.groups.Status(id); code != nil {
			d := kmsg.NewShareGroupDescribeResponseGroup()
			d.GroupID, d.ErrorCode = id, code.Code
			resp.Groups = append(resp.Groups, d)
			continue
		}
		d := s.shares.Describe(id, names)
		if d.ErrorCode == 0 {
			for _, m := range d.Members {
				for _, t := range m.SubscribedTopicNames {
					if !c.allowedTopic(opDescribe, t) {
						msg := "The described group uses topics that the client is not authorized to describe."
						d.ErrorCode, d.ErrorMessage, d.Members = kerr.TopicAuthorizationFailed.Code, &msg, nil
						break
					}
				}
			}
		}
		if d.ErrorCode == 0 && req.IncludeAuthorizedOperations {
			d.AuthorizedOperations = c.authorizedOps(kmsg.ACLResourceTypeGroup, id)
		}
		resp.Groups = append(resp.Groups, d)
	}
	return resp, nil
}
