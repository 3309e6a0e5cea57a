package server

import (
	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/txn"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Coordinator types of FindCoordinator.
const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
)

// handleFindCoordinator names the leader of the group's __consumer_offsets
// partition as its coordinator (on a single node, this node), which the
// first group lookup creates; while a partition loads, its groups are
// COORDINATOR_LOAD_IN_PROGRESS. A transactional id's coordinator is the
// leader of its __transaction_state partition, the same way. Clients also read the API's presence as a
// feature: librdkafka only compresses with lz4 when the broker lists it.
func (s *Server) handleFindCoordinator(c *conn, req *kmsg.FindCoordinatorRequest) (*kmsg.FindCoordinatorResponse, error) {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	keys := req.CoordinatorKeys
	if req.Version < 4 {
		keys = []string{req.CoordinatorKey}
	}
	var self *kmsg.MetadataResponseBroker
	for _, b := range s.metadataBrokers(s.ctrl.Image(), c.listener) {
		if b.NodeID == s.nodeID {
			b := b
			self = &b
		}
	}
	// The first lookup of a group creates __consumer_offsets, as Kafka's.
	var groupErr error
	if req.CoordinatorType == coordinatorGroup && self != nil {
		if err := s.groups.EnsureTopic(); err != nil {
			groupErr = err
		}
	}
	if req.CoordinatorType == coordinatorTransaction && self != nil {
		// ACL: DESCRIBE on TRANSACTIONAL_ID for each key.
		if err := s.txns.EnsureTopic(); err != nil {
			groupErr = err
		}
	}
	img := s.ctrl.Image()
	brokers := map[int32]kmsg.MetadataResponseBroker{}
	for _, b := range s.metadataBrokers(img, c.listener) {
		brokers[b.NodeID] = b
	}
	for _, key := range keys {
		co := kmsg.NewFindCoordinatorResponseCoordinator()
		co.Key, co.NodeID, co.Port = key, -1, -1
		// In a cluster, a group's coordinator is the leader of its
		// __consumer_offsets partition, wherever that is.
		// A transactional id's, of its __transaction_state partition.
		leader := s.nodeID
		internal := group.OffsetsTopic
		if req.CoordinatorType == coordinatorTransaction {
			internal = txn.Topic
		}
		if ot, ok := img.Topics[internal]; ok && len(ot.Partitions) > 0 {
			leader = ot.Partitions[group.PartitionFor(key, int32(len(ot.Partitions)))].Leader
		}
		switch {
		case req.CoordinatorType != coordinatorGroup && req.CoordinatorType != coordinatorTransaction:
			co.ErrorCode = kerr.InvalidRequest.Code
		case groupErr == nil && leader != s.nodeID:
			if b, ok := brokers[leader]; ok {
				co.NodeID, co.Host, co.Port = b.NodeID, b.Host, b.Port
			} else {
				co.ErrorCode = kerr.CoordinatorNotAvailable.Code
			}
		case req.CoordinatorType == coordinatorTransaction && self != nil && groupErr == nil && s.txns.Status(key) == kerr.CoordinatorLoadInProgress:
			co.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		case self == nil:
			co.ErrorCode = kerr.CoordinatorNotAvailable.Code
		case groupErr != nil:
			co.ErrorCode, co.ErrorMessage = kerr.CoordinatorNotAvailable.Code, errorMessage(groupErr)
		case req.CoordinatorType == coordinatorGroup && s.groups.Status(key) == kerr.CoordinatorLoadInProgress:
			co.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		default:
			co.NodeID, co.Host, co.Port = self.NodeID, self.Host, self.Port
		}
		resp.Coordinators = append(resp.Coordinators, co)
	}
	if req.Version < 4 {
		co := resp.Coordinators[0]
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = co.ErrorCode, co.ErrorMessage, co.NodeID, co.Host, co.Port
		resp.Coordinators = nil
	}
	return resp, nil
}
