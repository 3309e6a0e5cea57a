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

// authorizeConsumerGroups is Kafka's check for the consumer group APIs
// (KafkaApis of Kafka 4): READ on the group and DESCRIBE on every
// subscribed topic name to heartbeat (TOPIC_AUTHORIZATION_FAILED; a regex
// resolves only to describable topics, see the handler), DESCRIBE on the
// group to describe it, and a group that names a topic the caller may not
// DESCRIBE is described as TOPIC_AUTHORIZATION_FAILED without members.
func (c *conn) authorizeConsumerGroups(req kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	switch q := req.(type) {
	case *kmsg.ConsumerGroupHeartbeatRequest:
		r := q.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		if !c.allowedGroup(opRead, q.Group) {
			r.ErrorCode = kerr.GroupAuthorizationFailed.Code
			return r, nil
		}
		for _, t := range q.SubscribedTopicNames {
			if !c.allowedTopic(opDescribe, t) {
				r.ErrorCode = kerr.TopicAuthorizationFailed.Code
				return r, nil
			}
		}
	case *kmsg.ConsumerGroupDescribeRequest:
		var denied []string
		q.Groups, denied = keep(q.Groups, func(g string) bool { return c.allowedGroup(opDescribe, g) })
		if len(denied) == 0 && !q.IncludeAuthorizedOperations && c.s.authorizer == nil {
			return nil, nil
		}
		return nil, func(resp kmsg.Response) {
			r := resp.(*kmsg.ConsumerGroupDescribeResponse)
			for i := range r.Groups {
				if r.Groups[i].ErrorCode == 0 && !c.describableGroupTopics(&r.Groups[i]) {
					msg := "The described group uses topics that the client is not authorized to describe."
					r.Groups[i].ErrorCode, r.Groups[i].ErrorMessage, r.Groups[i].Members = kerr.TopicAuthorizationFailed.Code, &msg, nil
				}
			}
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

// describableGroupTopics is whether the caller may DESCRIBE every topic a
// described group names: subscriptions, assignments and targets.
func (c *conn) describableGroupTopics(g *kmsg.ConsumerGroupDescribeResponseGroup) bool {
	seen := map[string]bool{}
	ok := func(t string) bool {
		if t == "" || seen[t] {
			return true
		}
		seen[t] = true
		return c.allowedTopic(opDescribe, t)
	}
	for _, m := range g.Members {
		for _, t := range m.SubscribedTopics {
			if !ok(t) {
				return false
			}
		}
		for _, a := range []kmsg.Assignment{m.Assignment, m.TargetAssignment} {
			for _, tp := range a.TopicPartitions {
				if !ok(tp.Topic) {
					return false
				}
			}
		}
	}
	return true
}
