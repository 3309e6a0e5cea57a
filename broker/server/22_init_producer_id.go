package server

import (
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// handleInitProducerID gives idempotent producers their id. A producer that
// presents its current id and epoch (KIP-360, v3+) gets the epoch bumped
// instead of a new id, so it can reset its sequences without losing its
// identity; an epoch at its maximum gets a new id, as in Kafka.
func (s *Server) handleInitProducerID(c *conn, req *kmsg.InitProducerIDRequest) (*kmsg.InitProducerIDResponse, error) {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		// ACL: WRITE on TRANSACTIONAL_ID *req.TransactionalID.
		pid, epoch, code := s.txns.InitProducerID(*req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch)
		if code != nil {
			resp.ErrorCode = code.Code
			if code == kerr.ProducerFenced && req.Version < 4 {
				resp.ErrorCode = kerr.InvalidProducerEpoch.Code // PRODUCER_FENCED is v4+ (KIP-588)
			}
			return resp, nil
		}
		resp.ProducerID, resp.ProducerEpoch = pid, epoch
		return resp, nil
	}
	if req.ProducerID >= 0 && req.ProducerEpoch >= 0 && req.ProducerEpoch < math.MaxInt16-1 {
		resp.ProducerID, resp.ProducerEpoch = req.ProducerID, req.ProducerEpoch+1
		return resp, nil
	}
	id, err := s.pids.allocate()
	if err != nil {
		resp.ErrorCode = kafkaCode(err)
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}
