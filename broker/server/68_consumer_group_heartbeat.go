package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/group"
)

// handleConsumerGroupHeartbeat serves the KIP-848 consumer group protocol
// (broker/group/consumer_group.go): joining, heartbeats that carry the
// member's owned partitions and return its assignment, and leaving.
func (s *Server) handleConsumerGroupHeartbeat(c *conn, req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, error) {
	return s.groups.ConsumerHeartbeat(group.ConsumerHeartbeatRequest{ConsumerGroupHeartbeatRequest: req, ClientID: c.clientID, ClientHost: clientHost(c)}, s.stopping), nil
}
