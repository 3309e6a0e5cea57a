package server

import (
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/replica"
)

// leaderPartition is the partition if this node leads it. Otherwise the
// error tells the client what to do: UNKNOWN_TOPIC_OR_PARTITION when it does
// not exist, NOT_LEADER_OR_FOLLOWER when another broker (or, while it is
// offline, none) leads it, so that the client refreshes its metadata.
func (s *Server) leaderPartition(topic string, partition int32) (*replica.Partition, *kerr.Error) {
	t, ok := s.ctrl.Image().Topics[topic]
	if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
		return nil, kerr.UnknownTopicOrPartition
	}
	if t.Partitions[partition].Leader != s.nodeID {
		return nil, kerr.NotLeaderForPartition
	}
	part, ok := s.parts.Get(topic, partition)
	if !ok {
		return nil, s.notHostedError(topic, partition)
	}
	return part, nil
}

// hostedPartition is the partition if this node is one of its replicas,
// leader or follower.
func (s *Server) hostedPartition(topic string, partition int32) (*replica.Partition, *kerr.Error) {
	t, ok := s.ctrl.Image().Topics[topic]
	if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
		return nil, kerr.UnknownTopicOrPartition
	}
	part, ok := s.parts.Get(topic, partition)
	if !ok {
		return nil, s.notHostedError(topic, partition)
	}
	return part, nil
}
