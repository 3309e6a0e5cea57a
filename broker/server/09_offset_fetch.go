package server

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/group"
)

// handleOffsetFetch answers committed offsets: of the listed partitions, or
// of every partition the group committed when topics is null (v2+), for one
// group (v1-v7) or several (v8+). A partition without a commit is offset -1
// without an error, as in Kafka.
func (s *Server) handleOffsetFetch(c *conn, req *kmsg.OffsetFetchRequest) (*kmsg.OffsetFetchResponse, error) {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	if req.Version >= 8 {
		for _, rg := range req.Groups {
			var topics []fetchTopic
			if rg.Topics != nil {
				topics = []fetchTopic{}
				for _, t := range rg.Topics {
					topics = append(topics, fetchTopic{t.Topic, t.Partitions})
				}
			}
			g := kmsg.NewOffsetFetchResponseGroup()
			g.Group = rg.Group
			if code := s.groups.CheckConsumerFetch(rg.Group, rg.MemberID, rg.MemberEpoch); code != nil {
				g.ErrorCode = code.Code // v9+: a consumer group member's epoch
				resp.Groups = append(resp.Groups, g)
				continue
			}
			code, res := s.fetchOffsets(rg.Group, topics, req.RequireStable)
			g.ErrorCode = code
			for _, t := range res {
				gt := kmsg.NewOffsetFetchResponseGroupTopic()
				gt.Topic = t.topic
				for _, p := range t.parts {
					gp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					gp.Partition, gp.Offset, gp.LeaderEpoch, gp.Metadata, gp.ErrorCode = p.Partition, p.Offset, p.LeaderEpoch, p.Metadata, p.ErrorCode
					gt.Partitions = append(gt.Partitions, gp)
				}
				g.Topics = append(g.Topics, gt)
			}
			resp.Groups = append(resp.Groups, g)
		}
		return resp, nil
	}
	var topics []fetchTopic
	if req.Topics != nil || req.Version < 2 {
		topics = []fetchTopic{}
		for _, t := range req.Topics {
			topics = append(topics, fetchTopic{t.Topic, t.Partitions})
		}
	}
	code, res := s.fetchOffsets(req.Group, topics, req.Version >= 7 && req.RequireStable)
	if req.Version >= 2 {
		resp.ErrorCode = code
	}
	for _, t := range res {
		rt := kmsg.NewOffsetFetchResponseTopic()
		rt.Topic = t.topic
		for _, p := range t.parts {
			if req.Version < 2 && code != 0 {
				p.ErrorCode = code // v1 has no top-level error
			}
			rt.Partitions = append(rt.Partitions, p)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

type fetchTopic struct {
	topic string
	parts []int32
}

type fetchedTopic struct {
	topic string
	parts []kmsg.OffsetFetchResponseTopicPartition
}

// fetchOffsets looks up a group's offsets; topics nil is all of them.
// requireStable (KIP-447) answers UNSTABLE_OFFSET_COMMIT for a partition
// with an offset pending in an open transaction, which the consumer
// retries, rather than the older committed offset.
func (s *Server) fetchOffsets(groupID string, topics []fetchTopic, requireStable bool) (int16, []fetchedTopic) {
	committed, code := s.groups.Committed(groupID)
	if code != nil {
		committed = nil
	}
	if topics == nil {
		byTopic := map[string][]int32{}
		for tp := range committed {
			byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
		}
		for t, ps := range byTopic {
			sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
			topics = append(topics, fetchTopic{t, ps})
		}
		sort.Slice(topics, func(i, j int) bool { return topics[i].topic < topics[j].topic })
	}
	var out []fetchedTopic
	for _, t := range topics {
		ft := fetchedTopic{topic: t.topic}
		for _, p := range t.parts {
			rp := kmsg.NewOffsetFetchResponseTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = p, -1, -1
			empty := ""
			rp.Metadata = &empty
			tp := group.TopicPartition{Topic: t.topic, Partition: p}
			if requireStable && code == nil && s.groups.Unstable(groupID, tp) {
				rp.ErrorCode = kerr.UnstableOffsetCommit.Code
				ft.parts = append(ft.parts, rp)
				continue
			}
			if o, ok := committed[tp]; ok {
				meta := o.Metadata
				rp.Offset, rp.LeaderEpoch, rp.Metadata = o.Offset, o.LeaderEpoch, &meta
			}
			ft.parts = append(ft.parts, rp)
		}
		out = append(out, ft)
	}
	if code != nil {
		return code.Code, out
	}
	return 0, out
}
