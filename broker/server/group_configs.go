package server

import (
	"reflect"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/config"
)

// Group configs (KIP-848, KIP-932: share.auto.offset.reset,
// share.record.lock.duration.ms, consumer.session.timeout.ms, ...,
// broker/config/group_configs.go) are set with IncrementalAlterConfigs on
// a GROUP resource (kafka-configs.sh --entity-type groups), which a
// broker forwards to the active controller as any config change; the
// controller checks them against its broker's bounds and writes them to
// the metadata log (broker/cluster/group_configs.go). Every broker applies
// them from its image: the share manager and the consumer groups read a
// group's settings, so a coordinator or a partition leader that moves or
// restarts applies the same values. DescribeConfigs on a GROUP resource
// lists every group config, the group's own (GROUP_CONFIG) or the
// broker's default (DEFAULT_CONFIG).

// alterGroupConfigs serves IncrementalAlterConfigs on a GROUP resource.
// Only SET and DELETE apply (no group config is a list); the group need
// not exist, as in Kafka.
func (s *Server) alterGroupConfigs(rr kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	if rr.ResourceName == "" {
		return apiErrorf(kerr.InvalidRequest, "a group resource needs a group id")
	}
	changes := make([]cluster.ConfigChange, 0, len(rr.Configs))
	for _, cfg := range rr.Configs {
		if _, ok := config.GroupConfigDefs[cfg.Name]; !ok {
			return apiErrorf(kerr.InvalidConfig, "Unknown group config name: %s", cfg.Name) // Kafka's words
		}
		switch cfg.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			changes = append(changes, cluster.ConfigChange{Name: cfg.Name, Value: cfg.Value})
		case kmsg.IncrementalAlterConfigOpDelete:
			changes = append(changes, cluster.ConfigChange{Name: cfg.Name})
		default:
			return apiErrorf(kerr.InvalidConfig, "can't %s to key %s because its type is not LIST", cfg.Op, cfg.Name)
		}
	}
	err := s.ctrl.AlterGroupConfigs(rr.ResourceName, changes, s.cfg.ValidateGroupConfigs, validateOnly)
	if err == nil && !validateOnly {
		names := make([]string, 0, len(changes))
		for _, ch := range changes {
			names = append(names, ch.Name)
		}
		s.logger.Info("altered group configs", "group", rr.ResourceName, "configs", names)
	}
	return err
}

// groupConfigEntries describes every group config of group, sorted by
// name.
func (s *Server) groupConfigEntries(img *cluster.Image, group string) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	if group == "" {
		return nil, apiErrorf(kerr.InvalidRequest, "a group resource needs a group id")
	}
	set := img.GroupConfigs[group]
	var out []kmsg.DescribeConfigsResponseResourceConfig
	for _, name := range config.GroupConfigNames() {
		d := config.GroupConfigDefs[name]
		e := kmsg.NewDescribeConfigsResponseResourceConfig()
		e.Name, e.Documentation = name, strPtr(d.Doc)
		e.ConfigType = kmsg.ConfigTypeString
		if d.Values == nil {
			e.ConfigType = kmsg.ConfigTypeInt
		}
		v, own := set[name]
		if own {
			e.Source = kmsg.ConfigSourceGroupConfig
			syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			syn.Name, syn.Value, syn.Source = name, strPtr(v), kmsg.ConfigSourceGroupConfig
			e.ConfigSynonyms = append(e.ConfigSynonyms, syn)
		} else {
			v, e.Source = s.cfg.GroupDefault(name), kmsg.ConfigSourceDefaultConfig
		}
		e.Value = strPtr(v)
		if d.Broker != "" {
			// The broker config it falls back to, as Kafka lists it.
			syn := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
			syn.Name, syn.Value, syn.Source = d.Broker, strPtr(s.cfg.String(d.Broker)), kmsg.ConfigSourceDefaultConfig
			if s.cfg.IsSet(d.Broker) {
				syn.Source = kmsg.ConfigSourceStaticBrokerConfig
			}
			e.ConfigSynonyms = append(e.ConfigSynonyms, syn)
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// setGroupSettings evaluates the groups' configs once for the consumer
// groups' coordinator and the share manager, which both read them on
// every heartbeat. It parses the newest image's, not the image a caller
// was handed, under groupSettingsMu: then whichever call ends last sets
// configs at least as new as every image published before it started,
// so neither a publish racing the start (the call after Subscribe) nor
// two callbacks overtaking each other can leave an older copy in force.
func (s *Server) setGroupSettings() {
	s.groupSettingsMu.Lock()
	defer s.groupSettingsMu.Unlock()
	gs := s.groupSettings(s.ctrl.Image().GroupConfigs)
	s.groups.SetGroupSettings(gs)
	s.shares.SetGroupSettings(gs)
}

// groupSettings evaluates the groups' configs.
func (s *Server) groupSettings(all map[string]map[string]string) map[string]config.GroupSettings {
	out := make(map[string]config.GroupSettings, len(all))
	for g, vs := range all {
		out[g] = s.cfg.GroupSettingsOf(vs)
	}
	return out
}

// sameGroupConfigs says whether two images hold the same group configs
// map (an image change that did not touch them keeps the map).
func sameGroupConfigs(a, b map[string]map[string]string) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}
