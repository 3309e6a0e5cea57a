package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/share"
)

// handleShareGroupHeartbeat serves KIP-932 share-group membership on the
// group's coordinator (the same node as for the group's offsets). It
// needs READ on the group and DESCRIBE on every subscribed topic, as
// Kafka's KafkaApis.handleShareGroupHeartbeat.
func (s *Server) handleShareGroupHeartbeat(c *conn, req *kmsg.ShareGroupHeartbeatRequest) (*kmsg.ShareGroupHeartbeatResponse, error) {
	fail := func(e *kerr.Error) (*kmsg.ShareGroupHeartbeatResponse, error) {
		r := req.ResponseKind().(*kmsg.ShareGroupHeartbeatResponse)
		r.ErrorCode = e.Code
		return r, nil
	}
	if !c.allowedGroup(opRead, req.GroupID) {
		return fail(kerr.GroupAuthorizationFailed)
	}
	for _, t := range req.SubscribedTopicNames {
		if !c.allowedTopic(opDescribe, t) {
			return fail(kerr.TopicAuthorizationFailed)
		}
	}
	if req.GroupID == "" {
		// As Kafka's throwIfShareGroupHeartbeatRequestIsInvalid (review L4).
		r, _ := fail(kerr.InvalidRequest)
		r.ErrorMessage = strPtr("GroupId can't be empty.")
		return r, nil
	}
	part, gen, code := s.groups.ShareStatus(req.GroupID)
	if code != nil {
		return fail(code)
	}
	other := req.MemberEpoch == 0 && !s.shares.Has(req.GroupID) && s.isOtherGroup(req.GroupID)
	// __share_group_state is created by the group's first initialization
	// (broker/share/init.go), in the background and only for a heartbeat
	// accepted here, before any partition is assigned.
	hr := share.HeartbeatRequest{ShareGroupHeartbeatRequest: req, ClientID: c.clientID, ClientHost: clientHost(c), Partition: part, Gen: gen}
	return s.shares.Heartbeat(hr, shareTopics(s.ctrl.Image()), other), nil
}
