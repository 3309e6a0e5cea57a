package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/kwire"
)

// handleElectLeaders moves leadership to the preferred replicas (KAFKA-930)
// or, with the unclean type, elects leaders for offline partitions from any
// live replica. Clients send it to the active controller.
func (s *Server) handleElectLeaders(c *conn, req *kmsg.ElectLeadersRequest) (*kmsg.ElectLeadersResponse, error) {
	resp := req.ResponseKind().(*kmsg.ElectLeadersResponse)
	var partitions map[string][]int32
	if req.Topics != nil {
		partitions = map[string][]int32{}
		for _, t := range req.Topics {
			partitions[t.Topic] = append(partitions[t.Topic], t.Partitions...)
		}
	}
	results, err := s.ctrl.ElectLeaders(req.ElectionType == 1, partitions)
	if err != nil {
		resp.ErrorCode = kafkaCode(err)
		return resp, nil
	}
	topics := kwire.NewTopics(&resp.Topics, func(name string) kmsg.ElectLeadersResponseTopic {
		rt := kmsg.NewElectLeadersResponseTopic()
		rt.Topic = name
		return rt
	})
	for _, r := range results {
		// Asked for every partition, Kafka's controller leaves out those
		// whose preferred leader already leads (ReplicationControlManager),
		// and kafka-leader-election --all-topic-partitions prints nothing
		// for them.
		if req.Topics == nil && r.Err != nil && r.Err.Code == kerr.ElectionNotNeeded {
			continue
		}
		rt := topics.Slot(r.Topic)
		rp := kmsg.NewElectLeadersResponseTopicPartition()
		rp.Partition = r.Partition
		if r.Err != nil {
			rp.ErrorCode, rp.ErrorMessage = r.Err.Code.Code, errorMessage(r.Err)
		} else {
			s.logger.Info("elected leader", "topic", r.Topic, "partition", r.Partition, "unclean", req.ElectionType == 1)
		}
		rt.Partitions = append(rt.Partitions, rp)
	}
	return resp, nil
}
