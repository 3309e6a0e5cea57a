package server

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/group"
)

// handleOffsetDelete deletes committed offsets of a group (KIP-496): all of
// them when the group is empty, else only of topics its consumers do not
// subscribe to.
func (s *Server) handleOffsetDelete(c *conn, req *kmsg.OffsetDeleteRequest) (*kmsg.OffsetDeleteResponse, error) {
	resp := req.ResponseKind().(*kmsg.OffsetDeleteResponse)
	img := s.ctrl.Image()
	var tps []group.TopicPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tps = append(tps, group.TopicPartition{Topic: t.Topic, Partition: p.Partition})
		}
	}
	var known []group.TopicPartition
	for _, tp := range tps {
		if t := img.Topics[tp.Topic]; t != nil && tp.Partition >= 0 && int(tp.Partition) < len(t.Partitions) {
			known = append(known, tp)
		}
	}
	top, codes := s.groups.DeleteOffsets(req.Group, known)
	if top != nil {
		resp.ErrorCode = top.Code
		return resp, nil
	}
	i, k := 0, 0
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			if k < len(known) && known[k] == tps[i] {
				if codes[k] != nil {
					rp.ErrorCode = codes[k].Code
				}
				k++
			} else {
				rp.ErrorCode = kerr.UnknownTopicOrPartition.Code
			}
			i++
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
