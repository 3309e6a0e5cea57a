package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The authorization of transactions and client quotas, Kafka's checks for
// APIs that other branches serve: a request whose handler is not in the
// table never gets here, so these take effect with their handlers.
func (c *conn) authorizeMore(req kmsg.Request) (kmsg.Response, func(kmsg.Response)) {
	txnOK := func(id string) bool { return c.allowed(opWrite, kmsg.ACLResourceTypeTransactionalId, id) }
	switch q := req.(type) {
	case *kmsg.AddPartitionsToTxnRequest:
		if q.Version >= 4 {
			// From brokers verifying a transaction (KIP-890).
			if !c.allowedCluster(opClusterAction) {
				r := q.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
				r.ErrorCode = clusterDenied
				return r, nil
			}
			return nil, nil
		}
		img := c.s.ctrl.Image()
		code := func(topic string) int16 {
			switch {
			case !txnOK(q.TransactionalID):
				return txnDenied
			case !c.allowedTopic(opWrite, topic):
				return topicDenied
			case img.Topics[topic] == nil:
				return kerr.UnknownTopicOrPartition.Code
			}
			return 0
		}
		refused := false
		for _, t := range q.Topics {
			refused = refused || code(t.Topic) != 0
		}
		if !refused {
			return nil, nil
		}
		// Kafka adds none of the partitions when one is refused.
		r := q.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
		for _, t := range q.Topics {
			rt := kmsg.NewAddPartitionsToTxnResponseTopic()
			rt.Topic = t.Topic
			cd := code(t.Topic)
			if cd == 0 {
				cd = kerr.OperationNotAttempted.Code
			}
			for _, p := range t.Partitions {
				rp := kmsg.NewAddPartitionsToTxnResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p, cd
				rt.Partitions = append(rt.Partitions, rp)
			}
			r.Topics = append(r.Topics, rt)
		}
		return r, nil
	case *kmsg.AddOffsetsToTxnRequest:
		r := q.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
		switch {
		case !txnOK(q.TransactionalID):
			r.ErrorCode = txnDenied
		case !c.allowedGroup(opRead, q.Group):
			r.ErrorCode = groupDenied
		default:
			return nil, nil
		}
		return r, nil
	case *kmsg.EndTxnRequest:
		if !txnOK(q.TransactionalID) {
			r := q.ResponseKind().(*kmsg.EndTxnResponse)
			r.ErrorCode = txnDenied
			return r, nil
		}
	case *kmsg.TxnOffsetCommitRequest:
		all := func(code int16) kmsg.Response {
			r := q.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
			for _, t := range q.Topics {
				rt := kmsg.NewTxnOffsetCommitResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, code
					rt.Partitions = append(rt.Partitions, rp)
				}
				r.Topics = append(r.Topics, rt)
			}
			return r
		}
		switch {
		case !txnOK(q.TransactionalID):
			return all(txnDenied), nil
		case !c.allowedGroup(opRead, q.Group):
			return all(groupDenied), nil
		}
		var denied []kmsg.TxnOffsetCommitRequestTopic
		q.Topics, denied = keep(q.Topics, func(t kmsg.TxnOffsetCommitRequestTopic) bool { return c.allowedTopic(opRead, t.Topic) })
		if len(denied) == 0 {
			return nil, nil
		}
		return nil, func(resp kmsg.Response) {
			r := resp.(*kmsg.TxnOffsetCommitResponse)
			for _, t := range denied {
				rt := kmsg.NewTxnOffsetCommitResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p.Partition, topicDenied
					rt.Partitions = append(rt.Partitions, rp)
				}
				r.Topics = append(r.Topics, rt)
			}
		}
	case *kmsg.WriteTxnMarkersRequest:
		if !c.allowedCluster(opAlter) && !c.allowedCluster(opClusterAction) {
			r := q.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
			for _, m := range q.Markers {
				rm := kmsg.NewWriteTxnMarkersResponseMarker()
				rm.ProducerID = m.ProducerID
				for _, t := range m.Topics {
					rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
					rt.Topic = t.Topic
					for _, p := range t.Partitions {
						rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
						rp.Partition, rp.ErrorCode = p, clusterDenied
						rt.Partitions = append(rt.Partitions, rp)
					}
					rm.Topics = append(rm.Topics, rt)
				}
				r.Markers = append(r.Markers, rm)
			}
			return r, nil
		}
	case *kmsg.DescribeTransactionsRequest:
		all := q.TransactionalIDs
		q.TransactionalIDs, _ = keep(q.TransactionalIDs, func(id string) bool {
			return c.allowed(opDescribe, kmsg.ACLResourceTypeTransactionalId, id)
		})
		denied := len(all) != len(q.TransactionalIDs)
		return nil, func(resp kmsg.Response) {
			r := resp.(*kmsg.DescribeTransactionsResponse)
			got := map[string]kmsg.DescribeTransactionsResponseTransactionState{}
			for _, st := range r.TransactionStates {
				// Only the partitions it may describe are shown.
				st.Topics, _ = keep(st.Topics, func(t kmsg.DescribeTransactionsResponseTransactionStateTopic) bool {
					return c.allowedTopic(opDescribe, t.Topic)
				})
				got[st.TransactionalID] = st
			}
			if !denied {
				for i, st := range r.TransactionStates {
					r.TransactionStates[i] = got[st.TransactionalID]
				}
				return
			}
			r.TransactionStates = r.TransactionStates[:0]
			for _, id := range all {
				st, ok := got[id]
				if !ok {
					st = kmsg.NewDescribeTransactionsResponseTransactionState()
					st.TransactionalID, st.ErrorCode = id, txnDenied
				}
				r.TransactionStates = append(r.TransactionStates, st)
			}
		}
	case *kmsg.ListTransactionsRequest:
		return nil, func(resp kmsg.Response) {
			r := resp.(*kmsg.ListTransactionsResponse)
			r.TransactionStates, _ = keep(r.TransactionStates, func(st kmsg.ListTransactionsResponseTransactionState) bool {
				return c.allowed(opDescribe, kmsg.ACLResourceTypeTransactionalId, st.TransactionalID)
			})
		}
	case *kmsg.DescribeProducersRequest:
		var denied []kmsg.DescribeProducersRequestTopic
		q.Topics, denied = keep(q.Topics, func(t kmsg.DescribeProducersRequestTopic) bool { return c.allowedTopic(opRead, t.Topic) })
		if len(denied) == 0 {
			return nil, nil
		}
		return nil, func(resp kmsg.Response) {
			r := resp.(*kmsg.DescribeProducersResponse)
			for _, t := range denied {
				rt := kmsg.NewDescribeProducersResponseTopic()
				rt.Topic = t.Topic
				for _, p := range t.Partitions {
					rp := kmsg.NewDescribeProducersResponseTopicPartition()
					rp.Partition, rp.ErrorCode = p, topicDenied
					rt.Partitions = append(rt.Partitions, rp)
				}
				r.Topics = append(r.Topics, rt)
			}
		}
	case *kmsg.DescribeClientQuotasRequest:
		if !c.allowedCluster(opDescribeConfigs) {
			r := q.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
			r.ErrorCode = clusterDenied
			return r, nil
		}
	case *kmsg.AlterClientQuotasRequest:
		if !c.allowedCluster(opAlterConfigs) {
			r := q.ResponseKind().(*kmsg.AlterClientQuotasResponse)
			for _, e := range q.Entries {
				re := kmsg.NewAlterClientQuotasResponseEntry()
				re.ErrorCode = clusterDenied
				for _, en := range e.Entity {
					ren := kmsg.NewAlterClientQuotasResponseEntryEntity()
					ren.Type, ren.Name = en.Type, en.Name
					re.Entity = append(re.Entity, ren)
				}
				r.Entries = append(r.Entries, re)
			}
			return r, nil
		}
	}
	return nil, nil
}
