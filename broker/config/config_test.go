package config

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
)

// kafkaDescribe is a DescribeConfigs capture from Apache Kafka 4.4.0
// (testdata/kafka-4.4-*-configs.json, see docs/kafka-reference.md).
type kafkaDescribe struct {
	Configs []kafkaConfig `json:"configs"`
}

type kafkaConfig struct {
	Name       string         `json:"name"`
	Value      *string        `json:"value"`
	Source     string         `json:"source"`
	ReadOnly   bool           `json:"read_only"`
	Sensitive  bool           `json:"sensitive"`
	ConfigType string         `json:"config_type"`
	Synonyms   []kafkaSynonym `json:"synonyms"`
}

type kafkaSynonym struct {
	Name   string  `json:"name"`
	Value  *string `json:"value"`
	Source string  `json:"source"`
}

func loadKafka(t *testing.T, file string) map[string]kafkaConfig {
	t.Helper()
	raw, err := os.ReadFile("testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var d kafkaDescribe
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	out := make(map[string]kafkaConfig, len(d.Configs))
	for _, c := range d.Configs {
		out[c.Name] = c
	}
	return out
}

var kafkaTypeNames = map[Type]string{
	Bool: "BOOLEAN", String: "STRING", Int: "INT", Short: "SHORT", Long: "LONG",
	Double: "DOUBLE", List: "LIST", Password: "PASSWORD",
}

var kafkaSourceNames = map[Source]string{
	SourceTopic: "TOPIC_CONFIG", SourceDynamicBroker: "DYNAMIC_BROKER_CONFIG",
	SourceStaticBroker: "STATIC_BROKER_CONFIG", SourceDefault: "DEFAULT_CONFIG",
}

// kafkaMissingTopicConfigs are Kafka 4.4 topic configs Tributary does not
// define (yet), so CreateTopics and AlterConfigs refuse them.
var kafkaMissingTopicConfigs = map[string]string{
	"compression.gzip.level":              "compression.type other than producer is not implemented (KIP-390)",
	"compression.lz4.level":               "compression.type other than producer is not implemented (KIP-390)",
	"compression.zstd.level":              "compression.type other than producer is not implemented (KIP-390)",
	"errors.deadletterqueue.group.enable": "share groups (KIP-932) are not implemented",
	"max.decompressed.message.bytes":      "batches are stored as sent, never decompressed",
	"remote.copy.lag.bytes":               "tiered storage (KIP-405) is not implemented",
	"remote.copy.lag.ms":                  "tiered storage (KIP-405) is not implemented",
	"remote.log.copy.disable":             "tiered storage (KIP-405) is not implemented",
	"remote.log.delete.on.disable":        "tiered storage (KIP-405) is not implemented",
}

// kafkaDynamicDefaults are configs whose value in the capture comes from a
// cluster-wide dynamic default that Kafka's storage format wrote, not from
// Kafka's static default (docs/kafka-reference.md). Tributary has no
// dynamic configs: the same value comes from the static default.
var kafkaDynamicDefaults = map[string]bool{"min.insync.replicas": true}

// TestTopicConfigsMatchKafka checks every topic property Tributary defines
// against a topic Kafka 4.4.0 created with all defaults: the value, the
// type, where the value comes from, and the synonym chain as Kafka reports
// it (the broker properties it falls back to, with their defaults).
func TestTopicConfigsMatchKafka(t *testing.T) {
	kafka := loadKafka(t, "kafka-4.4-topic-configs.json")
	b, err := ParseBroker(nil)
	if err != nil {
		t.Fatal(err)
	}
	vals := b.Topic(nil)
	for name, d := range TopicDefs {
		t.Run(name, func(t *testing.T) {
			k, ok := kafka[name]
			if !ok {
				t.Fatalf("Kafka 4.4 has no topic config %s", name)
			}
			v := vals[name]
			if k.Value == nil || v.Null || v.Value != *k.Value {
				t.Errorf("value %q (null %v), Kafka's %s", v.Value, v.Null, show(k.Value))
			}
			if kafkaTypeNames[d.Type] != k.ConfigType {
				t.Errorf("type %s, Kafka's %s", kafkaTypeNames[d.Type], k.ConfigType)
			}
			if d.Sensitive != k.Sensitive || k.ReadOnly {
				t.Errorf("sensitive %v, Kafka's %v (read only %v)", d.Sensitive, k.Sensitive, k.ReadOnly)
			}
			wantSource := k.Source
			if kafkaDynamicDefaults[name] {
				wantSource = "DEFAULT_CONFIG"
			}
			if got := kafkaSourceNames[v.Source]; got != wantSource {
				t.Errorf("source %s, Kafka's %s", got, wantSource)
			}
			var want []string
			for _, s := range k.Synonyms {
				if kafkaDynamicDefaults[name] && s.Source == "DYNAMIC_DEFAULT_BROKER_CONFIG" {
					continue
				}
				want = append(want, s.Name+"="+show(s.Value)+" "+s.Source)
			}
			if got := kafkaChain(d); !reflect.DeepEqual(got, want) {
				t.Errorf("synonyms as Kafka reports them:\n got %q\nwant %q\n(Synonyms %v)", got, want, d.Synonyms)
			}
		})
	}
	var missing []string
	for name := range kafka {
		if _, ok := TopicDefs[name]; !ok {
			if _, known := kafkaMissingTopicConfigs[name]; !known {
				missing = append(missing, name)
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("Kafka 4.4 topic configs neither defined nor listed in kafkaMissingTopicConfigs: %v", missing)
	}
}

// kafkaChain is the synonym list Kafka's DescribeConfigs gives a topic
// property without an override on a broker with nothing set: the defaults of
// the broker fallbacks, dropping those before the first of the chain.
// Kafka drops them because its synonym list is meant to start at the
// topic's own broker property (KafkaConfig's synonym groups): retention.ms
// falls back to log.retention.hours, but that default is not listed, since
// log.retention.ms (the first) has none.
//
// config.Value.Synonyms differs on purpose: it lists where the value comes
// from, log.retention.hours scaled to milliseconds. broker/server shapes
// DescribeConfigs with Kafka's rule (kafkaTopicSynonyms), and its tests
// compare the wire answer with the same capture.
func kafkaChain(d Def) []string {
	var out []string
	for _, syn := range d.Synonyms {
		bd, ok := BrokerDefs[syn]
		if !ok || bd.NoDefault {
			continue
		}
		if len(out) == 0 && syn != d.Synonyms[0] {
			continue
		}
		out = append(out, syn+"="+bd.Default+" DEFAULT_CONFIG")
	}
	return out
}

func show(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

// brokerDefaultDifferences are broker properties whose default is not
// Kafka's, on purpose.
var brokerDefaultDifferences = map[string]string{
	"node.id":                        "Kafka has no default; a single node can start without one",
	"process.roles":                  "Kafka has no default; Tributary runs combined by default",
	"listeners":                      "loopback until told otherwise, not every interface",
	"log.dir":                        "a directory that survives a reboot, not /tmp/kafka-logs; a single path (Kafka 4.4 types it LIST)",
	"listener.security.protocol.map": "adds CONTROLLER:PLAINTEXT so a combined node needs no map; a list, as Kafka parses it",
	"controller.quorum.voters":       "null rather than an empty list: unset means a single-node quorum",
	"socket.receive.buffer.bytes":    "the kernel's autotuning rather than a fixed 100 KiB window, faster for produce (docs/broker.md)",
	"ssl.keystore.type":              "PEM is the only keystore Tributary reads (docs/security.md)",
	"ssl.truststore.type":            "PEM is the only truststore Tributary reads",
	"sasl.enabled.mechanisms":        "GSSAPI is not offered; SCRAM needs no setup beyond its users",
	"queued.max.request.bytes":       "512 MiB rather than unbounded, so that clients cannot make the broker allocate what they like (docs/operations.md)",
}

// notDynamic are the properties Kafka 4.4 changes at run time (KIP-226)
// and Tributary does not.
var notDynamic = map[string]string{
	"listeners":                              "a listener is bound once, at start",
	"listener.security.protocol.map":         "a listener is bound once, at start",
	"max.connections.per.ip.overrides":       "its host names are resolved once, at start",
	"num.io.threads":                         "no pool: requests run on their connection's goroutine",
	"remote.list.offsets.request.timeout.ms": "read when the tier manager starts, with the other tier settings",
	"num.network.threads":                    "no pool: a goroutine per connection",
	"num.recovery.threads.per.data.dir":      "used only while the logs open at start, before the metadata is read",
}

func init() {
	// Kafka reconfigures a listener's SSL and SASL settings through
	// dynamic broker configs; Tributary reads them at start and reloads
	// the certificate and trust files when they change (docs/security.md).
	for _, k := range []string{"sasl.enabled.mechanisms", "sasl.mechanism.inter.broker.protocol", "ssl.cipher.suites",
		"ssl.client.auth", "ssl.enabled.protocols", "ssl.endpoint.identification.algorithm", "ssl.key.password",
		"ssl.keystore.certificate.chain", "ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.type",
		"ssl.protocol", "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.type"} {
		notDynamic[k] = "security settings are read at start; the files they name are reloaded on change"
	}
}

// brokerOnly are broker properties Kafka 4.4 does not have.
var brokerOnly = map[string]string{
	"cluster.id":                                         "Kafka reads it only from meta.properties (kafka-storage format); Tributary also takes it as a property",
	"schema.registry.listeners":                          "the in-process schema registry (registry/); Confluent's registry calls it listeners",
	"schema.registry.authentication.method":              "the in-process registry's basic auth; Confluent's authentication.method",
	"schema.registry.kafkastore.security.protocol":       "the in-process registry's client properties; Confluent's kafkastore.*",
	"schema.registry.kafkastore.sasl.mechanism":          "the in-process registry's client properties; Confluent's kafkastore.*",
	"schema.registry.kafkastore.sasl.jaas.config":        "the in-process registry's client properties; Confluent's kafkastore.*",
	"schema.registry.kafkastore.ssl.truststore.location": "the in-process registry's client properties; Confluent's kafkastore.*",
	"super.users":                              "StandardAuthorizer's setting: Kafka reads it from the broker's file but lists it among no broker configs",
	"allow.everyone.if.no.acl.found":           "StandardAuthorizer's setting, like super.users",
	"rsm.config.storage.uri":                   "the remote storage manager's own setting, under Kafka's rsm.config. prefix (docs/tiered-storage.md)",
	"rsm.config.storage.hdfs.user":             "the remote storage manager's own setting, like rsm.config.storage.uri",
	"rsm.config.storage.cleanup.grace.ms":      "the remote storage manager's own setting, like rsm.config.storage.uri",
	"rsm.config.fetch.chunk.cache.size":        "the remote storage manager's own setting, like rsm.config.storage.uri",
	"rsm.config.storage.hdfs.io.timeout.ms":    "the remote storage manager's own setting, like rsm.config.storage.uri",
	"rsm.config.fetch.chunk.timeout.ms":        "the remote storage manager's own setting, like rsm.config.storage.uri",
	"tributary.tier.pass.timeout.ms":           "Kafka's copier threads have no deadline; Tributary bounds a partition's tier pass (docs/tiered-storage.md)",
	"tributary.tier.delete.records.timeout.ms": "Kafka's DeleteRecords waits on its own RemoteLogManager; Tributary bounds the wait for the tier (docs/tiered-storage.md)",
}

// TestBrokerDefaultsMatchKafka checks every broker property's default and
// type against Kafka 4.4.0's. Kafka reports a property's default as its
// DEFAULT_CONFIG synonym, or as its value when nothing overrides it.
func TestBrokerDefaultsMatchKafka(t *testing.T) {
	kafka := loadKafka(t, "kafka-4.4-broker-configs.json")
	for name, d := range BrokerDefs {
		k, ok := kafka[name]
		if d.DynamicOnly {
			if ok {
				t.Errorf("%s: Kafka 4.4 lists it, so it is not dynamic-only", name)
			}
			continue
		}
		if !ok {
			if _, allowed := brokerOnly[name]; !allowed {
				t.Errorf("%s: Kafka 4.4 has no broker config of that name", name)
			}
			continue
		}
		if _, allowed := notDynamic[name]; !allowed && d.Dynamic == k.ReadOnly {
			t.Errorf("%s: dynamic %v, Kafka's %v", name, d.Dynamic, !k.ReadOnly)
		}
		if _, allowed := brokerDefaultDifferences[name]; allowed {
			continue
		}
		var kdef *string
		for _, s := range k.Synonyms {
			if s.Source == "DEFAULT_CONFIG" {
				kdef = s.Value
			}
		}
		if len(k.Synonyms) == 0 {
			kdef = k.Value
		}
		def := "<null>"
		if !d.NoDefault {
			def = d.Default
		}
		if def != show(kdef) {
			t.Errorf("%s: default %s, Kafka's %s", name, def, show(kdef))
		}
		if kafkaTypeNames[d.Type] != k.ConfigType {
			t.Errorf("%s: type %s, Kafka's %s", name, kafkaTypeNames[d.Type], k.ConfigType)
		}
		if (d.Sensitive || d.Type == Password) != k.Sensitive {
			t.Errorf("%s: sensitive %v, Kafka's %v", name, d.Sensitive, k.Sensitive)
		}
	}
	for name := range brokerDefaultDifferences {
		if _, ok := BrokerDefs[name]; !ok {
			t.Errorf("brokerDefaultDifferences lists %s, which is not defined", name)
		}
	}
}

func TestParseBrokerRejects(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props map[string]string
		// want are substrings of the error, each naming what is wrong.
		want []string
	}{
		{"unknown name", map[string]string{"log.retention.hourz": "1"}, []string{"unknown property log.retention.hourz"}},
		{"topic-level name on the broker", map[string]string{"retention.ms": "1"}, []string{"unknown property retention.ms"}},
		{"not a number", map[string]string{"num.partitions": "three"}, []string{`invalid value "three" for num.partitions: not a number`}},
		{"out of int range", map[string]string{"num.partitions": "3000000000"}, []string{`invalid value "3000000000" for num.partitions: out of range`}},
		{"below minimum", map[string]string{"num.partitions": "0"}, []string{`invalid value "0" for num.partitions: must be at least 1`}},
		{"not a bool", map[string]string{"auto.create.topics.enable": "yes"}, []string{`invalid value "yes" for auto.create.topics.enable: must be true or false`}},
		{"not a double", map[string]string{"log.cleaner.min.cleanable.ratio": "half"}, []string{`invalid value "half" for log.cleaner.min.cleanable.ratio: not a number`}},
		{"double out of bounds", map[string]string{"log.cleaner.min.cleanable.ratio": "1.5"}, []string{"log.cleaner.min.cleanable.ratio: must be between 0 and 1"}},
		{"not one of", map[string]string{"compression.type": "brotli"}, []string{`invalid value "brotli" for compression.type: must be one of producer`}},
		{"bad list item", map[string]string{"log.cleanup.policy": "delete,shred"}, []string{`invalid value "delete,shred" for log.cleanup.policy: "shred" must be one of delete, compact`}},
		{"bad listener", map[string]string{"listeners": "PLAINTEXT://127.0.0.1:99999"}, []string{`listener "PLAINTEXT://127.0.0.1:99999": port "99999" is not 0-65535`}},
		{"cross check", map[string]string{"message.max.bytes": "2000000"}, []string{"replica.fetch.max.bytes=1048576 must be at least message.max.bytes=2000000"}},
		{"no connections per ip", map[string]string{"max.connections.per.ip": "0"}, []string{"max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set."}},
		// The tier's deadlines (docs/tiered-storage.md): none may be 0,
		// which would give up on every remote call.
		{"tier pass timeout", map[string]string{"tributary.tier.pass.timeout.ms": "500"}, []string{`invalid value "500" for tributary.tier.pass.timeout.ms: must be at least 1000`}},
		{"tier delete records timeout", map[string]string{"tributary.tier.delete.records.timeout.ms": "0"}, []string{`invalid value "0" for tributary.tier.delete.records.timeout.ms: must be at least 1`}},
		{"chunk timeout", map[string]string{"rsm.config.fetch.chunk.timeout.ms": "30s"}, []string{`invalid value "30s" for rsm.config.fetch.chunk.timeout.ms: not a number`}},
		{"list offsets timeout", map[string]string{"remote.list.offsets.request.timeout.ms": "-1"}, []string{`invalid value "-1" for remote.list.offsets.request.timeout.ms: must be at least 1`}},
		{"hdfs io timeout", map[string]string{"rsm.config.storage.hdfs.io.timeout.ms": "10"}, []string{`invalid value "10" for rsm.config.storage.hdfs.io.timeout.ms: must be at least 1000`}},
		{"all at once", map[string]string{"no.such.thing": "1", "num.partitions": "x", "log.segment.bytes": "1"},
			[]string{"unknown property no.such.thing", "num.partitions", `invalid value "1" for log.segment.bytes: must be at least 14`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ParseBroker(tc.props)
			if err == nil {
				t.Fatalf("accepted %v: %+v", tc.props, b)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestParseBrokerAccepts(t *testing.T) {
	b, err := ParseBroker(map[string]string{"num.partitions": "3", "log.retention.hours": "24", "log.cleanup.policy": "compact,delete"})
	if err != nil {
		t.Fatal(err)
	}
	// 0 with overrides, as Kafka allows: only the IPs listed may connect.
	if _, err := ParseBroker(map[string]string{"max.connections.per.ip": "0", "max.connections.per.ip.overrides": "10.0.0.1:5"}); err != nil {
		t.Errorf("max.connections.per.ip=0 with overrides: %v", err)
	}
	if b.Int("num.partitions") != 3 {
		t.Errorf("num.partitions %d", b.Int("num.partitions"))
	}
	v := b.Topic(nil)["retention.ms"]
	if v.Value != "86400000" || v.Source != SourceStaticBroker {
		t.Errorf("retention.ms from log.retention.hours=24: %+v", v)
	}
	v = b.Topic(map[string]string{"retention.ms": "1000"})["retention.ms"]
	if v.Value != "1000" || v.Source != SourceTopic || v.Synonyms[0].Name != "retention.ms" {
		t.Errorf("retention.ms override: %+v", v)
	}
}

func TestValidateTopicOverrides(t *testing.T) {
	for _, tc := range []struct {
		overrides map[string]string
		want      string // "" accepts
	}{
		{map[string]string{"retention.ms": "-1", "cleanup.policy": "compact,delete"}, ""},
		{map[string]string{"cleanup.policy": ""}, ""}, // no cleanup at all, as Kafka 4 allows
		{map[string]string{"retention.ms": "abc"}, `invalid value "abc" for retention.ms: not a number`},
		{map[string]string{"retention.ms": "-2"}, `invalid value "-2" for retention.ms: must be at least -1`},
		{map[string]string{"no.such.config": "1"}, "unknown topic property no.such.config"},
		{map[string]string{"log.retention.ms": "1"}, "unknown topic property log.retention.ms"},
		{map[string]string{"remote.storage.enable": "true", "local.retention.bytes": "-2", "local.retention.ms": "60000"}, ""},
		{map[string]string{"local.retention.bytes": "-3"}, `invalid value "-3" for local.retention.bytes: must be at least -2`},
		{map[string]string{"remote.storage.enable": "true", "cleanup.policy": "compact"}, "not supported with cleanup.policy=compact"},
	} {
		err := ValidateTopicOverrides(tc.overrides)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.overrides, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want %q", tc.overrides, err, tc.want)
		}
	}
}
