package server

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type alterResource struct {
	typ     kmsg.ConfigResourceType
	name    string
	configs [][2]*string // name, value
}

func alterConfigsReq(validateOnly bool, resources ...alterResource) *kmsg.AlterConfigsRequest {
	req := kmsg.NewPtrAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	for _, r := range resources {
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = r.typ, r.name
		for _, c := range r.configs {
			rc := kmsg.NewAlterConfigsRequestResourceConfig()
			rc.Name, rc.Value = *c[0], c[1]
			rr.Configs = append(rr.Configs, rc)
		}
		req.Resources = append(req.Resources, rr)
	}
	return req
}

func cfgKV(name, value string) [2]*string { return [2]*string{strPtr(name), strPtr(value)} }

func topicResource(name string, configs ...[2]*string) alterResource {
	return alterResource{kmsg.ConfigResourceTypeTopic, name, configs}
}

// topicOverrides are the topic's overrides in the metadata.
func topicOverrides(s *Server, topic string) map[string]string {
	return maps.Clone(s.ctrl.Image().Topics[topic].Configs)
}

func TestAlterConfigsReplaces(t *testing.T) {
	s := startAdminBroker(t, nil)
	for v := int16(0); v <= 2; v++ {
		topic := fmt.Sprintf("replace-v%d", v)
		admCreateTopic(t, s, topic, 1, map[string]string{"retention.ms": "1000", "segment.bytes": "1048576"})

		// validate_only changes nothing.
		resp := admSend[*kmsg.AlterConfigsResponse](t, s, alterConfigsReq(true, topicResource(topic, cfgKV("retention.ms", "2000"))), v)
		admWantCode(t, fmt.Sprintf("v%d validate only", v), resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage, nil)
		if got := topicOverrides(s, topic); got["retention.ms"] != "1000" || got["segment.bytes"] != "1048576" {
			t.Errorf("v%d: validate_only changed the overrides to %v", v, got)
		}

		// Every override not named goes.
		resp = admSend[*kmsg.AlterConfigsResponse](t, s, alterConfigsReq(false, topicResource(topic, cfgKV("retention.ms", "2000"), cfgKV("cleanup.policy", "compact,delete"))), v)
		sr := resp.Resources[0]
		admWantCode(t, fmt.Sprintf("v%d", v), sr.ErrorCode, sr.ErrorMessage, nil)
		if sr.ResourceName != topic || sr.ResourceType != kmsg.ConfigResourceTypeTopic {
			t.Errorf("v%d: answered for %v %q", v, sr.ResourceType, sr.ResourceName)
		}
		want := map[string]string{"retention.ms": "2000", "cleanup.policy": "compact,delete"}
		if got := topicOverrides(s, topic); !maps.Equal(got, want) {
			t.Errorf("v%d: overrides %v, want %v", v, got, want)
		}
		// The log runs with the new settings.
		p, _ := s.parts.Get(topic, 0)
		if c := p.Log.Config(); c.RetentionMs != 2*time.Second || c.SegmentBytes != 1<<30 {
			t.Errorf("v%d: log config retention %v, segment bytes %d", v, c.RetentionMs, c.SegmentBytes)
		}
		// DescribeConfigs shows it.
		if e := describeTopic(t, s, topic, "segment.bytes")["segment.bytes"]; e.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("v%d: removed override still reported from %v", v, e.Source)
		}

		// No configs at all removes every override.
		admSend[*kmsg.AlterConfigsResponse](t, s, alterConfigsReq(false, topicResource(topic)), v)
		if got := topicOverrides(s, topic); len(got) != 0 {
			t.Errorf("v%d: overrides %v after an empty replace", v, got)
		}
	}
}

