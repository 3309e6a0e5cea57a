package server

import (
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/group"
)

// handleJoinGroup waits, like Kafka, until the group's join phase completes
// (every known member rejoined, or the rebalance timeout passed); the
// connection is muted meanwhile, as Kafka mutes it.
func (s *Server) handleJoinGroup(c *conn, req *kmsg.JoinGroupRequest) (*kmsg.JoinGroupResponse, error) {
	if s.isShareGroup(req.Group) {
		return joinShareGroup(req), nil
	}
	defer s.metrics.wait(purgatoryRebalance)()
	return s.groups.Join(group.JoinRequest{JoinGroupRequest: req, ClientID: c.clientID, ClientHost: clientHost(c)}, s.stopping), nil
}

// clientHost is the member's host as Kafka shows it: "/" and the address.
func clientHost(c *conn) string {
	host, _, err := net.SplitHostPort(c.nc.RemoteAddr().String())
	if err != nil {
		host = c.nc.RemoteAddr().String()
	}
	return "/" + host
}
