package server

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleConsumerGroupDescribe describes consumer-protocol groups: epochs,
// the assignor, and each member's current and target assignment. A
// classic or unknown group is GROUP_ID_NOT_FOUND, as in Kafka.
func (s *Server) handleConsumerGroupDescribe(c *conn, req *kmsg.ConsumerGroupDescribeRequest) (*kmsg.ConsumerGroupDescribeResponse, error) {
	resp := req.ResponseKind().(*kmsg.ConsumerGroupDescribeResponse)
	for _, g := range req.Groups {
		d := s.groups.ConsumerDescribe(g)
		d.AuthorizedOperations = math.MinInt32
		if req.IncludeAuthorizedOperations && d.ErrorCode == 0 {
			d.AuthorizedOperations = groupOperations
		}
		resp.Groups = append(resp.Groups, d)
	}
	return resp, nil
}

// authorizeConsumerGroups is Kafka's check for the consumer group APIs:
// READ on the group to heartbeat (and, as Kafka, DESCRIBE on the topics is
// not asked: the assignment names topics by id), DESCRIBE to describe.
func (c *conn) authorizeConsumerGroups(req kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	switch q := req.(type) {
	case *kmsg.ConsumerGroupHeartbeatRequest:
		if !c.allowedGroup(opRead, q.Group) {
			r := q.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
			r.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return r, nil
		}
	case *kmsg.ConsumerGroupDescribeRequest:
		var denied []string
		q.Groups, denied = keep(q.Groups, func(g string) bool { return c.allowedGroup(opDescribe, g) })
		if len(denied) == 0 && !q.IncludeAuthorizedOperations {
			return nil, nil
		}
		return nil, func(resp kmsg.Response) {
			r := resp.(*kmsg.ConsumerGroupDescribeResponse)
			if q.IncludeAuthorizedOperations {
				for i := range r.Groups {
					if r.Groups[i].ErrorCode == 0 {
						r.Groups[i].AuthorizedOperations = c.authorizedOps(kmsg.ACLResourceTypeGroup, r.Groups[i].Group)
					}
				}
			}
			for _, g := range denied {
				rg := kmsg.NewConsumerGroupDescribeResponseGroup()
				rg.Group, rg.ErrorCode, rg.AuthorizedOperations = g, kerr.GroupAuthorizationFailed.Code, math.MinInt32
				r.Groups = append(r.Groups, rg)
			}
		}
	}
	return nil, nil
}
