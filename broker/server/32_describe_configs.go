package server

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/config"
)

// DescribeConfigs reports every property of a topic or of this broker with
// its value, where the value came from and (on request) the synonyms it
// could have come from, shaped as Kafka's ConfigHelper shapes them so that
// kafka-configs.sh, kadm and the AdminClient print what they print for Kafka.
//
// A broker property is read-only unless it is one of the dynamic broker
// configs (KIP-226) Tributary applies at run time; the replication quota
// rates are listed only once set, without a type and read-only, as Kafka
// lists them. The documentation is Tributary's own.
func (s *Server) handleDescribeConfigs(c *conn, req *kmsg.DescribeConfigsRequest) (*kmsg.DescribeConfigsResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	img := s.ctrl.Image()
	for _, rr := range req.Resources {
		sr := kmsg.NewDescribeConfigsResponseResource()
		sr.ResourceType, sr.ResourceName = rr.ResourceType, rr.ResourceName
		entries, err := s.describeResource(img, rr)
		if err != nil {
			sr.ErrorCode, sr.ErrorMessage = kafkaCode(err), adminMessage(err)
			resp.Resources = append(resp.Resources, sr)
			continue
		}
		wanted := map[string]bool{}
		for _, n := range rr.ConfigNames {
			wanted[n] = true
		}
		for _, e := range entries {
			// An empty or null key list asks for everything; unknown keys
			// are left out silently, as Kafka does.
			if len(wanted) > 0 && !wanted[e.Name] {
				continue
			}
			if !req.IncludeSynonyms {
				e.ConfigSynonyms = nil
			}
			if !req.IncludeDocumentation {
				e.Documentation = nil
			}
			sr.Configs = append(sr.Configs, e)
		}
		resp.Resources = append(resp.Resources, sr)
	}
	return resp, nil
}

// describeResource lists every entry of one resource, by name, with
// synonyms and documentation; the caller filters.
func (s *Server) describeResource(img *cluster.Image, rr kmsg.DescribeConfigsRequestResource) ([]kmsg.DescribeConfigsResponseResourceConfig, error) {
	switch rr.ResourceType {
	case kmsg.ConfigResourceTypeTopic:
		if err := cluster.ValidateTopicName(rr.ResourceName); err != nil {
			return nil, err
		}
		t, ok := img.Topics[rr.ResourceName]
		if !ok {
			return nil, apiErrorf(kerr.UnknownTopicOrPartition, "The topic '%s' does not exist.", rr.ResourceName) // Kafka's words
		}
		return s.topicConfigEntries(t.Configs), nil
	case kmsg.ConfigResourceTypeBroker:
		if rr.ResourceName == "" {
			return s.clusterDefaultEntries(), nil
		}
		if err := s.checkBrokerResource(rr.ResourceName); err != nil {
			return nil, err
		}
		return s.brokerConfigEntries(), nil
	case kmsg.ConfigResourceTypeGroupConfig:
		return s.groupConfigEntries(img, rr.ResourceName)
	default:
		return nil, apiErrorf(kerr.InvalidRequest, "resource type %s (%d) is not supported", rr.ResourceType, int8(rr.ResourceType))
	}
}

