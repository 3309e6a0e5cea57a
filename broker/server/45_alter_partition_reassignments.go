package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/kwire"
)

// handleAlterPartitionReassignments starts (or, with null replicas,
// cancels) moving partitions to other brokers (KAFKA-1074). The move runs
// in the background; ListPartitionReassignments shows it until it is done.
func (s *Server) handleAlterPartitionReassignments(c *conn, req *kmsg.AlterPartitionAssignmentsRequest) (*kmsg.AlterPartitionAssignmentsResponse, error) {
	resp := req.ResponseKind().(*kmsg.AlterPartitionAssignmentsResponse)
	if !s.ctrl.IsActive() {
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	for _, rt := range req.Topics {
		st := kmsg.NewAlterPartitionAssignmentsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewAlterPartitionAssignmentsResponseTopicPartition()
			sp.Partition = rp.Partition
			if err := s.ctrl.Reassign(rt.Topic, rp.Partition, rp.Replicas); err != nil {
				sp.ErrorCode, sp.ErrorMessage = kafkaCode(err), errorMessage(err)
			} else {
				s.logger.Info("reassigning partition", "topic", rt.Topic, "partition", rp.Partition, "replicas", rp.Replicas)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// handleListPartitionReassignments lists the reassignments in progress.
func (s *Server) handleListPartitionReassignments(c *conn, req *kmsg.ListPartitionReassignmentsRequest) (*kmsg.ListPartitionReassignmentsResponse, error) {
	resp := req.ResponseKind().(*kmsg.ListPartitionReassignmentsResponse)
	if !s.ctrl.IsActive() {
		resp.ErrorCode = kerr.NotController.Code
		return resp, nil
	}
	var partitions map[string][]int32
	if req.Topics != nil {
		partitions = map[string][]int32{}
		for _, t := range req.Topics {
			partitions[t.Topic] = append(partitions[t.Topic], t.Partitions...)
		}
	}
	topics := kwire.NewTopics(&resp.Topics, func(name string) kmsg.ListPartitionReassignmentsResponseTopic {
		rt := kmsg.NewListPartitionReassignmentsResponseTopic()
		rt.Topic = name
		return rt
	})
	for _, r := range s.ctrl.Image().Reassignments(partitions) {
		rt := topics.Slot(r.Topic)
		rp := kmsg.NewListPartitionReassignmentsResponseTopicPartition()
		rp.Partition, rp.Replicas, rp.AddingReplicas, rp.RemovingReplicas = r.Partition, r.Replicas, r.Adding, r.Removing
		rt.Partitions = append(rt.Partitions, rp)
	}
	return resp, nil
}
