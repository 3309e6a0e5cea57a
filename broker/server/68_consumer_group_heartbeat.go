package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/group"
)

// handleConsumerGroupHeartbeat serves the KIP-848 consumer group protocol
// (broker/group/consumer_group.go): joining, heartbeats that carry the
// member's owned partitions and return its assignment, and leaving.
func (s *Server) handleConsumerGroupHeartbeat(c *conn, req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	if s.isShareGroup(req.Group) {
		resp := req.ResponseKind().(*kmsg.ConsumerGroupHeartbeatResponse)
		resp.ErrorCode, resp.ErrorMessage = kerr.GroupIDNotFound.Code, notConsumerGroup(req.Group)
		return resp, nil
	}
	hr := group.ConsumerHeartbeatRequest{ConsumerGroupHeartbeatRequest: req, ClientID: c.clientID, ClientHost: clientHost(c)}
	if s.authorizer != nil {
		// A regex resolves only to topics the member may DESCRIBE, as
		// Kafka's GroupMetadataManager filters its regex results.
		hr.Describable = func(topic string) bool { return c.allowedTopic(opDescribe, topic) }
	}
	return s.groups.ConsumerHeartbeat(hr, s.stopping), nil
}
