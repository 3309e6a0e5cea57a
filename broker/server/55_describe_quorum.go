package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// quorumTopic is the name Kafka gives the metadata log in DescribeQuorum.
const quorumTopic = "__cluster_metadata"

// handleDescribeQuorum answers from this node's view of the quorum (Kafka's
// kafka-metadata-quorum describe --status): leader, epoch, high watermark,
// voters and observers. Only this node's own log end is known; the others'
// are -1.
func (s *Server) handleDescribeQuorum(c *conn, req *kmsg.DescribeQuorumRequest) (*kmsg.DescribeQuorumResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeQuorumResponse)
	st, err := s.ctrl.QuorumState()
	for _, rt := range req.Topics {
		t := kmsg.NewDescribeQuorumResponseTopic()
		t.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			p := kmsg.NewDescribeQuorumResponseTopicPartition()
			p.Partition = rp.Partition
			switch {
			case rt.Topic != quorumTopic || rp.Partition != 0:
				p.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case err != nil:
				p.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				p.LeaderID, p.LeaderEpoch, p.HighWatermark = st.Leader, st.Epoch, st.HighWatermark
				p.CurrentVoters = s.replicaStates(st.Voters, st.LogEnd)
				p.Observers = s.replicaStates(st.Observers, st.LogEnd)
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp, nil
}

func (s *Server) replicaStates(ids []int32, ownLogEnd int64) []kmsg.DescribeQuorumResponseTopicPartitionReplicaState {
	out := make([]kmsg.DescribeQuorumResponseTopicPartitionReplicaState, 0, len(ids))
	for _, id := range ids {
		r := kmsg.NewDescribeQuorumResponseTopicPartitionReplicaState()
		r.ReplicaID, r.LogEndOffset, r.LastFetchTimestamp, r.LastCaughtUpTimestamp = id, -1, -1, -1
		if id == s.nodeID {
			r.LogEndOffset = ownLogEnd
		}
		out = append(out, r)
	}
	return out
}