func TestAlterConfigsErrors(t *testing.T) {
	s := startAdminBroker(t, nil)
	admCreateTopic(t, s, "t", 1, map[string]string{"retention.ms": "1000"})
	admCreateTopic(t, s, "dup", 1, nil)
	broker := func(name string, configs ...[2]*string) alterResource {
		return alterResource{kmsg.ConfigResourceTypeBroker, name, configs}
	}
	for _, tc := range []struct {
		what string
		r    []alterResource
		want *kerr.Error
		says []string
	}{
		{"bad value", []alterResource{topicResource("t", cfgKV("retention.ms", "abc"))}, kerr.InvalidConfig, []string{"retention.ms", "abc"}},
		{"unknown config", []alterResource{topicResource("t", cfgKV("no.such.config", "1"))}, kerr.InvalidConfig, []string{"no.such.config"}},
		{"broker-level name", []alterResource{topicResource("t", cfgKV("log.retention.ms", "1"))}, kerr.InvalidConfig, []string{"log.retention.ms"}},
		{"null value", []alterResource{topicResource("t", [2]*string{strPtr("retention.ms"), nil})}, kerr.InvalidRequest, []string{"null value", "retention.ms"}},
		{"key twice", []alterResource{topicResource("t", cfgKV("retention.ms", "1"), cfgKV("retention.ms", "2"))}, kerr.InvalidRequest, []string{"retention.ms", "more than once"}},
		{"unknown topic", []alterResource{topicResource("missing", cfgKV("retention.ms", "1"))}, kerr.UnknownTopicOrPartition, []string{"missing"}},
		{"invalid topic name", []alterResource{topicResource("bad topic!")}, kerr.InvalidTopicException, nil},
		{"resource twice", []alterResource{topicResource("dup"), topicResource("dup")}, kerr.InvalidRequest, []string{"at most once"}},
		{"static broker config", []alterResource{broker("1", cfgKV("num.partitions", "3"))}, kerr.InvalidRequest, []string{"Cannot update these configs dynamically", "num.partitions"}},
		{"static cluster default", []alterResource{broker("", cfgKV("num.partitions", "3"))}, kerr.InvalidRequest, []string{"Cannot update these configs dynamically"}},
		{"bad dynamic value", []alterResource{broker("1", cfgKV("message.max.bytes", "abc"))}, kerr.InvalidRequest, []string{"message.max.bytes", "abc"}},
		{"unknown broker config", []alterResource{broker("", cfgKV("no.such.config", "1"))}, kerr.InvalidRequest, []string{"no.such.config"}},
		// 0 alone would cut every client and the replication off.
		{"thread pools", []alterResource{broker("1", cfgKV("num.io.threads", "4"), cfgKV("num.network.threads", "2"), cfgKV("num.recovery.threads.per.data.dir", "4"))}, kerr.InvalidRequest, []string{"Cannot update these configs dynamically: Set(num.io.threads, num.network.threads, num.recovery.threads.per.data.dir)"}},
		{"no connections per ip", []alterResource{broker("", cfgKV("max.connections.per.ip", "0"))}, kerr.InvalidRequest, []string{"max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides"}},
		{"other broker", []alterResource{broker("7", cfgKV("num.partitions", "3"))}, kerr.InvalidRequest, []string{"expected 1"}},
		{"no broker change", []alterResource{broker("1")}, nil, nil},
		{"broker logger", []alterResource{{kmsg.ConfigResourceTypeBrokerLogger, "1", [][2]*string{cfgKV("kafka", "DEBUG")}}}, kerr.InvalidRequest, []string{"resource type"}},
	} {
		for _, validateOnly := range []bool{false, true} {
			resp := admSend[*kmsg.AlterConfigsResponse](t, s, alterConfigsReq(validateOnly, tc.r...), 2)
			if len(resp.Resources) != len(tc.r) {
				t.Fatalf("%s: %d results", tc.what, len(resp.Resources))
			}
			for _, sr := range resp.Resources {
				what := fmt.Sprintf("%s (validate only %v)", tc.what, validateOnly)
				admWantCode(t, what, sr.ErrorCode, sr.ErrorMessage, tc.want)
				admWantMessage(t, what, sr.ErrorMessage, tc.says...)
			}
		}
	}
	if got := topicOverrides(s, "t"); !maps.Equal(got, map[string]string{"retention.ms": "1000"}) {
		t.Errorf("failed requests changed the overrides to %v", got)
	}
}

// TestAlterConfigsIndependentResources checks that one resource's failure
// leaves the others of the request alone.
func TestAlterConfigsIndependentResources(t *testing.T) {
	s := startAdminBroker(t, nil)
	admCreateTopic(t, s, "a", 1, nil)
	admCreateTopic(t, s, "b", 1, nil)
	resp := admSend[*kmsg.AlterConfigsResponse](t, s, alterConfigsReq(false,
		topicResource("a", cfgKV("retention.ms", "-5")),
		topicResource("b", cfgKV("retention.ms", "60000"))), 1)
	admWantCode(t, "a", resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage, kerr.InvalidConfig)
	admWantCode(t, "b", resp.Resources[1].ErrorCode, resp.Resources[1].ErrorMessage, nil)
	if got := topicOverrides(s, "b"); got["retention.ms"] != "60000" {
		t.Errorf("b: %v", got)
	}
	if got := topicOverrides(s, "a"); len(got) != 0 {
		t.Errorf("a: %v", got)
	}
}
