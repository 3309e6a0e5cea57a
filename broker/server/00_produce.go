package server

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/broker/replica"
	"github.com/tributary-io/tributary/broker/txn"
)

func (s *Server) handleProduce(c *conn, req *kmsg.ProduceRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	if req.Acks != 0 && req.Acks != 1 && req.Acks != -1 {
		fill(resp, req, kerr.InvalidRequiredAcks, fmt.Sprintf("acks=%d: must be -1, 0 or 1", req.Acks))
		return resp, nil
	}
	// ACL: WRITE on TRANSACTIONAL_ID *req.TransactionID when it is set.
	img := s.ctrl.Image()
	var pending []pendingAck
	// What the request's compressed batches may inflate to, in all.
	size := 0
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			size += len(rp.Records)
		}
	}
	budget := record.NewBudget(size)
	// A transactional produce looks each partition up, and walks its
	// batches, once: Produce v12's add (addProducePartitions) and the
	// appends below share the lookups.
	var targets [][]produceTarget
	var added map[txn.TP]produceAdd
	if req.TransactionID != nil {
		targets = s.produceTargets(req)
		if req.Version >= 12 {
			added = s.addProducePartitions(*req.TransactionID, req, targets)
		}
	}
	resp.Topics = make([]kmsg.ProduceResponseTopic, 0, len(req.Topics))
	for i, rt := range req.Topics {
		st := kmsg.NewProduceResponseTopic()
		st.Topic = rt.Topic
		st.Partitions = make([]kmsg.ProduceResponseTopicPartition, 0, len(rt.Partitions))
		t := img.Topics[rt.Topic]
		for j, rp := range rt.Partitions {
			sp := kmsg.NewProduceResponseTopicPartition()
			sp.Partition, sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = rp.Partition, -1, -1, -1
			var tg produceTarget
			if targets != nil {
				tg = targets[i][j]
			} else {
				tg.part, tg.perr = s.leaderPartition(rt.Topic, rp.Partition)
			}
			part, perr := tg.part, tg.perr
			var guard *replica.VerificationGuard
			switch {
			case t == nil || perr != nil:
				sp.ErrorCode = perr.Code
			case req.TransactionID == nil && anyTxn(rp.Records):
				// Kafka's handleProduceRequest: without an id no
				// coordinator would ever end the transaction the batch
				// opens, and the last stable offset would stay behind it.
				sp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
				sp.ErrorMessage = strPtr("a transactional batch needs the produce's transactional id")
			case req.TransactionID != nil && !tg.txn:
				sp.ErrorCode = kerr.InvalidRecord.Code
				sp.ErrorMessage = strPtr("a transactional produce must send transactional batches of one producer id and epoch")
			case req.TransactionID != nil && s.txnProduceCode(added, part, *req.TransactionID, rt.Topic, rp, req.Version >= 12, &sp.ErrorCode, &guard):
				sp.ErrorMessage = strPtr("the partition is not in the producer's ongoing transaction (AddPartitionsToTxn first)")
				if req.Version >= 12 {
					sp.ErrorMessage = strPtr("the partition could not be added to the producer's transaction: " + kerr.ErrorForCode(sp.ErrorCode).Error())
				}
			case req.Acks == -1 && int64(part.ISRSize()) < s.minISR(t.Configs):
				sp.ErrorCode = kerr.NotEnoughReplicas.Code
				sp.ErrorMessage = errorMessage(fmt.Errorf("the ISR has %d replicas, min.insync.replicas is %d", part.ISRSize(), s.minISR(t.Configs)))
			default:
				var res replica.AppendResult
				var err error
				if req.TransactionID != nil {
					res, err = part.AppendTxnAsLeader(rp.Records, budget, guard)
				} else {
					res, err = part.AppendAsLeaderWithin(rp.Records, budget)
				}
				if err != nil {
					sp.ErrorCode, sp.ErrorMessage = kafkaCode(err), errorMessage(err)
					sp.ErrorRecords = recordErrors(err)
					break
				}
				sp.BaseOffset, sp.LogAppendTime, sp.LogStartOffset = res.BaseOffset, res.LogAppendTime, res.LogStartOffset
				if !res.Duplicate {
					s.metrics.produced(rt.Topic, len(rp.Records), int(res.Records))
				}
				if req.Acks == -1 {
					// A retried duplicate waits too: its first attempt may
					// not be committed yet.
					pending = append(pending, pendingAck{part, res.LastOffset, int(s.minISR(t.Configs)), len(resp.Topics), len(st.Partitions)})
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	if len(pending) > 0 {
		waitStart := time.Now()
		s.awaitCommit(resp, pending, time.Duration(req.TimeoutMillis)*time.Millisecond)
		c.waited += time.Since(waitStart) // not work: request_percentage leaves it out
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

// recordErrors are the records a refused batch names (Produce v8+
// RecordErrors); older versions do not encode them.
func recordErrors(err error) []kmsg.ProduceResponseTopicPartitionErrorRecord {
	var re *record.Error
	if !errors.As(err, &re) || len(re.Records) == 0 {
		return nil
	}
	out := make([]kmsg.ProduceResponseTopicPartitionErrorRecord, len(re.Records))
	for i, r := range re.Records {
		out[i] = kmsg.NewProduceResponseTopicPartitionErrorRecord()
		out[i].RelativeOffset, out[i].ErrorMessage = r.Index, &r.Message
	}
	return out
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

// pendingAck is an acks=all append waiting for its high watermark, and
// where its answer is in the response.
type pendingAck struct {
	part       *replica.Partition
	lastOffset int64
	minISR     int
	topic, idx int
}

// awaitCommit waits until every pending append is committed (the ISR has
// it), the leadership moves, or the request's timeout passes, and sets
// each partition's answer. Kafka's delayed produce: with one replica the
// high watermark is already there and nothing waits.
func (s *Server) awaitCommit(resp *kmsg.ProduceResponse, pending []pendingAck, timeout time.Duration) {
	done := s.metrics.wait(purgatoryProduce)
	defer done()
	deadline := time.Now().Add(timeout)
	for _, p := range pending {
		if code := p.part.WaitCommitted(p.lastOffset, p.minISR, deadline, s.stopping); code != nil {
			sp := &resp.Topics[p.topic].Partitions[p.idx]
			sp.ErrorCode = code.Code
			if code == kerr.RequestTimedOut {
				sp.ErrorMessage = errorMessage(fmt.Errorf("the ISR did not replicate the records within the request timeout (%v)", timeout))
			}
		}
	}
}

// produceTarget is a partition of a transactional produce, looked up
// once for the whole request: its partition led here (or why not), and
// whether its records are one producer's transactional batches
// (txnBatch).
type produceTarget struct {
	part *replica.Partition
	perr *kerr.Error
	txn  bool
}

// produceTargets looks up every partition of req, by topic and partition
// index as in the request.
func (s *Server) produceTargets(req *kmsg.ProduceRequest) [][]produceTarget {
	out := make([][]produceTarget, len(req.Topics))
	for i, rt := range req.Topics {
		out[i] = make([]produceTarget, len(rt.Partitions))
		for j, rp := range rt.Partitions {
			tg := &out[i][j]
			tg.part, tg.perr = s.leaderPartition(rt.Topic, rp.Partition)
			tg.txn = txnBatch(rp.Records)
		}
	}
	return out
}

// txnBatch says whether records open with a transactional batch of a
// producer, as a transactional produce must send.
func txnBatch(records []byte) bool {
	first, rest, ok := record.Split(records)
	if !ok || !first.Transactional() || first.ProducerID() < 0 {
		return false
	}
	// Every batch, not only the first, which alone is verified with the
	// coordinator.
	for b, r, ok := record.Split(rest); ok; b, r, ok = record.Split(r) {
		if !b.Transactional() || b.ProducerID() != first.ProducerID() || b.ProducerEpoch() != first.ProducerEpoch() {
			return false
		}
	}
	return true
}

// anyTxn reports whether any batch of a partition's records is
// transactional.
func anyTxn(records []byte) bool {
	for b, r, ok := record.Split(records); ok; b, r, ok = record.Split(r) {
		if b.Transactional() {
			return true
		}
	}
	return false
}

// txnProduceCode is verifyTxnProduceCode, or the answer of the partition's
// add made for the whole request (addProducePartitions).
func (s *Server) txnProduceCode(added map[txn.TP]produceAdd, part *replica.Partition, id, topic string, rp kmsg.ProduceRequestTopicPartition, add bool, code *int16, guard **replica.VerificationGuard) bool {
	if a, ok := added[txn.TP{Topic: topic, Partition: rp.Partition}]; ok {
		if a.code != nil {
			*code = a.code.Code
			return true
		}
		*guard = a.guard
		return false
	}
	return s.verifyTxnProduceCode(part, id, topic, rp, add, code, guard)
}

// verifyTxnProduceCode is verifyTxnProduce for a partition of a produce.
// It reports a refusal, whose code it sets.
// add (Produce v12, transactions v2) adds the partition to the
// transaction rather than checking it was added.
func (s *Server) verifyTxnProduceCode(part *replica.Partition, id, topic string, rp kmsg.ProduceRequestTopicPartition, add bool, code *int16, guard **replica.VerificationGuard) bool {
	b, _, _ := record.Split(rp.Records)
	g, err := s.verifyTxnProduce(part, id, b.ProducerID(), b.ProducerEpoch(), topic, rp.Partition, add)
	if err != nil {
		*code = err.Code
		return true
	}
	*guard = g
	return false
}
