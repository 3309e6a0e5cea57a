package server

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/record"
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
	return s.addRemoteAll(id, pid, epoch, []txn.TP{tp})[tp]
}

// addRemoteAll is addRemote for several partitions in one request: each
// partition's error, nil for those added.
func (s *Server) addRemoteAll(id string, pid int64, epoch int16, tps []txn.TP) map[txn.TP]*kerr.Error {
	out := make(map[txn.TP]*kerr.Error, len(tps))
	all := func(code *kerr.Error) map[txn.TP]*kerr.Error {
		for _, tp := range tps {
			out[tp] = code
		}
		return out
	}
	img := s.ctrl.Image()
	t, ok := img.Topics[txn.Topic]
	if !ok || len(t.Partitions) == 0 {
		return all(kerr.CoordinatorNotAvailable)
	}
	leader := t.Partitions[group.PartitionFor(id, int32(len(t.Partitions)))].Leader
	b, ok := img.Brokers[leader]
	if leader < 0 || leader == s.nodeID || !ok {
		return all(kerr.NotCoordinator)
	}
	addr, err := s.interBrokerAddr(b)
	if err != nil {
		return all(kerr.NotCoordinator)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.SetVersion(5)
	req.UnknownTags.Set(replica.SecretTag, []byte(img.Secret))
	rt := kmsg.NewAddPartitionsToTxnRequestTransaction()
	rt.TransactionalID, rt.ProducerID, rt.ProducerEpoch, rt.VerifyOnly = id, pid, epoch, false
	for _, g := range tpsByTopic(tps) {
		rtt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		rtt.Topic, rtt.Partitions = g.topic, g.partitions
		rt.Topics = append(rt.Topics, rtt)
	}
	req.Transactions = append(req.Transactions, rt)
	r, err := s.peerRoundTrip(ctx, addr, fmt.Sprintf("tributary-txn-add-%d", s.nodeID), req, 5*time.Second)
	if err != nil {
		return all(kerr.NotCoordinator)
	}
	resp := r.(*kmsg.AddPartitionsToTxnResponse)
	if resp.ErrorCode != 0 {
		if e, ok := kerr.ErrorForCode(resp.ErrorCode).(*kerr.Error); ok {
			return all(e)
		}
		return all(kerr.UnknownServerError)
	}
	answered := map[txn.TP]bool{}
	for _, tr := range resp.Transactions {
		for _, tt := range tr.Topics {
			for _, p := range tt.Partitions {
				tp := txn.TP{Topic: tt.Topic, Partition: p.Partition}
				answered[tp] = true
				if p.ErrorCode == 0 {
					out[tp] = nil
				} else if e, ok := kerr.ErrorForCode(p.ErrorCode).(*kerr.Error); ok {
					out[tp] = e
				} else {
					out[tp] = kerr.UnknownServerError
				}
			}
		}
	}
	for _, tp := range tps {
		if !answered[tp] {
			out[tp] = kerr.NotCoordinator
		}
	}
	return out
}

// produceAdd is a partition of a Produce v12 whose add was decided before
// the appends: its guard, or the error to answer.
type produceAdd struct {
	guard *replica.VerificationGuard
	code  *kerr.Error
}

// addProducePartitions adds, in one AddPartitions (one state write), or
// one AddPartitionsToTxn v5 when the coordinator is elsewhere, every
// partition of a transactional Produce v12 that its transaction has not
// opened here yet, as Kafka's AddPartitionsToTxnManager batches a
// request's partitions per coordinator; one at a time each would cost a
// replicated write in series. Each partition keeps its own verification
// guard. Partitions it leaves out (not led here, not one producer's
// transactional batches) take the per-partition path. targets are the
// request's partitions looked up (produceTargets).
func (s *Server) addProducePartitions(id string, req *kmsg.ProduceRequest, targets [][]produceTarget) map[txn.TP]produceAdd {
	out := map[txn.TP]produceAdd{}
	type want struct {
		tp    txn.TP
		part  *replica.Partition
		guard *replica.VerificationGuard
	}
	var wants []want
	pid, epoch, seen := int64(-1), int16(-1), false
	for i, rt := range req.Topics {
		for j, rp := range rt.Partitions {
			tg := targets[i][j]
			if tg.perr != nil || !tg.txn {
				continue
			}
			part := tg.part
			b, _, _ := record.Split(rp.Records)
			if seen && (b.ProducerID() != pid || b.ProducerEpoch() != epoch) {
				continue
			}
			pid, epoch, seen = b.ProducerID(), b.ProducerEpoch(), true
			tp := txn.TP{Topic: rt.Topic, Partition: rp.Partition}
			if _, dup := out[tp]; dup {
				continue
			}
			open, g := part.BeginTxnVerification(pid, epoch)
			if open {
				out[tp] = produceAdd{}
				continue
			}
			out[tp] = produceAdd{guard: g}
			wants = append(wants, want{tp, part, g})
		}
	}
	if len(wants) == 0 {
		return out
	}
	tps := make([]txn.TP, len(wants))
	for i, w := range wants {
		tps[i] = w.tp
	}
	code := s.txns.AddPartitions(id, pid, epoch, tps, true)
	var remote map[txn.TP]*kerr.Error
	if code == kerr.NotCoordinator {
		remote = s.addRemoteAll(id, pid, epoch, tps)
	}
	for _, w := range wants {
		c := code
		if remote != nil {
			c = remote[w.tp]
		}
		if c != nil {
			w.part.EndTxnVerification(pid, w.guard)
			out[w.tp] = produceAdd{code: produceAddError(c)}
		}
	}
	return out
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
			tps = appendTxnTPs(tps, unknown, img, rt.Topic, rt.Partitions)
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
