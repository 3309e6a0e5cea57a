package server

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/replica"
	"github.com/tributary-io/tributary/broker/txn"
)

// Transactions (KIP-98, KIP-447): the coordinator's APIs, served by
// broker/txn, and the partition leaders' WriteTxnMarkers. See
// docs/transactions.md.

func (s *Server) handleAddPartitionsToTxn(c *conn, req *kmsg.AddPartitionsToTxnRequest) (*kmsg.AddPartitionsToTxnResponse, error) {
	if req.Version >= 4 {
		return s.handleAddPartitionsToTxnBrokers(c, req), nil
	}
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	// ACL: WRITE on TRANSACTIONAL_ID req.TransactionalID, WRITE on each topic.
	img := s.ctrl.Image()
	var tps []txn.TP
	unknown := map[txn.TP]bool{}
	for _, rt := range req.Topics {
		tps = appendTxnTPs(tps, unknown, img, rt.Topic, rt.Partitions)
	}
	var code *kerr.Error
	if len(unknown) == 0 {
		code = s.txns.AddPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, tps, false)
	}
	for _, rt := range req.Topics {
		st := kmsg.NewAddPartitionsToTxnResponseTopic()
		st.Topic = rt.Topic
		for _, p := range rt.Partitions {
			sp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
			sp.Partition = p
			switch {
			case unknown[txn.TP{Topic: rt.Topic, Partition: p}]:
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case len(unknown) > 0:
				sp.ErrorCode = kerr.OperationNotAttempted.Code
			case code != nil:
				sp.ErrorCode = code.Code
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

func (s *Server) handleAddOffsetsToTxn(c *conn, req *kmsg.AddOffsetsToTxnRequest) (*kmsg.AddOffsetsToTxnResponse, error) {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	// ACL: WRITE on TRANSACTIONAL_ID req.TransactionalID, READ on GROUP req.Group.
	if err := s.groups.EnsureTopic(); err != nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	n := int32(s.cfg.Int("offsets.topic.num.partitions"))
	if t, ok := s.ctrl.Image().Topics[group.OffsetsTopic]; ok {
		n = int32(len(t.Partitions))
	}
	tp := txn.TP{Topic: group.OffsetsTopic, Partition: group.PartitionFor(req.Group, n)}
	if code := s.txns.AddPartitions(req.TransactionalID, req.ProducerID, req.ProducerEpoch, []txn.TP{tp}, false); code != nil {
		resp.ErrorCode = code.Code
	}
	return resp, nil
}

func (s *Server) handleEndTxn(c *conn, req *kmsg.EndTxnRequest) (*kmsg.EndTxnResponse, error) {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	// ACL: WRITE on TRANSACTIONAL_ID req.TransactionalID.
	if req.Version >= 5 {
		// Transactions v2: the epoch is bumped, the answer carries it.
		pid, epoch, code := s.txns.EndTxnV2(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit)
		resp.ProducerID, resp.ProducerEpoch = pid, epoch
		if code != nil {
			resp.ErrorCode = code.Code
		}
		return resp, nil
	}
	if code := s.txns.EndTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit); code != nil {
		resp.ErrorCode = code.Code
	}
	return resp, nil
}

func (s *Server) handleTxnOffsetCommit(c *conn, req *kmsg.TxnOffsetCommitRequest) (*kmsg.TxnOffsetCommitResponse, error) {
	// ACL: WRITE on TRANSACTIONAL_ID req.TransactionalID, READ on GROUP req.Group.
	img := s.ctrl.Image()
	known := func(topic string, p int32) bool {
		t := img.Topics[topic]
		return t != nil && p >= 0 && int(p) < len(t.Partitions)
	}
	// The producer must be the current one and the group's partition of
	// __consumer_offsets in its ongoing transaction (AddOffsetsToTxn):
	// a zombie's offsets would be committed by the new instance's
	// transaction, and offsets outside any transaction would stay pending
	// for ever, no marker ever ending them.
	n := int32(s.cfg.Int("offsets.topic.num.partitions"))
	if t, ok := img.Topics[group.OffsetsTopic]; ok {
		n = int32(len(t.Partitions))
	}
	tp := txn.TP{Topic: group.OffsetsTopic, Partition: group.PartitionFor(req.Group, n)}
	// v5 (transactions v2) adds the partition instead of checking it, as
	// Kafka's group coordinator does for TxnOffsetCommit v5.
	code := s.addOrVerifyTxn(req.TransactionalID, req.ProducerID, req.ProducerEpoch, tp, req.Version >= 5)
	if code != nil {
		resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
		for _, t := range req.Topics {
			rt := kmsg.NewTxnOffsetCommitResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, code.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	if s.isShareGroup(req.Group) {
		// After the transaction check, as Kafka's coordinator runtime
		// verifies the transaction before its shard sees the group.
		return txnCommitToShareGroup(req), nil
	}
	return s.groups.TxnCommitOffsets(req, known), nil
}

// handleWriteTxnMarkers writes markers to partitions led here, for a
// transaction coordinator on another broker (or this one), or for an
// administrator aborting a hanging transaction (Kafka's Admin
// abortTransaction: `tributary txn abort`, `kafka-transactions.sh abort`).
// Brokers prove themselves with the inter-broker secret; anyone else needs
// CLUSTER_ACTION on the cluster, which without an authorizer everyone has,
// as in Kafka.
func (s *Server) handleWriteTxnMarkers(c *conn, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	allowed := s.fromBroker(req.UnknownTags) || c.allowedCluster(opClusterAction)
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				if !allowed {
					rp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
				} else if code := s.writeMarker(m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch, m.TransactionVersion, txn.TP{Topic: t.Topic, Partition: p}); code != nil {
					rp.ErrorCode = code.Code
				}
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp, nil
}

// writeMarker writes one marker to a partition led here and waits for the
// ISR to have it; in __consumer_offsets it also settles the transaction's
// pending offsets.
func (s *Server) writeMarker(pid int64, epoch int16, commit bool, coordinatorEpoch int32, tv int8, tp txn.TP) *kerr.Error {
	part, perr := s.leaderPartition(tp.Topic, tp.Partition)
	if perr != nil {
		return perr
	}
	off, err := part.AppendMarker(pid, epoch, commit, coordinatorEpoch, tv)
	if err != nil {
		return replica.KafkaError(err)
	}
	if tp.Topic == group.OffsetsTopic {
		s.groups.CompleteTxn(tp.Partition, pid, commit)
	}
	return part.WaitCommitted(off, 1, time.Now().Add(5*time.Second), s.stopping)
}

// writeMarkers is the coordinator's MarkerWriter: each partition's marker
// goes to its leader, this broker's own directly, the others' by
// WriteTxnMarkers, all leaders at once. It returns the partitions not
// written.
func (s *Server) writeMarkers(ctx context.Context, pid int64, epoch int16, commit bool, coordinatorEpoch int32, tv int8, tps []txn.TP) []txn.TP {
	img := s.ctrl.Image()
	byLeader := map[int32][]txn.TP{}
	var failed []txn.TP
	for _, tp := range tps {
		t, ok := img.Topics[tp.Topic]
		if !ok || int(tp.Partition) >= len(t.Partitions) {
			continue // deleted: nothing to mark
		}
		l := t.Partitions[tp.Partition].Leader
		if l < 0 {
			failed = append(failed, tp)
			continue
		}
		byLeader[l] = append(byLeader[l], tp)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for leader, ps := range byLeader {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var bad []txn.TP
			if leader == s.nodeID {
				for _, tp := range ps {
					if code := s.writeMarker(pid, epoch, commit, coordinatorEpoch, tv, tp); code != nil {
						s.logger.Warn("writing a transaction marker", "partition", fmt.Sprintf("%s-%d", tp.Topic, tp.Partition), "err", code)
						if !finalMarkerError(code.Code) {
							bad = append(bad, tp)
						}
					}
				}
			} else {
				bad = s.sendMarkers(ctx, leader, pid, epoch, commit, coordinatorEpoch, tv, ps)
			}
			mu.Lock()
			failed = append(failed, bad...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return failed
}

// finalMarkerError says whether a partition's refusal of a marker is final:
// the producer or the coordinator moved on (a newer epoch), so no retry can
// ever write it. Kafka's TransactionMarkerRequestCompletionHandler stops
// sending those too; retrying would hold the transaction prepared for ever.
func finalMarkerError(code int16) bool {
	return code == kerr.InvalidProducerEpoch.Code || code == kerr.TransactionCoordinatorFenced.Code
}

// sendMarkers sends WriteTxnMarkers to another broker.
func (s *Server) sendMarkers(ctx context.Context, leader int32, pid int64, epoch int16, commit bool, coordinatorEpoch int32, tv int8, tps []txn.TP) []txn.TP {
	b, ok := s.ctrl.Image().Brokers[leader]
	if !ok {
		return tps
	}
	addr, err := s.interBrokerAddr(b)
	if err != nil {
		return tps
	}
	req := kmsg.NewPtrWriteTxnMarkersRequest()
	req.SetVersion(1)
	if tv >= 2 {
		// v2 carries the transaction version, which makes the leader's
		// epoch check strict (AppendMarker). Only v2 transactions use it,
		// and those exist only once every broker serves it.
		req.SetVersion(2)
	}
	req.UnknownTags.Set(replica.SecretTag, []byte(s.ctrl.Image().Secret))
	m := kmsg.NewWriteTxnMarkersRequestMarker()
	m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch, m.TransactionVersion = pid, epoch, commit, coordinatorEpoch, tv
	for _, g := range tpsByTopic(tps) {
		t := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
		t.Topic, t.Partitions = g.topic, g.partitions
		m.Topics = append(m.Topics, t)
	}
	req.Markers = append(req.Markers, m)
	deadline, _ := ctx.Deadline()
	// The inter-broker listener's security, as replica fetches: on a
	// secured cluster a plain dial would send the cluster secret in
	// cleartext to a TLS port, and no marker would arrive.
	r, err := s.peerRoundTrip(ctx, addr, fmt.Sprintf("tributary-txn-%d", s.nodeID), req, time.Until(deadline))
	if err != nil {
		s.logger.Warn("sending transaction markers", "leader", leader, "err", err)
		return tps
	}
	var bad []txn.TP
	for _, rm := range r.(*kmsg.WriteTxnMarkersResponse).Markers {
		for _, rt := range rm.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 && !finalMarkerError(rp.ErrorCode) {
					bad = append(bad, txn.TP{Topic: rt.Topic, Partition: rp.Partition})
				}
			}
		}
	}
	return bad
}

func (s *Server) handleDescribeTransactions(c *conn, req *kmsg.DescribeTransactionsRequest) (*kmsg.DescribeTransactionsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range req.TransactionalIDs {
		// ACL: DESCRIBE on TRANSACTIONAL_ID id.
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.ProducerEpoch, st.StartTimestamp = id, -1, -1, -1
		m, code := s.txns.Describe(id)
		if code != nil {
			st.ErrorCode = code.Code
		} else {
			st.State, st.ProducerID, st.ProducerEpoch, st.TimeoutMillis, st.StartTimestamp = m.Status.String(), m.ProducerID, m.Epoch, m.TimeoutMs, m.Start
			for _, g := range tpsByTopic(sortedTPs(m.Partitions)) {
				t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				t.Topic, t.Partitions = g.topic, g.partitions
				st.Topics = append(st.Topics, t)
			}
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}

// appendTxnTPs appends a topic's partitions named in an AddPartitionsToTxn
// to tps and marks in unknown those the cluster does not have, the same
// check for the client's version (v3 and below) and the brokers' (v4+),
// so both refuse a whole transaction's partitions alike.
func appendTxnTPs(tps []txn.TP, unknown map[txn.TP]bool, img *cluster.Image, topic string, parts []int32) []txn.TP {
	t := img.Topics[topic]
	for _, p := range parts {
		tp := txn.TP{Topic: topic, Partition: p}
		if t == nil || p < 0 || int(p) >= len(t.Partitions) {
			unknown[tp] = true
		}
		tps = append(tps, tp)
	}
	return tps
}

// topicPartitions is one topic's partitions, as Kafka's transaction
// requests and responses list them.
type topicPartitions struct {
	topic      string
	partitions []int32
}

// tpsByTopic groups tps under their topics, topics in the order they first
// appear and partitions in the order given, the one shape AddPartitionsToTxn,
// WriteTxnMarkers and DescribeTransactions all send.
func tpsByTopic(tps []txn.TP) []topicPartitions {
	var out []topicPartitions
	at := map[string]int{}
	for _, tp := range tps {
		i, ok := at[tp.Topic]
		if !ok {
			i = len(out)
			at[tp.Topic] = i
			out = append(out, topicPartitions{topic: tp.Topic})
		}
		out[i].partitions = append(out[i].partitions, tp.Partition)
	}
	return out
}

func sortedTPs(m map[txn.TP]bool) []txn.TP {
	var out []txn.TP
	for tp := range m {
		out = append(out, tp)
	}
	txn.SortTPs(out)
	return out
}

func (s *Server) handleListTransactions(c *conn, req *kmsg.ListTransactionsRequest) (*kmsg.ListTransactionsResponse, error) {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	states := map[string]bool{}
	for _, st := range req.StateFilters {
		states[st] = true
	}
	pids := map[int64]bool{}
	for _, p := range req.ProducerIDFilters {
		pids[p] = true
	}
	now := time.Now().UnixMilli()
	for _, l := range s.txns.List() {
		// ACL: DESCRIBE on TRANSACTIONAL_ID l.ID (unauthorized ids are left out).
		switch {
		case len(states) > 0 && !states[l.Status.String()]:
			continue
		case len(pids) > 0 && !pids[l.ProducerID]:
			continue
		case req.Version >= 1 && req.DurationFilterMillis >= 0 && (l.Status != txn.Ongoing || now-l.Start < req.DurationFilterMillis):
			continue
		}
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = l.ID, l.ProducerID, l.Status.String()
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}

func (s *Server) handleDescribeProducers(c *conn, req *kmsg.DescribeProducersRequest) (*kmsg.DescribeProducersResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		// ACL: READ on TOPIC rt.Topic.
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		for _, p := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = p
			part, perr := s.leaderPartition(rt.Topic, p)
			if perr != nil {
				sp.ErrorCode = perr.Code
			} else {
				for _, o := range part.Producers() {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch, ap.LastSequence, ap.LastTimestamp = o.ProducerID, int32(o.Epoch), o.LastSequence, o.LastTimestamp
					ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = o.CoordinatorEpoch, o.FirstOffset
					sp.ActiveProducers = append(sp.ActiveProducers, ap)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}

// verifyTxnProduce checks that a transactional produce to a partition
// belongs to the producer's ongoing transaction, as Kafka's leaders do
// since KIP-890 part 1: without it, a produce delayed past its
// transaction's end would open a transaction no coordinator knows, and
// hold the last stable offset back for ever. The first batch of a
// transaction in a partition is checked with the coordinator (this broker
// itself, or another by DescribeTransactions); later ones belong to the
// transaction the partition already has open.
//
// The guard it returns goes to the append (AppendTxnAsLeader), which
// refuses it if a marker ended the transaction since: the check and the
// append are not under one lock, the coordinator being asked between.
func (s *Server) verifyTxnProduce(part *replica.Partition, id string, pid int64, epoch int16, topic string, partition int32, add bool) (*replica.VerificationGuard, *kerr.Error) {
	open, guard := part.BeginTxnVerification(pid, epoch)
	if open {
		return nil, nil
	}
	tp := txn.TP{Topic: topic, Partition: partition}
	code := s.addOrVerifyTxn(id, pid, epoch, tp, add)
	if code != nil && add {
		code = produceAddError(code)
	}
	if code != nil {
		part.EndTxnVerification(pid, guard)
		return nil, code
	}
	return guard, nil
}

// verifyRemote asks the transaction's coordinator on another broker.
// An unreachable coordinator is NOT_COORDINATOR, which producers retry.
func (s *Server) verifyRemote(id string, pid int64, epoch int16, tp txn.TP) *kerr.Error {
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
	req := kmsg.NewPtrDescribeTransactionsRequest()
	req.TransactionalIDs = []string{id}
	r, err := s.peerRoundTrip(ctx, addr, fmt.Sprintf("tributary-txn-verify-%d", s.nodeID), req, 5*time.Second)
	if err != nil {
		return kerr.NotCoordinator
	}
	resp := r.(*kmsg.DescribeTransactionsResponse)
	if len(resp.TransactionStates) != 1 {
		return kerr.NotCoordinator
	}
	st := resp.TransactionStates[0]
	switch {
	case st.ErrorCode == kerr.TransactionalIDNotFound.Code:
		return kerr.InvalidProducerIDMapping
	case st.ErrorCode != 0:
		return kerr.NotCoordinator // moved or loading: the producer retries
	case st.ProducerID != pid:
		return kerr.InvalidProducerIDMapping
	case epoch != st.ProducerEpoch:
		return kerr.InvalidProducerEpoch
	case st.State != txn.Ongoing.String():
		return kerr.InvalidTxnState
	}
	for _, t := range st.Topics {
		if t.Topic == tp.Topic && slices.Contains(t.Partitions, tp.Partition) {
			return nil
		}
	}
	return kerr.InvalidTxnState
}
