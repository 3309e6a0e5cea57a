package server

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
)

// AlterConfigs (the legacy, deprecated form) replaces a topic's overrides
// with exactly those given: an override not named is removed (KAFKA-554).
// IncrementalAlterConfigs (44_incremental_alter_configs.go) changes only what
// it names.
//
// Each resource succeeds or fails on its own. The checks Kafka's brokers do
// before forwarding to the controller come first (ConfigAdminManager's
// preprocessing: duplicate resources and keys, null values, resource types,
// broker ids), then the controller validates names and values and commits.
func (s *Server) handleAlterConfigs(c *conn, req *kmsg.AlterConfigsRequest) (*kmsg.AlterConfigsResponse, error) {
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	dup := map[configResource]int{}
	for _, rr := range req.Resources {
		dup[configResource{rr.ResourceType, rr.ResourceName}]++
	}
	for _, rr := range req.Resources {
		sr := kmsg.NewAlterConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		var err error
		if dup[configResource{rr.ResourceType, rr.ResourceName}] > 1 {
			err = errDuplicateResource
		} else {
			err = s.alterConfigs(c, rr, req.ValidateOnly)
		}
		sr.ErrorCode, sr.ErrorMessage = kafkaCode(err), adminMessage(err)
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

func (s *Server) alterConfigs(c *conn, rr kmsg.AlterConfigsRequestResource, validateOnly bool) error {
	names := make([]string, 0, len(rr.Configs))
	var nulls []string
	for _, cfg := range rr.Configs {
		names = append(names, cfg.Name)
		if cfg.Value == nil {
			nulls = append(nulls, cfg.Name)
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
		changes := make([]cluster.ConfigChange, 0, len(rr.Configs))
		for _, cfg := range rr.Configs {
			changes = append(changes, cluster.ConfigChange{Name: cfg.Name, Value: cfg.Value})
		}
		err := s.ctrl.AlterTopicConfigs(rr.ResourceName, changes, true, validateOnly)
		s.logAlter(rr.ResourceName, names, validateOnly, err)
		return err
	case kmsg.ConfigResourceTypeBroker:
		changes := make([]cluster.ConfigChange, 0, len(rr.Configs))
		for _, cfg := range rr.Configs {
			changes = append(changes, cluster.ConfigChange{Name: cfg.Name, Value: cfg.Value})
		}
		return s.alterBrokerConfigs(c, rr.ResourceName, changes, true, validateOnly)
	default:
		// BROKER_LOGGER too: the legacy API never supported it.
		return apiErrorf(kerr.InvalidRequest, "unknown resource type %d", int8(rr.ResourceType))
	}
}

// configResource identifies a resource of an alter request.
type configResource struct {
	typ  kmsg.ConfigResourceType
	name string
}

var errDuplicateResource = apiErrorf(kerr.InvalidRequest, "each resource must appear at most once")

// checkConfigKeys refuses a resource that names a config twice.
func checkConfigKeys(names []string) error {
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return apiErrorf(kerr.InvalidRequest, "config %s is listed more than once", n)
		}
		seen[n] = true
	}
	return nil
}

// alterBrokerConfigs changes the dynamic configs (KIP-226) of a broker
// resource: this broker (its node id) or every broker (""). The active
// controller validates and commits them; each broker applies them from the
// metadata (docs/cluster.md).
//
// A broker checks that the resource names itself, as Kafka's does before it
// forwards: the Admin client sends a broker's configs to that broker. A
// request forwarded to the active controller names the broker that
// received it, not the controller, so it is checked for its form only
// (the controller's check in Kafka; this was kafka-reassign-partitions
// --verify's "unexpected broker id, expected 2 ... received 3").
func (s *Server) alterBrokerConfigs(c *conn, name string, changes []cluster.ConfigChange, replace, validateOnly bool) error {
	if name != "" && !s.controllerListeners[c.listener] {
		if err := s.checkBrokerResource(name); err != nil {
			return err
		}
	}
	err := s.ctrl.AlterBrokerConfigs(name, changes, replace, validateOnly)
	if err == nil && !validateOnly {
		names := make([]string, 0, len(changes))
		for _, ch := range changes {
			names = append(names, ch.Name)
		}
		s.logger.Info("altered dynamic broker configs", "broker", name, "configs", names)
	}
	return err
}

func (s *Server) logAlter(topic string, names []string, validateOnly bool, err error) {
	if err == nil && !validateOnly {
		s.logger.Info("altered topic configs", "topic", topic, "configs", names)
	}
}
