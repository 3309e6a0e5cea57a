package server

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleOffsetForLeaderEpoch tells a consumer or follower where the given
// leader epoch ended in our log, so it can detect and truncate a divergent
// tail (KIP-101, KIP-320).
func (s *Server) handleOffsetForLeaderEpoch(c *conn, req *kmsg.OffsetForLeaderEpochRequest) (*kmsg.OffsetForLeaderEpochResponse, error) {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewOffsetForLeaderEpochResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			sp.Partition, sp.LeaderEpoch, sp.EndOffset = rp.Partition, -1, -1
			part, perr := s.leaderPartition(rt.Topic, rp.Partition)
			ok := perr == nil
			switch {
			case !ok:
				sp.ErrorCode = perr.Code
			default:
				if code := checkLeaderEpoch(part, rp.CurrentLeaderEpoch); code != nil {
					sp.ErrorCode = code.Code
					break
				}
				if e, found := part.Log.EndOffsetForEpoch(rp.LeaderEpoch); found {
					sp.LeaderEpoch, sp.EndOffset = e.Epoch, e.StartOffset
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
