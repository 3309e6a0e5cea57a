package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CreatePartitions (KAFKA-347) grows a topic online to a new partition
// count, with the new partitions' replicas given or placed round robin. The
// partition manager opens the new logs as it applies the change, and
// Metadata lists them at once, so producers and consumers pick them up at
// their next metadata refresh. A topic listed twice is refused
// (INVALID_REQUEST); the controller checks the count and the assignment.
func (s *Server) handleCreatePartitions(c *conn, req *kmsg.CreatePartitionsRequest) (*kmsg.CreatePartitionsResponse, error) {
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreatePartitionsResponseTopic()
		st.Topic = rt.Topic
		if seen[rt.Topic] > 1 {
			st.ErrorCode, st.ErrorMessage = kerr.InvalidRequest.Code, errorMessage(errDuplicateTopic(rt.Topic))
			resp.Topics = append(resp.Topics, st)
			continue
		}
		var assignment [][]int32
		for _, a := range rt.Assignment {
			assignment = append(assignment, a.Replicas)
		}
		if err := s.ctrl.CreatePartitions(rt.Topic, rt.Count, assignment, req.ValidateOnly); err != nil {
			st.ErrorCode, st.ErrorMessage = kafkaCode(err), adminMessage(err)
		} else if !req.ValidateOnly {
			s.logger.Info("created partitions", "topic", rt.Topic, "partitions", rt.Count)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