// topicConfigEntries describes every topic property of a topic with these
// overrides, sorted by name.
func (s *Server) topicConfigEntries(overrides map[string]string) []kmsg.DescribeConfigsResponseResourceConfig {
	vals := s.cfg.Topic(overrides)
	out := make([]kmsg.DescribeConfigsResponseResourceConfig, 0, len(vals))
	for _, v := range vals {
		out = append(out, configEntry(v.Def, v.Value, v.Null, kafkaTopicSynonyms(s.cfg, v.Def, overrides), false))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// kafkaTopicSynonyms is the synonym list Kafka reports for a topic
// property: the topic override, then the broker properties of its fallback
// chain, grouped by source (this broker's dynamic values, the cluster's
// dynamic defaults, the config file, the defaults), each group in chain
// order, with everything before the chain's first property dropped (Kafka's
// ConfigHelper.configSynonyms). The values are the broker properties' own,
// unscaled (log.retention.hours=168, not 604800000).
//
// The drop is why Kafka shows no synonyms for retention.ms, segment.ms,
// segment.jitter.ms and flush.ms when their *.ms broker property is unset:
// only the hours (or scheduler) fallback has a value, and it is not the
// first of the chain. config.Value.Synonyms lists that fallback, because it
// is where the value comes from; the wire shows what Kafka shows.
func kafkaTopicSynonyms(cfg *config.Broker, d config.Def, overrides map[string]string) []config.Synonym {
	var out []config.Synonym
	if v, ok := overrides[d.Name]; ok {
		out = append(out, config.Synonym{Name: d.Name, Value: v, Source: config.SourceTopic})
	}
	if len(d.Synonyms) == 0 {
		return out
	}
	chain := cfg.SynonymsOf(d.Synonyms)
	for len(chain) > 0 && chain[0].Name != d.Synonyms[0] {
		chain = chain[1:]
	}
	return append(out, chain...)
}

// brokerConfigEntries describes every broker property, sorted by name,
// with the synonyms Kafka gives it (config.Broker.BrokerSynonyms).
func (s *Server) brokerConfigEntries() []kmsg.DescribeConfigsResponseResourceConfig {
	vals := s.cfg.Values()
	out := make([]kmsg.DescribeConfigsResponseResourceConfig, 0, len(vals))
	for _, v := range vals {
		out = append(out, brokerEntry(v.Def, v.Value, v.Null, s.cfg.BrokerSynonyms(v.Def.Name)))
	}
	return out
}

// clusterDefaultEntries describes the cluster-wide dynamic configs (the
// BROKER resource ""): only those set, each with its dynamic default as
// its only synonym, as Kafka describes them.
func (s *Server) clusterDefaultEntries() []kmsg.DescribeConfigsResponseResourceConfig {
	defaults := s.cfg.ClusterDefaults()
	names := make([]string, 0, len(defaults))
	for n := range defaults {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]kmsg.DescribeConfigsResponseResourceConfig, 0, len(names))
	for _, n := range names {
		var syns []config.Synonym
		for _, syn := range s.cfg.BrokerSynonyms(n) {
			if syn.Source == config.SourceDynamicDefaultBroker {
				syns = append(syns, syn)
			}
		}
		out = append(out, brokerEntry(config.BrokerDefs[n], defaults[n], false, syns))
	}
	return out
}

// brokerEntry is one broker property's entry: read-only unless dynamic,
// and without a type for the properties Kafka's KafkaConfig lacks.
func brokerEntry(d config.Def, value string, null bool, syns []config.Synonym) kmsg.DescribeConfigsResponseResourceConfig {
	e := configEntry(d, value, null, syns, !d.Dynamic || d.DynamicOnly)
	if d.DynamicOnly {
		e.ConfigType = kmsg.ConfigTypeUnknown
	}
	return e
}

// configEntry builds one DescribeConfigs entry. Its source is its first
// synonym's (DEFAULT_CONFIG when there is none, as for a property without
// a default). Sensitive values are never sent, not even in synonyms.
func configEntry(d config.Def, value string, null bool, syns []config.Synonym, readOnly bool) kmsg.DescribeConfigsResponseResourceConfig {
	sensitive := d.Sensitive || d.Type == config.Password
	e := kmsg.NewDescribeConfigsResponseResourceConfig()
	e.Name, e.ReadOnly, e.IsSensitive = d.Name, readOnly, sensitive
	e.ConfigType = kmsg.ConfigType(d.Type)
	if !null && !sensitive {
		e.Value = strPtr(value)
	}
	e.Source = kmsg.ConfigSourceDefaultConfig
	if len(syns) > 0 {
		e.Source = kmsg.ConfigSource(syns[0].Source)
	}
	e.IsDefault = e.Source == kmsg.ConfigSourceDefaultConfig
	for _, syn := range syns {
		ks := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
		ks.Name, ks.Source = syn.Name, kmsg.ConfigSource(syn.Source)
		if !sensitive {
			ks.Value = strPtr(syn.Value)
		}
		e.ConfigSynonyms = append(e.ConfigSynonyms, ks)
	}
	e.Documentation = strPtr(d.Doc)
	return e
}

func strPtr(s string) *string { return &s }

// checkBrokerResource accepts a BROKER resource naming this node, as Kafka
// does; the empty name (the cluster-wide default) is the caller's case.
func (s *Server) checkBrokerResource(name string) error {
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return apiErrorf(kerr.InvalidRequest, "broker id must be an integer, but it is: %s", name)
	}
	if int32(id) != s.nodeID {
		return apiErrorf(kerr.InvalidRequest, "unexpected broker id, expected %d or empty string, but received %s", s.nodeID, name)
	}
	return nil
}

// apiError is a request refused with a Kafka error code and a message for
// the client.
type apiError struct {
	code *kerr.Error
	msg  string
}

func apiErrorf(code *kerr.Error, format string, args ...any) error {
	return &apiError{code: code, msg: fmt.Sprintf(format, args...)}
}

func (e *apiError) Error() string { return e.msg }
func (e *apiError) Unwrap() error { return e.code }

// adminMessage is the error message of an admin API's answer: a refused
// metadata change gives the controller's reason without the package
// prefix, which means nothing to a client.
func adminMessage(err error) *string {
	if ce, ok := cluster.IsError(err); ok {
		return strPtr(ce.Message)
	}
	return errorMessage(err)
}
