package server

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/config"
)

// kafkaConfigsCapture is one of broker/config/testdata/kafka-4.4-*-configs.json:
// a DescribeConfigs v4 answer of Apache Kafka 4.4.0.
type kafkaConfigsCapture struct {
	Configs []struct {
		Name       string  `json:"name"`
		Value      *string `json:"value"`
		Source     string  `json:"source"`
		ReadOnly   bool    `json:"read_only"`
		Sensitive  bool    `json:"sensitive"`
		ConfigType string  `json:"config_type"`
		Synonyms   []struct {
			Name   string  `json:"name"`
			Value  *string `json:"value"`
			Source string  `json:"source"`
		} `json:"synonyms"`
	} `json:"configs"`
}

// kafkaEntries reads a capture as the strings entryString prints.
func kafkaEntries(t *testing.T, file string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile("../config/testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var c kafkaConfigsCapture
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range c.Configs {
		var syns []string
		for _, s := range e.Synonyms {
			syns = append(syns, fmt.Sprintf("%s=%s %s", s.Name, admShow(s.Value), s.Source))
		}
		out[e.Name] = fmt.Sprintf("%s=%s source=%s read_only=%v sensitive=%v type=%s synonyms=[%s]",
			e.Name, admShow(e.Value), e.Source, e.ReadOnly, e.Sensitive, e.ConfigType, strings.Join(syns, ", "))
	}
	return out
}

// entryString prints an entry as kafkaEntries does.
func entryString(e kmsg.DescribeConfigsResponseResourceConfig) string {
	var syns []string
	for _, s := range e.ConfigSynonyms {
		syns = append(syns, fmt.Sprintf("%s=%s %s", s.Name, admShow(s.Value), s.Source))
	}
	return fmt.Sprintf("%s=%s source=%s read_only=%v sensitive=%v type=%s synonyms=[%s]",
		e.Name, admShow(e.Value), e.Source, e.ReadOnly, e.IsSensitive, e.ConfigType, strings.Join(syns, ", "))
}

func describeConfigsReq(typ kmsg.ConfigResourceType, name string, keys ...string) *kmsg.DescribeConfigsRequest {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms, req.IncludeDocumentation = true, true
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = typ, name, keys
	req.Resources = append(req.Resources, rr)
	return req
}

func describeTopic(t *testing.T, s *Server, topic string, keys ...string) map[string]kmsg.DescribeConfigsResponseResourceConfig {
	t.Helper()
	resp := admSend[*kmsg.DescribeConfigsResponse](t, s, describeConfigsReq(kmsg.ConfigResourceTypeTopic, topic, keys...), 4)
	rr := resp.Resources[0]
	admWantCode(t, "describe "+topic, rr.ErrorCode, rr.ErrorMessage, nil)
	out := map[string]kmsg.DescribeConfigsResponseResourceConfig{}
	for _, e := range rr.Configs {
		out[e.Name] = e
	}
	return out
}

// TestDescribeTopicConfigsLikeKafka compares the answer for a topic with
// all defaults, entry by entry, with Kafka 4.4.0's for the same topic.
func TestDescribeTopicConfigsLikeKafka(t *testing.T) {
	s := startAdminBroker(t, nil)
	admCreateTopic(t, s, "defaults", -1, nil)
	kafka := kafkaEntries(t, "kafka-4.4-topic-configs.json")
	got := describeTopic(t, s, "defaults")
	if len(got) != len(config.TopicDefs) {
		t.Errorf("%d entries, want one per topic property (%d)", len(got), len(config.TopicDefs))
	}
	for name, e := range got {
		want, ok := kafka[name]
		if !ok {
			t.Errorf("%s: Kafka has no such topic config", name)
			continue
		}
		if name == "min.insync.replicas" {
			// Kafka's storage format writes a cluster-wide dynamic default
			// for it (docs/kafka-reference.md); there are no dynamic
			// configs here, so the value is the static default.
			want = "min.insync.replicas=\"1\" source=DEFAULT_CONFIG read_only=false sensitive=false type=INT synonyms=[min.insync.replicas=\"1\" DEFAULT_CONFIG]"
		}
		if s := entryString(e); s != want {
			t.Errorf("\n got %s\nwant %s", s, want)
		}
		if e.Documentation == nil || *e.Documentation == "" {
			t.Errorf("%s: no documentation", name)
		}
	}
}

// TestDescribeTopicConfigsSources checks the sources and synonym chains
// when the topic overrides and the broker's config file set values.
func TestDescribeTopicConfigsSources(t *testing.T) {
	s := startAdminBroker(t, map[string]string{"log.retention.ms": "5000", "log.segment.bytes": "2000000", "log.roll.hours": "2"})
	admCreateTopic(t, s, "overridden", 1, map[string]string{"segment.bytes": "1048576", "cleanup.policy": "compact"})
	got := describeTopic(t, s, "overridden")
	for name, want := range map[string]string{
		// Override, then the broker file, then the default.
		"segment.bytes":  `segment.bytes="1048576" source=DYNAMIC_TOPIC_CONFIG read_only=false sensitive=false type=INT synonyms=[segment.bytes="1048576" DYNAMIC_TOPIC_CONFIG, log.segment.bytes="2000000" STATIC_BROKER_CONFIG, log.segment.bytes="1073741824" DEFAULT_CONFIG]`,
		"cleanup.policy": `cleanup.policy="compact" source=DYNAMIC_TOPIC_CONFIG read_only=false sensitive=false type=LIST synonyms=[cleanup.policy="compact" DYNAMIC_TOPIC_CONFIG, log.cleanup.policy="delete" DEFAULT_CONFIG]`,
		// The broker's log.retention.ms, then the hours default (raw, not
		// in milliseconds).
		"retention.ms": `retention.ms="5000" source=STATIC_BROKER_CONFIG read_only=false sensitive=false type=LONG synonyms=[log.retention.ms="5000" STATIC_BROKER_CONFIG, log.retention.hours="168" DEFAULT_CONFIG]`,
		// log.roll.hours is set but log.roll.ms is not: Kafka lists no
		// synonyms and says DEFAULT_CONFIG, though the value is 2 hours.
		"segment.ms": `segment.ms="7200000" source=DEFAULT_CONFIG read_only=false sensitive=false type=LONG synonyms=[]`,
	} {
		if e := entryString(got[name]); e != want {
			t.Errorf("\n got %s\nwant %s", e, want)
		}
	}
}

func TestDescribeConfigsVersionsAndOptions(t *testing.T) {
	s := startAdminBroker(t, nil)
	admCreateTopic(t, s, "t", 1, map[string]string{"retention.ms": "1000"})
	for v := int16(1); v <= 4; v++ {
		for _, opts := range []struct{ synonyms, docs bool }{{false, false}, {true, false}, {true, true}} {
			req := describeConfigsReq(kmsg.ConfigResourceTypeTopic, "t", "retention.ms", "no.such.config", "cleanup.policy")
			req.IncludeSynonyms, req.IncludeDocumentation = opts.synonyms, opts.docs
			resp := admSend[*kmsg.DescribeConfigsResponse](t, s, req, v)
			what := fmt.Sprintf("v%d synonyms=%v docs=%v", v, opts.synonyms, opts.docs)
			rr := resp.Resources[0]
			admWantCode(t, what, rr.ErrorCode, rr.ErrorMessage, nil)
			if rr.ResourceName != "t" || rr.ResourceType != kmsg.ConfigResourceTypeTopic {
				t.Errorf("%s: answered for %v %q", what, rr.ResourceType, rr.ResourceName)
			}
			// Unknown keys are left out; the order is by name.
			if len(rr.Configs) != 2 || rr.Configs[0].Name != "cleanup.policy" || rr.Configs[1].Name != "retention.ms" {
				t.Fatalf("%s: entries %+v", what, rr.Configs)
			}
			e := rr.Configs[1]
			if e.Value == nil || *e.Value != "1000" || e.Source != kmsg.ConfigSourceDynamicTopicConfig {
				t.Errorf("%s: retention.ms %s from %v", what, admShow(e.Value), e.Source)
			}
			if got := len(e.ConfigSynonyms) > 0; got != opts.synonyms {
				t.Errorf("%s: synonyms %v", what, e.ConfigSynonyms)
			}
			// Types and documentation exist from v3.
			if got := e.Documentation != nil; got != (opts.docs && v >= 3) {
				t.Errorf("%s: documentation %s", what, admShow(e.Documentation))
			}
			if wantType := map[bool]kmsg.ConfigType{true: kmsg.ConfigTypeLong}[v >= 3]; e.ConfigType != wantType {
				t.Errorf("%s: type %v", what, e.ConfigType)
			}
		}
	}
}

func TestDescribeBrokerConfigs(t *testing.T) {
	s := startAdminBroker(t, map[string]string{"num.partitions": "3"})
	resp := admSend[*kmsg.DescribeConfigsResponse](t, s, describeConfigsReq(kmsg.ConfigResourceTypeBroker, "1"), 4)
	rr := resp.Resources[0]
	admWantCode(t, "broker 1", rr.ErrorCode, rr.ErrorMessage, nil)
	listed := 0
	for _, d := range config.BrokerDefs {
		if !d.DynamicOnly {
			listed++
		}
	}
	if len(rr.Configs) != listed {
		t.Errorf("%d entries, want one per broker property but the unset quotas (%d)", len(rr.Configs), listed)
	}
	got := map[string]string{}
	for _, e := range rr.Configs {
		got[e.Name] = entryString(e)
		if d := config.BrokerDefs[e.Name]; e.ReadOnly == d.Dynamic {
			t.Errorf("%s: read-only %v, but dynamic %v", e.Name, e.ReadOnly, d.Dynamic)
		}
	}
	// Every property both know looks as in Kafka's capture (value, source,
	// read-only, type, synonyms), but for these.
	kafka := kafkaEntries(t, "kafka-4.4-broker-configs.json")
	differ := map[string]string{
		"auto.create.topics.enable": "startAdminBroker turns it off",
		"num.partitions":            "set in this test's broker",
		"min.insync.replicas":       "Kafka 4 stores a cluster default at format time (KIP-966); Tributary stores none",
		// Set in the captured broker's file, or here.
		"advertised.listeners": "", "controller.listener.names": "", "controller.quorum.voters": "",
		"listeners": "", "listener.security.protocol.map": "", "log.dirs": "", "node.id": "", "process.roles": "",
		// Defaults that differ on purpose (broker/config's brokerDefaultDifferences).
		"log.dir": "", "queued.max.request.bytes": "", "socket.receive.buffer.bytes": "",
		// Dynamic in Kafka, read once at start here (docs/cluster.md).
		"max.connections.per.ip.overrides":       "",
		"remote.list.offsets.request.timeout.ms": "",
		// Kafka's defaults are GSSAPI and JKS, which Tributary does not
		// have (docs/security.md).
		"sasl.enabled.mechanisms": "", "ssl.keystore.type": "", "ssl.truststore.type": "",
		// Dynamic in Kafka; without effect at run time here, so refused.
		"num.io.threads": "", "num.network.threads": "", "num.recovery.threads.per.data.dir": "",
	}
	for name := range kafka {
		if strings.HasPrefix(name, "ssl.") || strings.HasPrefix(name, "sasl.") {
			if _, ok := differ[name]; !ok {
				// Dynamic in Kafka, read at start here: compared
				// but for read-only.
				kafka[name] = strings.Replace(kafka[name], " read_only=false ", " read_only=true ", 1)
			}
		}
	}
	compared := 0
	for name, want := range kafka {
		if _, ok := differ[name]; ok || got[name] == "" {
			continue
		}
		compared++
		if got[name] != want {
			t.Errorf("\n got %s\nwant %s", got[name], want)
		}
	}
	if compared < 60 {
		t.Errorf("only %d properties compared with Kafka's", compared)
	}
	for name, want := range map[string]string{
		"num.partitions": `num.partitions="3" source=STATIC_BROKER_CONFIG read_only=true sensitive=false type=INT synonyms=[num.partitions="3" STATIC_BROKER_CONFIG, num.partitions="1" DEFAULT_CONFIG]`,
		"node.id":        `node.id="1" source=DEFAULT_CONFIG read_only=true sensitive=false type=INT synonyms=[node.id="1" DEFAULT_CONFIG]`,
	} {
		if got[name] != want {
			t.Errorf("\n got %s\nwant %s", got[name], want)
		}
	}

	// The cluster-wide default resource holds the dynamic defaults: none.
	resp = admSend[*kmsg.DescribeConfigsResponse](t, s, describeConfigsReq(kmsg.ConfigResourceTypeBroker, ""), 4)
	if rr := resp.Resources[0]; rr.ErrorCode != 0 || len(rr.Configs) != 0 {
		t.Errorf("cluster default: %v, %d entries", kerr.ErrorForCode(rr.ErrorCode), len(rr.Configs))
	}
}

func TestDescribeConfigsErrors(t *testing.T) {
	s := startAdminBroker(t, nil)
	admCreateTopic(t, s, "exists", 1, nil)
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, r := range []struct {
		typ  kmsg.ConfigResourceType
		name string
	}{
		{kmsg.ConfigResourceTypeTopic, "missing"},
		{kmsg.ConfigResourceTypeTopic, "bad topic!"},
		{kmsg.ConfigResourceTypeBroker, "2"},
		{kmsg.ConfigResourceTypeBroker, "one"},
		{kmsg.ConfigResourceTypeBrokerLogger, "1"},
		{kmsg.ConfigResourceTypeTopic, "exists"},
	} {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = r.typ, r.name
		req.Resources = append(req.Resources, rr)
	}
	resp := admSend[*kmsg.DescribeConfigsResponse](t, s, req, 4)
	want := []struct {
		err  *kerr.Error
		says string
	}{
		{kerr.UnknownTopicOrPartition, "missing"},
		{kerr.InvalidTopicException, "bad topic!"},
		{kerr.InvalidRequest, "expected 1"},
		{kerr.InvalidRequest, "must be an integer"},
		{kerr.InvalidRequest, "BROKER_LOGGER"},
		{nil, ""},
	}
	if len(resp.Resources) != len(want) {
		t.Fatalf("%d results", len(resp.Resources))
	}
	for i, w := range want {
		rr := resp.Resources[i]
		what := fmt.Sprintf("%v %q", rr.ResourceType, rr.ResourceName)
		admWantCode(t, what, rr.ErrorCode, rr.ErrorMessage, w.err)
		if w.err != nil {
			admWantMessage(t, what, rr.ErrorMessage, w.says)
			if len(rr.Configs) != 0 {
				t.Errorf("%s: %d entries with an error", what, len(rr.Configs))
			}
		}
	}
}

// TestSensitiveConfigsHidden covers what no property defined today is.
func TestSensitiveConfigsHidden(t *testing.T) {
	d := config.Def{Name: "ssl.key.password", Type: config.Password, Doc: "secret"}
	e := configEntry(d, "hunter2", false, []config.Synonym{{Name: d.Name, Value: "hunter2", Source: config.SourceStaticBroker}}, true)
	if e.Value != nil || !e.IsSensitive || e.ConfigSynonyms[0].Value != nil {
		t.Errorf("a password shows: %s", entryString(e))
	}
	d = config.Def{Name: "sasl.jaas.config", Type: config.String, Sensitive: true}
	e = configEntry(d, "secret", false, nil, true)
	if e.Value != nil || !e.IsSensitive {
		t.Errorf("a sensitive string shows: %s", entryString(e))
	}
}
