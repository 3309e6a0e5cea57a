package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/share"
)

// handleShareAcknowledge applies a share consumer's acknowledgements
// without fetching (commitSync, close). It needs a share session (epoch 0
// is INVALID_SHARE_SESSION_EPOCH, as in Kafka); epoch -1 closes it after
// the acknowledgements and releases what the member still holds here.
func (s *Server) handleShareAcknowledge(c *conn, req *kmsg.ShareAcknowledgeRequest) (*kmsg.ShareAcknowledgeResponse, error) {
	resp := req.ResponseKind().(*kmsg.ShareAcknowledgeResponse)
	if req.Version >= 2 {
		resp.AcquisitionLockTimeoutMillis = s.lockMillis(req.GroupID)
	}
	fail := func(e *kerr.Error) (*kmsg.ShareAcknowledgeResponse, error) {
		resp.ErrorCode = e.Code
		return resp, nil
	}
	groupID, memberID, e := shareCaller(c, req.GroupID, req.MemberID)
	if e != nil {
		return fail(e)
	}
	if req.ShareSessionEpoch == 0 {
		return fail(kerr.InvalidShareSessionEpoch)
	}
	if _, code := s.shares.Session(c, groupID, memberID, req.ShareSessionEpoch, nil, nil, true); code != nil {
		return fail(code)
	}
	img := s.ctrl.Image()
	for _, t := range req.Topics {
		rt := kmsg.NewShareAcknowledgeResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewShareAcknowledgeResponseTopicPartition()
			rp.Partition = p.Partition
			rp.CurrentLeader.LeaderID, rp.CurrentLeader.LeaderEpoch = -1, -1
			batches := make([]share.AckBatch, len(p.AcknowledgementBatches))
			for i, b := range p.AcknowledgementBatches {
				batches[i] = share.AckBatch{First: b.FirstOffset, Last: b.LastOffset, Types: b.AcknowledgeTypes}
			}
			if e := validateShareAcks(batches, req.Version, req.Version >= 2 && req.IsRenewAck); e != nil {
				rp.ErrorCode = e.Code
			} else if e := s.shareAck(c, img, groupID, memberID, t.TopicID, p.Partition, batches); e != nil {
				rp.ErrorCode, rp.ErrorMessage = e.Code, shareAckMessage(e)
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	if req.ShareSessionEpoch == -1 {
		s.shares.CloseSession(groupID, memberID)
		c.closedShareSession(groupID, memberID)
	}
	return resp, nil
}

// shareAckMessage is the message Kafka 4.4 sends with an acknowledgement's
// error: only a share partition it does not hold (never initialized)
// carries one, UNKNOWN_TOPIC_OR_PARTITION's own.
func shareAckMessage(e *kerr.Error) *string {
	if e == kerr.UnknownTopicOrPartition {
		return &e.Description
	}
	return nil
}
