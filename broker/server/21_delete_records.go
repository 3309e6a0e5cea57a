package server

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/config"
	"github.com/tributary-io/tributary/broker/replica"
)

// deleteToHighWatermark is DeleteRecords' offset meaning "everything
// committed".
const deleteToHighWatermark = -1

// DeleteRecords (KIP-107) moves a partition's log start offset forward:
// records below it are no longer readable, and segments wholly below it are
// deleted. Each partition answers with its low watermark, the log start
// offset after the move (on a single node, the smallest of the replicas').
//
// As Kafka: offset -1 is the high watermark; an offset beyond the high
// watermark, or negative, is OFFSET_OUT_OF_RANGE; an offset at or below the
// current start changes nothing and succeeds; a topic whose cleanup.policy
// lacks delete (compact only) is POLICY_VIOLATION.
func (s *Server) handleDeleteRecords(c *conn, req *kmsg.DeleteRecordsRequest) (*kmsg.DeleteRecordsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DeleteRecordsResponse)
	img := s.ctrl.Image()
	for _, rt := range req.Topics {
		st := kmsg.NewDeleteRecordsResponseTopic()
		st.Topic = rt.Topic
		t := img.Topics[rt.Topic]
		deletable := t != nil && slices.Contains(config.SplitList(s.cfg.Topic(t.Configs)["cleanup.policy"].Value), "delete")
		for _, rp := range rt.Partitions {
			sp := kmsg.NewDeleteRecordsResponseTopicPartition()
			sp.Partition, sp.LowWatermark = rp.Partition, -1
			part, perr := s.leaderPartition(rt.Topic, rp.Partition)
			ok := perr == nil
			switch {
			case t == nil || !ok:
				sp.ErrorCode = perr.Code
			case !deletable:
				sp.ErrorCode = kerr.PolicyViolation.Code
			default:
				sp.LowWatermark, sp.ErrorCode = deleteRecords(part, rp.Offset)
				if sp.ErrorCode == 0 && s.tier != nil {
					sp.LowWatermark, sp.ErrorCode = s.deleteRemoteRecords(part, rp.Offset)
				}
				if sp.ErrorCode == 0 {
					s.logger.Debug("deleted records", "partition", part.TP.String(), "log_start_offset", sp.LowWatermark)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// deleteRecords moves p's log start offset to offset and returns the new
// low watermark, or -1 and the error code.
func deleteRecords(p *replica.Partition, offset int64) (int64, int16) {
	hw := p.HighWatermark()
	if offset == deleteToHighWatermark {
		offset = hw
	}
	if offset < 0 || offset > hw {
		return -1, kerr.OffsetOutOfRange.Code
	}
	if err := p.Log.DeleteRecordsBefore(offset); err != nil {
		return -1, replica.KafkaError(err).Code
	}
	return p.Log.LogStartOffset(), 0
}
