package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/share"
)

// Share-group offsets for administrators (KIP-932's
// DescribeShareGroupOffsets, AlterShareGroupOffsets,
// DeleteShareGroupOffsets; kafka-share-groups.sh --describe,
// --reset-offsets, --delete-offsets). They are served from this broker's
// share-partition state: on a single node that is all of it; in a cluster
// only the partitions this broker leads (docs/broker.md).

// handleDescribeShareGroupOffsets: DESCRIBE on the group (else the group
// is GROUP_AUTHORIZATION_FAILED) and on each topic (else the topic's
// partitions are TOPIC_AUTHORIZATION_FAILED). A partition the group never
// read has start offset -1, as in Kafka.
func (s *Server) handleDescribeShareGroupOffsets(c *conn, req *kmsg.DescribeShareGroupOffsetsRequest) (*kmsg.DescribeShareGroupOffsetsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeShareGroupOffsetsResponse)
	img := s.ctrl.Image()
	for _, rg := range req.Groups {
		g := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
		g.GroupID = rg.GroupID
		if !c.allowedGroup(opDescribe, rg.GroupID) {
			g.ErrorCode = kerr.GroupAuthorizationFailed.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		if code := s.groups.Status(rg.GroupID); code != nil {
			g.ErrorCode = code.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		if s.shares.Members(rg.GroupID) < 0 {
			g.ErrorCode = kerr.GroupIDNotFound.Code
			resp.Groups = append(resp.Groups, g)
			continue
		}
		topics := rg.Topics
		if topics == nil {
			// Every topic the group has state for.
			byID := map[[16]byte][]int32{}
			for _, o := range s.shares.PartitionStates(rg.GroupID) {
				byID[o.Topic] = append(byID[o.Topic], o.Partition)
			}
			for id, parts := range byID {
				if t, ok := img.ByID[cluster.TopicID(id)]; ok {
					topics = append(topics, kmsg.DescribeShareGroupOffsetsRequestGroupTopic{Topic: t.Name, Partitions: parts})
				}
			}
		}
		for _, rt := range topics {
			t := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopic()
			t.Topic = rt.Topic
			meta, exists := img.Topics[rt.Topic]
			allowed := c.allowedTopic(opDescribe, rt.Topic)
			if exists {
				t.TopicID = [16]byte(meta.ID)
			}
			for _, p := range rt.Partitions {
				sp := kmsg.NewDescribeShareGroupOffsetsResponseGroupTopicPartition()
				sp.Partition, sp.StartOffset, sp.LeaderEpoch, sp.Lag = p, -1, -1, -1
				switch {
				case !allowed:
					sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
				case !exists || p < 0 || int(p) >= len(meta.Partitions):
					sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
				default:
					if off, ok := s.shares.StartOffset(share.Key{Group: rg.GroupID, Topic: t.TopicID, Partition: p}); ok {
						sp.StartOffset = off
						sp.LeaderEpoch = meta.Partitions[p].LeaderEpoch
						if part, e := s.leaderPartition(rt.Topic, p); e == nil {
							sp.Lag = max(part.HighWatermark()-off, 0)
						}
					}
				}
				t.Partitions = append(t.Partitions, sp)
			}
			g.Topics = append(g.Topics, t)
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp, nil
}

// handleAlterShareGroupOffsets resets the start offsets of an empty share
// group's partitions (NON_EMPTY_GROUP while it has members): READ on the
// group and on each topic, as Kafka.
func (s *Server) handleAlterShareGroupOffsets(c *conn, req *kmsg.AlterShareGroupOffsetsRequest) (*kmsg.AlterShareGroupOffsetsResponse, error) {
	resp := req.ResponseKind().(*kmsg.AlterShareGroupOffsetsResponse)
	if !c.allowedGroup(opRead, req.GroupID) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	if code := s.groups.Status(req.GroupID); code != nil {
		resp.ErrorCode = code.Code
		return resp, nil
	}
	if !s.shares.Has(req.GroupID) && s.isOtherGroup(req.GroupID) {
		// Kafka's getOrMaybeCreateShareGroup: no share twin of a classic
		// or consumer group (review L1).
		resp.ErrorCode, resp.ErrorMessage = kerr.GroupIDNotFound.Code, strPtr("Group "+req.GroupID+" is not a share group.")
		return resp, nil
	}
	img := s.ctrl.Image()
	offsets := map[share.Key]int64{}
	for _, rt := range req.Topics {
		t := kmsg.NewAlterShareGroupOffsetsResponseTopic()
		t.Topic = rt.Topic
		meta, exists := img.Topics[rt.Topic]
		allowed := c.allowedTopic(opRead, rt.Topic)
		if exists {
			t.TopicID = [16]byte(meta.ID)
		}
		for _, p := range rt.Partitions {
			sp := kmsg.NewAlterShareGroupOffsetsResponseTopicPartition()
			sp.Partition = p.Partition
			switch {
			case !allowed:
				sp.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case !exists || p.Partition < 0 || int(p.Partition) >= len(meta.Partitions):
				sp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			default:
				off := p.StartOffset
				if part, e := s.leaderPartition(rt.Topic, p.Partition); e == nil {
					// Kafka keeps the offset within the log: below the log
					// start is the log start, past the end the end.
					off = min(max(off, part.Log.LogStartOffset()), part.HighWatermark())
				}
				if off < 0 {
					sp.ErrorCode = kerr.InvalidRequest.Code
					break
				}
				offsets[share.Key{Group: req.GroupID, Topic: t.TopicID, Partition: p.Partition}] = off
			}
			t.Partitions = append(t.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, t)
	}
	if code := s.shares.AlterOffsets(req.GroupID, offsets); code != nil {
		resp.ErrorCode, resp.Topics = code.Code, nil
	}
	return resp, nil
}

// handleDeleteShareGroupOffsets forgets an empty share group's state for
// whole topics: DELETE on the group, READ on each topic.
func (s *Server) handleDeleteShareGroupOffsets(c *conn, req *kmsg.DeleteShareGroupOffsetsRequest) (*kmsg.DeleteShareGroupOffsetsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupOffsetsResponse)
	if !c.allowedGroup(kmsg.ACLOperationDelete, req.GroupID) {
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	if code := s.groups.Status(req.GroupID); code != nil {
		resp.ErrorCode = code.Code
		return resp, nil
	}
	img := s.ctrl.Image()
	ids := map[[16]byte]bool{}
	for _, rt := range req.Topics {
		t := kmsg.NewDeleteShareGroupOffsetsResponseTopic()
		t.Topic = rt.Topic
		meta, exists := img.Topics[rt.Topic]
		switch {
		case !c.allowedTopic(opRead, rt.Topic):
			t.ErrorCode = kerr.TopicAuthorizationFailed.Code
		case !exists:
			t.ErrorCode = kerr.UnknownTopicOrPartition.Code
		default:
			t.TopicID = [16]byte(meta.ID)
			ids[t.TopicID] = true
		}
		resp.Topics = append(resp.Topics, t)
	}
	if code := s.shares.DeleteOffsets(req.GroupID, ids); code != nil {
		resp.ErrorCode, resp.Topics = code.Code, nil
	}
	return resp, nil
}
