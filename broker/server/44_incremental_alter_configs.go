package server

import (
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/config"
)

// IncrementalAlterConfigs (KIP-339) changes only the topic properties it
// names: SET and DELETE an override, APPEND to and SUBTRACT from a list
// property (cleanup.policy). Resources succeed or fail on their own; within
// one, all changes apply or none.
//
// APPEND and SUBTRACT on a topic without an override start from the value
// the topic has now (what DescribeConfigs shows), where Kafka starts from
// the topic property's static default: the two differ only when the broker
// sets log.cleanup.policy, and then ours is the one the user sees.
func (s *Server) handleIncrementalAlterConfigs(c *conn, req *kmsg.IncrementalAlterConfigsRequest) (*kmsg.IncrementalAlterConfigsResponse, error) {
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	dup := map[configResource]int{}
	for _, rr := range req.Resources {
		dup[configResource{rr.ResourceType, rr.ResourceName}]++
	}
	for _, rr := range req.Resources {
		sr := kmsg.NewIncrementalAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		var err error
		if dup[configResource{rr.ResourceType, rr.ResourceName}] > 1 {
			err = errDuplicateResource
		} else {
			err = s.incrementalAlterConfigs(c, rr, req.ValidateOnly)
		}
		sr.ErrorCode, sr.ErrorMessage = kafkaCode(err), adminMessage(err)
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

func (s *Server) incrementalAlterConfigs(c *conn, rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	names := make([]string, 0, len(rr.Configs))
	var nulls []string
	for _, cfg := range rr.Configs {
		names = append(names, cfg.Name)
		if cfg.Op != kmsg.IncrementalAlterConfigOpDelete && cfg.Value == nil {
			nulls = append(nulls, cfg.Name)
		}
		if cfg.Op < kmsg.IncrementalAlterConfigOpSet || cfg.Op > kmsg.IncrementalAlterConfigOpSubtract {
			return apiErrorf(kerr.InvalidRequest, "unknown operation type %d for config %s", int8(cfg.Op), cfg.Name)
		}
	}
	if err := checkConfigKeys(names); err != nil {
		return err
	}
	if len(nulls) > 0 {
		return apiErrorf(kerr.InvalidRequest, "null value not supported for: %s", strings.Join(nulls, ", "))
	}
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		if err := cluster.ValidateTopicName(rr.ResourceName); err != nil {
			return err
		}
		t, ok := s.ctrl.Image().Topics[rr.ResourceName]
		if !ok {
			return apiErrorf(kerr.UnknownTopicOrPartition, "The topic '%s' does not exist.", rr.ResourceName) // Kafka's words
		}
		changes, err := s.topicChanges(t, rr.Configs)
		if err != nil {
			return err
		}
		// A concurrent change to the same list property between this read
		// and the commit wins over ours; Kafka's controller does the
		// read-modify-write atomically.
		err = s.ctrl.AlterTopicConfigs(rr.ResourceName, changes, false, validateOnly)
		s.logAlter(rr.ResourceName, names, validateOnly, err)
		return err
	case kmsg.ConfigResourceTypeBroker:
		changes, err := s.brokerChanges(rr.ResourceName, rr.Configs)
		if err != nil {
			return err
		}
		return s.alterBrokerConfigs(c, rr.ResourceName, changes, false, validateOnly)
	case kmsg.ConfigResourceTypeBrokerLogger:
		return apiErrorf(kerr.InvalidRequest, "changing log levels (BROKER_LOGGER) is not supported")
	case kmsg.ConfigResourceTypeGroupConfig:
		return s.alterGroupConfigs(rr, validateOnly)
	default:
		return apiErrorf(kerr.InvalidRequest, "unknown resource type %d", int8(rr.ResourceType))
	}
}

// topicChanges turns the operations into overrides to set or remove.
func (s *Server) topicChanges(t *cluster.Topic, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) ([]cluster.ConfigChange, error) {
	changes := make([]cluster.ConfigChange, 0, len(ops))
	var current map[string]config.Value
	for _, op := range ops {
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			changes = append(changes, cluster.ConfigChange{Name: op.Name, Value: op.Value})
		case kmsg.IncrementalAlterConfigOpDelete:
			changes = append(changes, cluster.ConfigChange{Name: op.Name})
		default: // APPEND, SUBTRACT
			d, ok := config.TopicDefs[op.Name]
			if !ok {
				return nil, apiErrorf(kerr.InvalidConfig, "unknown topic property %s", op.Name)
			}
			if d.Type != config.List {
				return nil, apiErrorf(kerr.InvalidConfig, "can't %s to key %s because its type is not LIST", op.Op, op.Name)
			}
			if current == nil {
				current = s.cfg.Topic(t.Configs)
			}
			v := appendOrSubtract(op, current[op.Name].Value)
			changes = append(changes, cluster.ConfigChange{Name: op.Name, Value: &v})
		}
	}
	return changes, nil
}

// brokerChanges turns the operations on a broker resource into dynamic
// configs to set or remove. APPEND and SUBTRACT start from the resource's
// dynamic value, else the value in force here, as Kafka's
// prepareIncrementalConfigs starts from the stored value, else the default.
func (s *Server) brokerChanges(resource string, ops []kmsg.IncrementalAlterConfigsRequestResourceConfig) ([]cluster.ConfigChange, error) {
	changes := make([]cluster.ConfigChange, 0, len(ops))
	for _, op := range ops {
		switch op.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			changes = append(changes, cluster.ConfigChange{Name: op.Name, Value: op.Value})
		case kmsg.IncrementalAlterConfigOpDelete:
			changes = append(changes, cluster.ConfigChange{Name: op.Name})
		default: // APPEND, SUBTRACT
			d, ok := config.BrokerDefs[op.Name]
			if !ok {
				return nil, apiErrorf(kerr.InvalidConfig, "Unknown config name: %s", op.Name)
			}
			if d.Type != config.List {
				return nil, apiErrorf(kerr.InvalidConfig, "Config value %s is not allowed for config key: %s", strings.ToLower(op.Op.String()), op.Name)
			}
			cur, ok := s.ctrl.Image().BrokerConfigs[resource][op.Name]
			if !ok {
				cur = s.cfg.String(op.Name)
			}
			v := appendOrSubtract(op, cur)
			changes = append(changes, cluster.ConfigChange{Name: op.Name, Value: &v})
		}
	}
	return changes, nil
}

// appendOrSubtract applies an APPEND or SUBTRACT of a LIST config to its
// current value: items already there are not added twice, items not there
// are not an error to subtract, as in Kafka.
func appendOrSubtract(op kmsg.IncrementalAlterConfigsRequestResourceConfig, current string) string {
	list := config.SplitList(current)
	for _, item := range config.SplitList(*op.Value) {
		i := slices.Index(list, item)
		switch {
		case op.Op == kmsg.IncrementalAlterConfigOpAppend && i < 0:
			list = append(list, item)
		case op.Op == kmsg.IncrementalAlterConfigOpSubtract && i >= 0:
			list = slices.Delete(list, i, i+1)
		}
	}
	return strings.Join(list, ",")
}
