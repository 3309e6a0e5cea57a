package server

import (
	"context"
	"crypto/rand"
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/config"
)

// TestDynamicBrokerConfigs sets per-broker and cluster-default dynamic
// configs, checks how DescribeConfigs reports them for the broker, the
// defaults and a topic, that they take effect at once (message.max.bytes
// refuses a batch), and that they survive a restart.
func TestDynamicBrokerConfigs(t *testing.T) {
	dir := t.TempDir()
	start := func() *Server {
		cfg, err := config.ParseBroker(map[string]string{"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": dir,
			"auto.create.topics.enable": "false", "message.max.bytes": "2000000", "replica.fetch.max.bytes": "2000000"})
		if err != nil {
			t.Fatal(err)
		}
		s := New(cfg, Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
		return s
	}
	stop := func(s *Server) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	}
	s := start()
	admCreateTopic(t, s, "t", 1, nil)

	alter := func(name string, ops ...incrementalOp) {
		t.Helper()
		sr := admSend[*kmsg.IncrementalAlterConfigsResponse](t, s, incrementalReq(false, kmsg.ConfigResourceTypeBroker, name, ops...), 1).Resources[0]
		admWantCode(t, "alter broker "+name, sr.ErrorCode, sr.ErrorMessage, nil)
	}
	alter("", setOp("log.retention.ms", "3600000"), setOp("message.max.bytes", "500000"))
	alter("1", setOp("message.max.bytes", "100000"), setOp("follower.replication.throttled.rate", "1000000"))

	describe := func(name string, keys ...string) map[string]string {
		t.Helper()
		rr := admSend[*kmsg.DescribeConfigsResponse](t, s, describeConfigsReq(kmsg.ConfigResourceTypeBroker, name, keys...), 4).Resources[0]
		admWantCode(t, "describe broker "+name, rr.ErrorCode, rr.ErrorMessage, nil)
		out := map[string]string{}
		for _, e := range rr.Configs {
			out[e.Name] = entryString(e)
		}
		return out
	}
	want := func(what string, got map[string]string, want map[string]string) {
		t.Helper()
		if len(got) != len(want) {
			t.Errorf("%s: %d entries, want %d: %v", what, len(got), len(want), got)
		}
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s:\n got %s\nwant %s", what, got[k], w)
			}
		}
	}
	want("broker 1", describe("1", "message.max.bytes", "log.retention.ms", "follower.replication.throttled.rate"), map[string]string{
		"message.max.bytes": `message.max.bytes="100000" source=DYNAMIC_BROKER_CONFIG read_only=false sensitive=false type=INT synonyms=[message.max.bytes="100000" DYNAMIC_BROKER_CONFIG, message.max.bytes="500000" DYNAMIC_DEFAULT_BROKER_CONFIG, message.max.bytes="2000000" STATIC_BROKER_CONFIG, message.max.bytes="1048588" DEFAULT_CONFIG]`,
		"log.retention.ms":  `log.retention.ms="3600000" source=DYNAMIC_DEFAULT_BROKER_CONFIG read_only=false sensitive=false type=LONG synonyms=[log.retention.ms="3600000" DYNAMIC_DEFAULT_BROKER_CONFIG, log.retention.hours="168" DEFAULT_CONFIG]`,
		// Kafka knows the quotas only as dynamic configs: no type, read-only.
		"follower.replication.throttled.rate": `follower.replication.throttled.rate="1000000" source=DYNAMIC_BROKER_CONFIG read_only=true sensitive=false type=UNKNOWN synonyms=[follower.replication.throttled.rate="1000000" DYNAMIC_BROKER_CONFIG]`,
	})
	want("cluster default", describe(""), map[string]string{
		"message.max.bytes": `message.max.bytes="500000" source=DYNAMIC_DEFAULT_BROKER_CONFIG read_only=false sensitive=false type=INT synonyms=[message.max.bytes="500000" DYNAMIC_DEFAULT_BROKER_CONFIG]`,
		"log.retention.ms":  `log.retention.ms="3600000" source=DYNAMIC_DEFAULT_BROKER_CONFIG read_only=false sensitive=false type=LONG synonyms=[log.retention.ms="3600000" DYNAMIC_DEFAULT_BROKER_CONFIG]`,
	})
	topic := describeTopic(t, s, "t", "retention.ms", "max.message.bytes")
	if e := topic["retention.ms"]; admShow(e.Value) != `"3600000"` || e.Source != kmsg.ConfigSourceDynamicDefaultBrokerConfig {
		t.Errorf("topic: %s", entryString(e))
	}
	if e := topic["max.message.bytes"]; admShow(e.Value) != `"100000"` || e.Source != kmsg.ConfigSourceDynamicBrokerConfig {
		t.Errorf("topic: %s", entryString(e))
	}

	// In force at once: the hosted log refuses a batch over 100000 bytes,
	// and takes it once the per-broker value is removed (500000 then).
	produce := func(s *Server) error {
		cl := admClient(t, s, kgo.ProducerBatchMaxBytes(1<<20), kgo.RecordRetries(1))
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		value := make([]byte, 200_000)
		rand.Read(value) // incompressible
		return cl.ProduceSync(ctx, &kgo.Record{Topic: "t", Value: value}).FirstErr()
	}
	if err := produce(s); !errors.Is(err, kerr.MessageTooLarge) {
		t.Errorf("200 kB batch under message.max.bytes=100000: %v, want MESSAGE_TOO_LARGE", err)
	}
	alter("1", incrementalOp{"message.max.bytes", kmsg.IncrementalAlterConfigOpDelete, nil})
	if err := produce(s); err != nil {
		t.Errorf("200 kB batch under the default's message.max.bytes=500000: %v", err)
	}

	// The configs live in the metadata log: a restart keeps them.
	stop(s)
	s = start()
	defer stop(s)
	want("broker 1 after a restart", describe("1", "message.max.bytes", "follower.replication.throttled.rate"), map[string]string{
		"message.max.bytes":                   `message.max.bytes="500000" source=DYNAMIC_DEFAULT_BROKER_CONFIG read_only=false sensitive=false type=INT synonyms=[message.max.bytes="500000" DYNAMIC_DEFAULT_BROKER_CONFIG, message.max.bytes="2000000" STATIC_BROKER_CONFIG, message.max.bytes="1048588" DEFAULT_CONFIG]`,
		"follower.replication.throttled.rate": `follower.replication.throttled.rate="1000000" source=DYNAMIC_BROKER_CONFIG read_only=true sensitive=false type=UNKNOWN synonyms=[follower.replication.throttled.rate="1000000" DYNAMIC_BROKER_CONFIG]`,
	})
	if got := s.cfg.Int("message.max.bytes"); got != 500000 {
		t.Errorf("after a restart the broker runs with message.max.bytes=%d, want 500000", got)
	}

	// The legacy AlterConfigs replaces a resource's dynamic configs.
	sr := admSend[*kmsg.AlterConfigsResponse](t, s, alterConfigsReq(false, alterResource{kmsg.ConfigResourceTypeBroker, "", [][2]*string{cfgKV("log.cleaner.threads", "2")}}), 2).Resources[0]
	admWantCode(t, "legacy alter of the cluster default", sr.ErrorCode, sr.ErrorMessage, nil)
	want("cluster default after a legacy alter", describe(""), map[string]string{
		"log.cleaner.threads": `log.cleaner.threads="2" source=DYNAMIC_DEFAULT_BROKER_CONFIG read_only=false sensitive=false type=INT synonyms=[log.cleaner.threads="2" DYNAMIC_DEFAULT_BROKER_CONFIG]`,
	})
}
