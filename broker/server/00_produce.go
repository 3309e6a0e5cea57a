package server

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func (s *Server) handleProduce(c *conn, req *kmsg.ProduceRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	if req.Acks != 0 && req.Acks != 1 && req.Acks != -1 {
		fill(resp, req, kerr.InvalidRequiredAcks, fmt.Sprintf("acks=%d: must be -1, 0 or 1", req.Acks))
		return resp, nil
	}
	if req.TransactionID != nil {
		fill(resp, req, kerr.TransactionalIDAuthorizationFailed, "transactions are not supported yet")
		return resp, nil
	}
	img := s.ctrl.Image()
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		t := img.Topics[rt.Topic]
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition, sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = rp.Partition, -1, -1, -1
			part, perr := s.leaderPartition(rt.Topic, rp.Partition)
			ok := perr == nil
			switch {
			case t == nil || !ok:
				sp.ErrorCode = perr.Code
			case req.Acks == -1 && int64(len(t.Partitions[rp.Partition].ISR)) < s.minISR(t.Configs):
				sp.ErrorCode = kerr.NotEnoughReplicas.Code
				sp.ErrorMessage = errorMessage(fmt.Errorf("the ISR has %d replicas, min.insync.replicas is %d", len(t.Partitions[rp.Partition].ISR), s.minISR(t.Configs)))
			default:
				res, err := part.AppendAsLeader(rp.Records)
				if err != nil {
					sp.ErrorCode, sp.ErrorMessage = kafkaCode(err), errorMessage(err)
					break
				}
				sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = res.BaseOffset, res.LogAppendTime, res.LogStartOffset
				if !res.Duplicate {
					s.metrics.produced(rt.Topic, len(rp.Records), int(res.Records))
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if req.Acks == 0 {
		return nil, nil
	}
	return resp, nil
}

// minISR is the topic's min.insync.replicas: its override, else the
// broker's property of the same name (the whole synonym chain). It is on
// the acks=all path of every partition, so it resolves this one key only.
func (s *Server) minISR(overrides map[string]string) int64 {
	if v, ok := overrides["min.insync.replicas"]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n
		}
	}
	return s.cfg.Int("min.insync.replicas")
}

// fill answers every partition of req with one error.
func fill(resp *kmsg.ProduceResponse, req *kmsg.ProduceRequest, code *kerr.Error, msg string) {
	for _, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition, sp.ErrorCode, sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = rp.Partition, code.Code, -1, -1, -1
			sp.ErrorMessage = &msg
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
}
