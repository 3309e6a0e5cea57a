package server

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/replica"
)

// ListOffsets' special timestamps.
const (
	latestTimestamp        = -1
	earliestTimestamp      = -2
	maxTimestamp           = -3
	earliestLocalTimestamp = -4
	latestTieredTimestamp  = -5
	// KIP-1023 (v11): the first offset not yet in remote storage.
	earliestPendingUploadTimestamp = -6
)

func (s *Server) handleListOffsets(c *conn, req *kmsg.ListOffsetsRequest) (*kmsg.ListOffsetsResponse, error) {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewListOffsetsResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewListOffsetsResponseTopicPartition()
			sp.Partition, sp.Timestamp, sp.Offset, sp.LeaderEpoch = rp.Partition, -1, -1, -1
			part, perr := s.leaderPartition(rt.Topic, rp.Partition)
			ok := perr == nil
			if !ok {
				sp.ErrorCode = perr.Code
			} else if code := checkLeaderEpoch(part, rp.CurrentLeaderEpoch); code != nil {
				sp.ErrorCode = code.Code
			} else if !s.listOffsetTier(part, rp.Timestamp, listOffsetsWait(req), &sp) {
				sp.ErrorCode = listOffset(part, rp.Timestamp, &sp, req.IsolationLevel == 1)
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// listOffsetsWait is how long a ListOffsets waits for remote storage:
// v10's TimeoutMs (KIP-1075) when set, never more than the tier manager's
// own bound (0: that bound).
func listOffsetsWait(req *kmsg.ListOffsetsRequest) time.Duration {
	if req.Version >= 10 && req.TimeoutMillis > 0 {
		return time.Duration(req.TimeoutMillis) * time.Millisecond
	}
	return 0
}

func listOffset(p *replica.Partition, ts int64, sp *kmsg.ListOffsetsResponseTopicPartition, readCommitted bool) int16 {
	sp.LeaderEpoch = p.LeaderEpoch()
	switch ts {
	case latestTimestamp:
		// A read_committed consumer's end is the last stable offset.
		sp.Offset = p.HighWatermark()
		if readCommitted {
			sp.Offset = p.LastStableOffset()
		}
		return 0
	case earliestTimestamp, earliestLocalTimestamp:
		sp.Offset = p.Log.LogStartOffset()
		return 0
	case maxTimestamp:
		o, t, ok, err := p.Log.MaxTimestamp()
		if err != nil {
			return kafkaCode(err)
		}
		if ok && o < p.HighWatermark() {
			sp.Offset, sp.Timestamp = o, t
		}
		return 0
	}
	if ts < 0 {
		return kerr.InvalidRequest.Code
	}
	o, t, ok, err := p.Log.OffsetForTimestamp(ts)
	if err != nil {
		return kafkaCode(err)
	}
	if ok && o < p.HighWatermark() {
		sp.Offset, sp.Timestamp = o, t
	}
	return 0
}
