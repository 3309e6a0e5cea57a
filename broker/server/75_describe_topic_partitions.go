package server

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
)

// maxDescribePartitions is Kafka's max.request.partition.size.limit
// default: the most partitions one DescribeTopicPartitions answer carries,
// whatever the client asks for.
const maxDescribePartitions = 2000

// DescribeTopicPartitions (KIP-966) is Metadata for topics with many
// partitions: topics in name order, at most response_partition_limit
// partitions per answer, and a cursor (topic, partition) to continue from.
// An empty topic list asks for every topic; unknown topics are then simply
// absent, while a named one answers UNKNOWN_TOPIC_OR_PARTITION. There are
// no eligible leader replicas (ELR) yet, so those lists are empty.
func (s *Server) handleDescribeTopicPartitions(c *conn, req *kmsg.DescribeTopicPartitionsRequest) (*kmsg.DescribeTopicPartitionsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	img := s.ctrl.Image()
	all := len(req.Topics) == 0
	var cursor kmsg.DescribeTopicPartitionsRequestCursor
	if req.Cursor != nil {
		cursor = *req.Cursor
	}
	var names []string
	if all {
		for _, n := range img.TopicNames() {
			if n >= cursor.Topic {
				names = append(names, n)
			}
		}
	} else {
		set := map[string]bool{}
		for _, rt := range req.Topics {
			if rt.Topic >= cursor.Topic && !set[rt.Topic] {
				set[rt.Topic] = true
				names = append(names, rt.Topic)
			}
		}
		if req.Cursor != nil && !set[cursor.Topic] {
			// Kafka refuses the request: every topic gets the error.
			for _, rt := range req.Topics {
				mt := kmsg.NewDescribeTopicPartitionsResponseTopic()
				mt.Topic, mt.ErrorCode = strPtr(rt.Topic), kerr.InvalidRequest.Code
				mt.AuthorizedOperations = authorizedOpsOmitted
				resp.Topics = append(resp.Topics, mt)
			}
			return resp, nil
		}
		sort.Strings(names)
	}
	remaining := min(int(req.ResponsePartitionLimit), maxDescribePartitions)
	for _, name := range names {
		if remaining < 0 {
			break // a negative limit: Kafka answers with nothing
		}
		if remaining == 0 {
			// Every partition of the topics before is in; continue here.
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: 0}
			break
		}
		t := img.Topics[name]
		if t == nil {
			if !all {
				mt := kmsg.NewDescribeTopicPartitionsResponseTopic()
				mt.Topic, mt.ErrorCode = strPtr(name), kerr.UnknownTopicOrPartition.Code
				if err := cluster.ValidateTopicName(name); err != nil {
					mt.ErrorCode = kerr.InvalidTopicException.Code
				}
				mt.AuthorizedOperations = authorizedOpsOmitted
				resp.Topics = append(resp.Topics, mt)
			}
			continue
		}
		first := 0
		if name == cursor.Topic {
			first = max(int(cursor.Partition), 0)
		}
		last := min(len(t.Partitions), first+remaining)
		resp.Topics = append(resp.Topics, describeTopicPartitions(img, t, first, last))
		if last < len(t.Partitions) {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: int32(last)}
			break
		}
		remaining -= max(last-first, 0)
	}
	return resp, nil
}

// describeTopicPartitions is t with its partitions [first, last).
func describeTopicPartitions(img *cluster.Image, t *cluster.Topic, first, last int) kmsg.DescribeTopicPartitionsResponseTopic {
	mt := kmsg.NewDescribeTopicPartitionsResponseTopic()
	mt.Topic, mt.TopicID, mt.IsInternal = strPtr(t.Name), t.ID, t.Internal()
	mt.AuthorizedOperations = authorizedOpsOmitted
	for i := first; i < last; i++ {
		p := t.Partitions[i]
		mp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
		mp.Partition, mp.LeaderID, mp.LeaderEpoch = p.Index, p.Leader, p.LeaderEpoch
		mp.Replicas, mp.ISR = p.Replicas, p.ISR
		mp.EligibleLeaderReplicas, mp.LastKnownELR, mp.OfflineReplicas = append([]int32{}, p.ELR...), []int32{}, img.OfflineReplicas(p)
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}
