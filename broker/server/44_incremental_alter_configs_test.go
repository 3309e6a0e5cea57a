package server

import (
	"fmt"
	"maps"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type incrementalOp struct {
	name  string
	op    kmsg.IncrementalAlterConfigOp
	value *string
}

func setOp(name, value string) incrementalOp {
	return incrementalOp{name, kmsg.IncrementalAlterConfigOpSet, strPtr(value)}
}

func incrementalReq(validateOnly bool, typ kmsg.ConfigResourceType, name string, ops ...incrementalOp) *kmsg.IncrementalAlterConfigsRequest {
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	req.ValidateOnly = validateOnly
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = typ, name
	for _, o := range ops {
		rc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		rc.Name, rc.Op, rc.Value = o.name, o.op, o.value
		rr.Configs = append(rr.Configs, rc)
	}
	req.Resources = append(req.Resources, rr)
	return req
}

func incrementalAlter(t *testing.T, s *Server, v int16, topic string, ops ...incrementalOp) kmsg.IncrementalAlterConfigsResponseResource {
	t.Helper()
	return admSend[*kmsg.IncrementalAlterConfigsResponse](t, s, incrementalReq(false, kmsg.ConfigResourceTypeTopic, topic, ops...), v).Resources[0]
}

func TestIncrementalAlterConfigs(t *testing.T) {
	s := startAdminBroker(t, nil)
	for v := int16(0); v <= 1; v++ {
		topic := fmt.Sprintf("incr-v%d", v)
		admCreateTopic(t, s, topic, 1, map[string]string{"retention.ms": "1000", "segment.bytes": "1048576", "max.message.bytes": "5000"})
		step := func(what string, want map[string]string, ops ...incrementalOp) {
			t.Helper()
			sr := incrementalAlter(t, s, v, topic, ops...)
			admWantCode(t, fmt.Sprintf("v%d %s", v, what), sr.ErrorCode, sr.ErrorMessage, nil)
			if got := topicOverrides(s, topic); !maps.Equal(got, want) {
				t.Errorf("v%d %s: overrides %v, want %v", v, what, got, want)
			}
		}
		// Only what is named changes.
		step("set and delete", map[string]string{"retention.ms": "2000", "max.message.bytes": "5000"},
			setOp("retention.ms", "2000"), incrementalOp{"segment.bytes", kmsg.IncrementalAlterConfigOpDelete, nil})
		// APPEND starts from the current value (delete, the default).
		step("append", map[string]string{"retention.ms": "2000", "max.message.bytes": "5000", "cleanup.policy": "delete,compact"},
			incrementalOp{"cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, strPtr("compact")})
		step("append present", map[string]string{"retention.ms": "2000", "max.message.bytes": "5000", "cleanup.policy": "delete,compact"},
			incrementalOp{"cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, strPtr("delete")})
		step("subtract", map[string]string{"retention.ms": "2000", "max.message.bytes": "5000", "cleanup.policy": "compact"},
			incrementalOp{"cleanup.policy", kmsg.IncrementalAlterConfigOpSubtract, strPtr("delete,absent")})
		// Deleting an override that is not there is fine.
		step("delete absent", map[string]string{"retention.ms": "2000", "max.message.bytes": "5000", "cleanup.policy": "compact"},
			incrementalOp{"segment.bytes", kmsg.IncrementalAlterConfigOpDelete, nil})

		// The change reaches the log: compacted topics refuse DeleteRecords.
		if sp := deleteRecordsOne(t, s, topic, 0, -1, 2); sp.ErrorCode != kerr.PolicyViolation.Code {
			t.Errorf("v%d: DeleteRecords on a topic now compacted: %v", v, kerr.ErrorForCode(sp.ErrorCode))
		}
		p, _ := s.parts.Get(topic, 0)
		if c := p.Log.Config(); c.MaxMessageBytes != 5000 {
			t.Errorf("v%d: log max message bytes %d", v, c.MaxMessageBytes)
		}

		// validate_only checks but changes nothing.
		before := topicOverrides(s, topic)
		resp := admSend[*kmsg.IncrementalAlterConfigsResponse](t, s, incrementalReq(true, kmsg.ConfigResourceTypeTopic, topic, setOp("retention.ms", "5")), v)
		admWantCode(t, "validate only", resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage, nil)
		resp = admSend[*kmsg.IncrementalAlterConfigsResponse](t, s, incrementalReq(true, kmsg.ConfigResourceTypeTopic, topic, setOp("retention.ms", "x")), v)
		admWantCode(t, "validate only, bad value", resp.Resources[0].ErrorCode, resp.Resources[0].ErrorMessage, kerr.InvalidConfig)
		if got := topicOverrides(s, topic); !maps.Equal(got, before) {
			t.Errorf("v%d: validate_only changed %v to %v", v, before, got)
		}
	}
}

func TestIncrementalAlterConfigsErrors(t *testing.T) {
	s := startAdminBroker(t, nil)
	admCreateTopic(t, s, "t", 1, map[string]string{"retention.ms": "1000"})
	for _, tc := range []struct {
		what string
		typ  kmsg.ConfigResourceType
		name string
		ops  []incrementalOp
		want *kerr.Error
		says []string
	}{
		{"bad value", kmsg.ConfigResourceTypeTopic, "t", []incrementalOp{setOp("retention.ms", "-7")}, kerr.InvalidConfig, []string{"retention.ms"}},
		{"unknown config", kmsg.ConfigResourceTypeTopic, "t", []incrementalOp{setOp("no.such.config", "1")}, kerr.InvalidConfig, []string{"no.such.config"}},
		{"delete unknown config", kmsg.ConfigResourceTypeTopic, "t", []incrementalOp{{"no.such.config", kmsg.IncrementalAlterConfigOpDelete, nil}}, kerr.InvalidConfig, []string{"no.such.config"}},
		{"append to a non-list", kmsg.ConfigResourceTypeTopic, "t", []incrementalOp{{"retention.ms", kmsg.IncrementalAlterConfigOpAppend, strPtr("1")}}, kerr.InvalidConfig, []string{"APPEND", "retention.ms", "not LIST"}},
		{"subtract from a non-list", kmsg.ConfigResourceTypeTopic, "t", []incrementalOp{{"retention.ms", kmsg.IncrementalAlterConfigOpSubtract, strPtr("1")}}, kerr.InvalidConfig, []string{"SUBTRACT"}},
		{"append a bad item", kmsg.ConfigResourceTypeTopic, "t", []incrementalOp{{"cleanup.policy", kmsg.IncrementalAlterConfigOpAppend, strPtr("shred")}}, kerr.InvalidConfig, []string{"shred"}},
		{"unknown op", kmsg.ConfigResourceTypeTopic, "t", []incrementalOp{{"retention.ms", 9, strPtr("1")}}, kerr.InvalidRequest, []string{"operation"}},
		{"null value", kmsg.ConfigResourceTypeTopic, "t", []incrementalOp{{"retention.ms", kmsg.IncrementalAlterConfigOpSet, nil}}, kerr.InvalidRequest, []string{"null value"}},
		{"key twice", kmsg.ConfigResourceTypeTopic, "t", []incrementalOp{setOp("retention.ms", "1"), setOp("retention.ms", "2")}, kerr.InvalidRequest, []string{"more than once"}},
		// One bad change fails the whole resource.
		{"one bad of two", kmsg.ConfigResourceTypeTopic, "t", []incrementalOp{setOp("retention.ms", "5"), setOp("segment.bytes", "1")}, kerr.InvalidConfig, []string{"segment.bytes"}},
		{"bad throttled replicas", kmsg.ConfigResourceTypeTopic, "t", []incrementalOp{setOp("leader.replication.throttled.replicas", "0-1")}, kerr.InvalidConfig, []string{"leader.replication.throttled.replicas", "[partitionId]:[brokerId]"}},
		{"unknown topic", kmsg.ConfigResourceTypeTopic, "missing", []incrementalOp{setOp("retention.ms", "1")}, kerr.UnknownTopicOrPartition, nil},
		{"broker config", kmsg.ConfigResourceTypeBroker, "1", []incrementalOp{setOp("log.retention.hours", "1")}, kerr.InvalidRequest, []string{"Cannot update these configs dynamically", "log.retention.hours"}},
		{"append to a non-list broker config", kmsg.ConfigResourceTypeBroker, "1", []incrementalOp{{"message.max.bytes", kmsg.IncrementalAlterConfigOpAppend, strPtr("1")}}, kerr.InvalidConfig, []string{"message.max.bytes"}},
		{"other broker", kmsg.ConfigResourceTypeBroker, "2", []incrementalOp{setOp("log.retention.hours", "1")}, kerr.InvalidRequest, []string{"expected 1"}},
		{"log levels", kmsg.ConfigResourceTypeBrokerLogger, "1", []incrementalOp{setOp("kafka", "DEBUG")}, kerr.InvalidRequest, []string{"BROKER_LOGGER"}},
		{"unknown resource type", 3, "x", nil, kerr.InvalidRequest, []string{"resource type 3"}},
	} {
		sr := admSend[*kmsg.IncrementalAlterConfigsResponse](t, s, incrementalReq(false, tc.typ, tc.name, tc.ops...), 1).Resources[0]
		admWantCode(t, tc.what, sr.ErrorCode, sr.ErrorMessage, tc.want)
		admWantMessage(t, tc.what, sr.ErrorMessage, tc.says...)
	}
	if got := topicOverrides(s, "t"); !maps.Equal(got, map[string]string{"retention.ms": "1000"}) {
		t.Errorf("failed requests changed the overrides to %v", got)
	}

	// The same resource twice: both refused.
	req := incrementalReq(false, kmsg.ConfigResourceTypeTopic, "t", setOp("retention.ms", "1"))
	req.Resources = append(req.Resources, req.Resources[0])
	for _, sr := range admSend[*kmsg.IncrementalAlterConfigsResponse](t, s, req, 1).Resources {
		admWantCode(t, "resource twice", sr.ErrorCode, sr.ErrorMessage, kerr.InvalidRequest)
	}
}
