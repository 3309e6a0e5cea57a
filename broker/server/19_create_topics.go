package server

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
)

func (s *Server) handleCreateTopics(c *conn, req *kmsg.CreateTopicsRequest) (*kmsg.CreateTopicsResponse, error) {
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	seen := map[string]int{}
	for _, rt := range req.Topics {
		seen[rt.Topic]++
	}
	for _, rt := range req.Topics {
		st := kmsg.NewCreateTopicsResponseTopic()
		st.Topic, st.NumPartitions, st.ReplicationFactor = rt.Topic, -1, -1
		if seen[rt.Topic] > 1 {
			st.ErrorCode = kerr.InvalidRequest.Code
			st.ErrorMessage = errorMessage(errDuplicateTopic(rt.Topic))
			resp.Topics = append(resp.Topics, st)
			continue
		}
		spec := cluster.TopicSpec{Name: rt.Topic, Partitions: rt.NumPartitions, ReplicationFactor: rt.ReplicationFactor, Configs: map[string]string{}}
		if len(rt.ReplicaAssignment) > 0 {
			sort.Slice(rt.ReplicaAssignment, func(i, j int) bool { return rt.ReplicaAssignment[i].Partition < rt.ReplicaAssignment[j].Partition })
			for i, a := range rt.ReplicaAssignment {
				if a.Partition != int32(i) {
					st.ErrorCode = kerr.InvalidReplicaAssignment.Code
					st.ErrorMessage = errorMessage(errAssignmentGap(a.Partition))
					break
				}
				spec.Assignment = append(spec.Assignment, a.Replicas)
			}
			if st.ErrorCode != 0 {
				resp.Topics = append(resp.Topics, st)
				continue
			}
		}
		for _, cfg := range rt.Configs {
			if cfg.Value != nil {
				spec.Configs[cfg.Name] = *cfg.Value
			}
		}
		t, err := s.ctrl.CreateTopic(spec, req.ValidateOnly)
		if err != nil {
			st.ErrorCode, st.ErrorMessage = kafkaCode(err), errorMessage(err)
			resp.Topics = append(resp.Topics, st)
			continue
		}
		st.TopicID = t.ID
		st.NumPartitions = int32(len(t.Partitions))
		st.ReplicationFactor = int16(len(t.Partitions[0].Replicas))
		for _, v := range s.cfg.Topic(t.Configs) {
			rc := kmsg.NewCreateTopicsResponseTopicConfig()
			rc.Name, rc.Source, rc.IsSensitive = v.Def.Name, int8(v.Source), v.Def.Sensitive
			if !v.Null {
				val := v.Value
				rc.Value = &val
			}
			st.Configs = append(st.Configs, rc)
		}
		sort.Slice(st.Configs, func(i, j int) bool { return st.Configs[i].Name < st.Configs[j].Name })
		if !req.ValidateOnly {
			s.logger.Info("created topic", "topic", t.Name, "topic_id", t.ID.String(), "partitions", len(t.Partitions), "configs", t.Configs)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
