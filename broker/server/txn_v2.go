package server

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/replica"
	"github.com/tributary-io/tributary/broker/txn"
)

// Transactions v2 (KIP-890 part 2) on the partition side: a Produce v12
// or TxnOffsetCommit v5 of a partition its transaction has not added yet
// has the leader add it, as Kafka's AddPartitionsToTxnManager does: itself
// when it coordinates the transaction, otherwise with AddPartitionsToTxn
// v5 (not verify-only) to the coordinator. v1 produces (v11 and below)
// still only verify. See docs/transactions.md.

// addOrVerifyTxn adds tp to the transaction (add) or checks it is in it,
// here or on the coordinator's broker.
func (s *Server) addOrVerifyTxn(id string, pid int64, epoch int16, tp txn.TP, add bool) *kerr.Error {
	if !add {
		code := s.txns.Verify(id, pid, epoch, tp)
		if code == kerr.NotCoordinator {
			code = s.verifyRemote(id, pid, epoch, tp)
		}
		return code
	}
	code := s.txns.AddPartitions(id, pid, epoch, []txn.TP{tp}, true)
	if code == kerr.NotCoordinator {
		code = s.addRemote(id, pid, epoch, tp)
	}
	return code
}

// produceAddError translates the coordinator's answer to an add for the
// producer, as Kafka's ReplicaManager and AddPartitionsToTxnManager do: a
// fenced producer's produce is INVALID_PRODUCER_EPOCH, and a coordinator
// that is busy, moving or loading is NOT_ENOUGH_REPLICAS, which every
// client retries without refreshing its metadata.
func produceAddError(code *kerr.Error) *kerr.Error {
	switch code {
	case kerr.ProducerFenced:
		return kerr.InvalidProducerEpoch
	case kerr.ConcurrentTransactions, kerr.CoordinatorLoadInProgress, kerr.CoordinatorNotAvailable, kerr.NotCoordinator:
		return kerr.NotEnoughReplicas
	}
	return code
}

// addRemote asks the transaction's coordinator on another broker to add tp
// (AddPartitionsToTxn v5, the inter-broker form). An unreachable
// coordinator is NOT_COORDINATOR.
func (s *Server) addRemote(id string, pid int64, epoch int16, tp txn.TP) *kerr.Error {
	img := s.ctrl.Image()
	t, ok := img.Topics[txn.Topic]
	if !ok || len(t.Partitions) == 0 {
		return kerr.CoordinatorNotAvailable
	}
	leader := t.Partitions[group.PartitionFor(id, int32(len(t.Partitions)))].Leader
	b, ok := img.Brokers[leader]
	if leader < 0 || leader == s.nodeID || !ok {
		return kerr.NotCoordinator
	}
	addr, err := s.interBrokerAddr(b)
	if err != nil {
		return kerr.NotCoordinator
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(5)
	req.UnknownTags.Set(replica.SecretTag, []byte(img.Secret))
	rt := kmsg.NewAddPartitionsToTxnRequestTransaction()
	rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, rt.VerifyOnly = id, pid, epoch, false
	rtt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
	rtt.Topic, rtt.Partitions = tp.Topic, []int32{tp.Partition}
	rt.Topics = append(rt.Topics, rtt)
	req.Transactions = append(req.Transactions, rt)
	r, err := s.peerRoundTrip(ctx, addr, fmt.Sprintf("tributary-txn-add-%d", s.nodeID), req, 5*time.Second)
	if err != nil {
		return kerr.NotCoordinator
	}
	resp := r.(*kmsg.AddPartitionsToTxnResponse)
	if resp.ErrorCode != 0 {
		return kerr.ErrorForCode(resp.ErrorCode).(*kerr.Error)
	}
	for _, tr := range resp.Transactions {
		for _, tt := range tr.Topics {
			for _, p := range tt.Partitions {
				if tt.Topic == tp.Topic && p.Partition == tp.Partition {
					if p.ErrorCode == 0 {
						return nil
					}
					if e, ok := kerr.ErrorForCode(p.ErrorCode).(*kerr.Error); ok {
						return e
					}
					return kerr.UnknownServerError
				}
			}
		}
	}
	return kerr.NotCoordinator
}

// handleAddPartitionsToTxnBrokers serves AddPartitionsToTxn v4+, which
// only brokers send (Kafka requires CLUSTER_ACTION): a batch of
// transactions, each verified (VerifyOnly, KIP-890 part 1) or added
// (transactions v2, a leader adding its partition for the client).
func (s *Server) handleAddPartitionsToTxnBrokers(c *conn, req *kmsg.AddPartitionsToTxnRequest) *kmsg.AddPartitionsToTxnResponse {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	if !s.fromBroker(req.UnknownTags) && !c.allowedCluster(opClusterAction) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp
	}
	img := s.ctrl.Image()
	for _, rtx := range req.Transactions {
		tr := kmsg.NewAddPartitionsToTxnResponseTransaction()
		tr.TransactionalID = rtx.TransactionalID
		var tps []txn.TP
		unknown := map[txn.TP]bool{}
		for _, rt := range rtx.Topics {
			t := img.Topics[rt.Topic]
			for _, p := range rt.Partitions {
				tp := txn.TP{Topic: rt.Topic, Partition: p}
				if t == nil || p < 0 || int(p) >= len(t.Partitions) {
					unknown[tp] = true
				}
				tps = append(tps, tp)
			}
		}
		codes := map[txn.TP]*kerr.Error{}
		switch {
		case len(unknown) > 0:
			for _, tp := range tps {
				codes[tp] = kerr.OperationNotAttempted
				if unknown[tp] {
					codes[tp] = kerr.UnknownTopicOrPartition
				}
			}
		case rtx.VerifyOnly:
			for _, tp := range tps {
				codes[tp] = s.txns.Verify(rtx.TransactionalID, rtx.ProducerID, rtx.ProducerEpoch, tp)
			}
		default:
			code := s.txns.AddPartitions(rtx.TransactionalID, rtx.ProducerID, rtx.ProducerEpoch, tps, true)
			for _, tp := range tps {
				codes[tp] = code
			}
		}
		for _, rt := range rtx.Topics {
			tt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
			tt.Topic = rt.Topic
			for _, p := range rt.Partitions {
				tp := kmsg.NewAddPartitionsToTxnResponseTransactionTopicPartition()
				tp.Partition = p
				if code := codes[txn.TP{Topic: rt.Topic, Partition: p}]; code != nil {
					tp.ErrorCode = code.Code
				}
				tt.Partitions = append(tt.Partitions, tp)
			}
			tr.Topics = append(tr.Topics, tt)
		}
		resp.Transactions = append(resp.Transactions, tr)
	}
	return resp
}
