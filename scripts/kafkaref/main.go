//go:build ignore

// Command kafkaref captures reference data from a real Apache Kafka broker:
// its ApiVersions, the broker and default-topic configs (DescribeConfigs) and
// its answers to a set of bad requests. Tributary's tests are checked against
// the files it writes. See docs/kafka-reference.md, "Reference data".
//
//	go run scripts/kafkaref/main.go --bootstrap 127.0.0.1:29092 \
//	    [--bootstrap-noauto 127.0.0.1:29192] --out broker/config/testdata
//
// --bootstrap must be a fresh single-node broker with default settings
// (auto.create.topics.enable=true). --bootstrap-noauto, optional, is a second
// one started with auto.create.topics.enable=false; without it the
// "auto-create off" cases are skipped.
//
// Normal requests go through kgo.Client.Request with raw kmsg messages, pinned
// to a version with kgo.MaxVersions. Requests kgo refuses to send (versions
// outside the broker's range) are written on a plain TCP connection.
package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

const (
	kafkaVersion = "4.4.0"
	defaultTopic = "kafkaref-defaults"
	clientID     = "kafkaref"
)

var (
	bootstrap       = flag.String("bootstrap", "127.0.0.1:29092", "broker with default settings (auto.create.topics.enable=true)")
	bootstrapNoAuto = flag.String("bootstrap-noauto", "", "optional second broker started with auto.create.topics.enable=false")
	outDir          = flag.String("out", "broker/config/testdata", "output directory")
	timeout         = flag.Duration("timeout", 15*time.Second, "per-request timeout")
)

func main() {
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("kafkaref: ")
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		log.Fatal(err)
	}

	apiv, keys := captureApiVersions(*bootstrap)
	write("kafka-4.4-apiversions.json", apiv)

	topicID, createOK := createDefaultTopic(*bootstrap)
	write("kafka-4.4-broker-configs.json", describeConfigs(*bootstrap, kmsg.ConfigResourceTypeBroker, "1"))
	write("kafka-4.4-topic-configs.json", describeConfigs(*bootstrap, kmsg.ConfigResourceTypeTopic, defaultTopic))

	cases := []errorCase{createOK}
	cases = append(cases, createTopicsErrors(*bootstrap)...)
	cases = append(cases, produceErrors(*bootstrap, *bootstrapNoAuto, topicID)...)
	cases = append(cases, versionErrors(*bootstrap)...)
	cases = append(cases, minVersionProbe(*bootstrap, keys))
	write("kafka-4.4-errors.json", map[string]any{
		"kafka_version": kafkaVersion,
		"captured_by":   "scripts/kafkaref/main.go",
		"notes": []string{
			"error_name/error_description come from franz-go's kerr table for error_code.",
			"error_message is null both when Kafka sent a null message and when the version has no such field (Produce < v8, Metadata).",
			"Fields a response version does not carry are left out (e.g. log_start_offset below Produce v5).",
			"A case with \"connection_closed\": true got no response: the broker closed the TCP connection.",
			"Raw cases (transport \"tcp\") were written byte for byte on a new connection; response_hex is the response after the 4-byte size prefix.",
			"follow_up: an ApiVersions v0 sent on the same connection afterwards, showing whether the connection survived.",
		},
		"cases": cases,
	})
}

// ---------------------------------------------------------------------------
// clients

func client(addr string, pins map[int16]int16) *kgo.Client {
	vs := kversion.Stable()
	for k, v := range pins {
		vs.SetMaxKeyVersion(k, v)
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ClientID(clientID),
		kgo.SoftwareNameAndVersion("tributary-kafkaref", "1.0"),
		kgo.MaxVersions(vs),
		kgo.RequestRetries(0),
		kgo.DisableClientMetrics(),
	)
	if err != nil {
		log.Fatal(err)
	}
	return cl
}

func request[R kmsg.Response](addr string, pins map[int16]int16, req kmsg.Request) R {
	cl := client(addr, pins)
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	resp, err := cl.Request(ctx, req)
	if err != nil {
		log.Fatalf("%s v%d to %s: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), addr, err)
	}
	return resp.(R)
}

// ---------------------------------------------------------------------------
// a. ApiVersions v3

type apiKeyOut struct {
	Key  int16  `json:"key"`
	Name string `json:"name"`
	Min  int16  `json:"min"`
	Max  int16  `json:"max"`
}

func captureApiVersions(addr string) (any, []apiKeyOut) {
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName = "tributary-kafkaref"
	req.ClientSoftwareVersion = "1.0"
	resp := request[*kmsg.ApiVersionsResponse](addr, map[int16]int16{18: 3}, req)
	if resp.ErrorCode != 0 {
		log.Fatalf("ApiVersions: error %d", resp.ErrorCode)
	}
	keys := make([]apiKeyOut, 0, len(resp.ApiKeys))
	for _, k := range resp.ApiKeys {
		keys = append(keys, apiKeyOut{k.ApiKey, kmsg.NameForKey(k.ApiKey), k.MinVersion, k.MaxVersion})
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].Key < keys[j].Key })
	type sf struct {
		Name string `json:"name"`
		Min  int16  `json:"min_version"`
		Max  int16  `json:"max_version"`
	}
	type ff struct {
		Name string `json:"name"`
		Min  int16  `json:"min_version_level"`
		Max  int16  `json:"max_version_level"`
	}
	sup := []sf{}
	for _, f := range resp.SupportedFeatures {
		sup = append(sup, sf{f.Name, f.MinVersion, f.MaxVersion})
	}
	sort.Slice(sup, func(i, j int) bool { return sup[i].Name < sup[j].Name })
	fin := []ff{}
	for _, f := range resp.FinalizedFeatures {
		fin = append(fin, ff{f.Name, f.MinVersionLevel, f.MaxVersionLevel})
	}
	sort.Slice(fin, func(i, j int) bool { return fin[i].Name < fin[j].Name })
	return map[string]any{
		"kafka_version":      kafkaVersion,
		"captured_by":        "scripts/kafkaref/main.go",
		"request_version":    req.GetVersion(),
		"response_version":   resp.GetVersion(),
		"error_code":         resp.ErrorCode,
		"throttle_millis":    resp.ThrottleMillis,
		"api_keys":           keys,
		"supported_features": sup,
		// The epoch is the metadata log offset of the last feature change:
		// it differs between runs and is only informative.
		"finalized_features_epoch": resp.FinalizedFeaturesEpoch,
		"finalized_features":       fin,
		"zk_migration_ready":       resp.ZkMigrationReady,
	}, keys
}

// ---------------------------------------------------------------------------
// b. DescribeConfigs v4

type synonymOut struct {
	Name   string  `json:"name"`
	Value  *string `json:"value"`
	Source string  `json:"source"`
}

type configOut struct {
	Name          string       `json:"name"`
	Value         *string      `json:"value"`
	Source        string       `json:"source"`
	ReadOnly      bool         `json:"read_only"`
	Sensitive     bool         `json:"sensitive"`
	ConfigType    string       `json:"config_type"`
	Synonyms      []synonymOut `json:"synonyms"`
	Documentation *string      `json:"documentation"`
}

func describeConfigs(addr string, typ kmsg.ConfigResourceType, name string) any {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true
	req.IncludeDocumentation = true
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType = typ
	r.ResourceName = name
	r.ConfigNames = nil // all
	req.Resources = append(req.Resources, r)
	resp := request[*kmsg.DescribeConfigsResponse](addr, map[int16]int16{32: 4}, req)
	if len(resp.Resources) != 1 {
		log.Fatalf("DescribeConfigs %v %q: %d resources", typ, name, len(resp.Resources))
	}
	res := resp.Resources[0]
	if res.ErrorCode != 0 {
		log.Fatalf("DescribeConfigs %v %q: error %d %v", typ, name, res.ErrorCode, deref(res.ErrorMessage))
	}
	configs := make([]configOut, 0, len(res.Configs))
	for _, c := range res.Configs {
		syn := []synonymOut{}
		for _, s := range c.ConfigSynonyms {
			syn = append(syn, synonymOut{s.Name, s.Value, s.Source.String()})
		}
		configs = append(configs, configOut{
			Name: c.Name, Value: c.Value, Source: c.Source.String(), ReadOnly: c.ReadOnly,
			Sensitive: c.IsSensitive, ConfigType: c.ConfigType.String(), Synonyms: syn,
			Documentation: c.Documentation,
		})
	}
	sort.Slice(configs, func(i, j int) bool { return configs[i].Name < configs[j].Name })
	return map[string]any{
		"kafka_version": kafkaVersion,
		"captured_by":   "scripts/kafkaref/main.go",
		// kgo shards DescribeConfigs and sends a copy of req, so the version
		// sent is read from the response.
		"request_version":  resp.GetVersion(),
		"response_version": resp.GetVersion(),
		"resource_type":    typ.String(),
		"resource_type_id": int8(typ),
		"resource_name":    name,
		"notes": "include_synonyms=true, include_documentation=true, all config names. " +
			"Values of STATIC_BROKER_CONFIG entries (listeners, log.dirs, ...) come from the server.properties in docs/kafka-reference.md and differ between runs.",
		"configs": configs,
	}
}

// ---------------------------------------------------------------------------
// c. errors

type errorCase struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Broker      string `json:"broker"` // "auto-create on" / "auto-create off"
	Transport   string `json:"transport"`
	API         string `json:"api"`
	APIKey      int16  `json:"api_key"`
	Version     int16  `json:"request_version"`
	Request     any    `json:"request"`

	ConnectionClosed bool   `json:"connection_closed"`
	ResponseVersion  *int16 `json:"response_version,omitempty"`
	Response         any    `json:"response,omitempty"`
	ResponseHex      string `json:"response_hex,omitempty"`
	FollowUp         any    `json:"follow_up,omitempty"`
}

type errOut struct {
	Code        int16   `json:"error_code"`
	Name        string  `json:"error_name"`
	Description string  `json:"error_description,omitempty"`
	Message     *string `json:"error_message"`
}

func errInfo(code int16, msg *string) errOut {
	e := errOut{Code: code, Name: "NONE", Message: msg}
	if code != 0 {
		var ke *kerr.Error
		if errors.As(kerr.ErrorForCode(code), &ke) {
			e.Name, e.Description = ke.Message, ke.Description
		} else {
			e.Name = "UNKNOWN_SERVER_ERROR_CODE"
		}
	}
	return e
}

func brokerLabel(addr string) string {
	if addr == *bootstrapNoAuto {
		return "auto-create off"
	}
	return "auto-create on"
}

// createTopics sends one CreateTopics (latest version) with the given topics.
func createTopics(addr string, validateOnly bool, topics ...kmsg.CreateTopicsRequestTopic) (*kmsg.CreateTopicsRequest, *kmsg.CreateTopicsResponse) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	req.ValidateOnly = validateOnly
	req.Topics = topics
	return req, request[*kmsg.CreateTopicsResponse](addr, nil, req)
}

func topic(name string, partitions int32, rf int16, configs ...string) kmsg.CreateTopicsRequestTopic {
	t := kmsg.NewCreateTopicsRequestTopic()
	t.Topic, t.NumPartitions, t.ReplicationFactor = name, partitions, rf
	for i := 0; i+1 < len(configs); i += 2 {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = configs[i], kmsg.StringPtr(configs[i+1])
		t.Configs = append(t.Configs, c)
	}
	return t
}

func createTopicsCase(addr, name, desc string, req *kmsg.CreateTopicsRequest, resp *kmsg.CreateTopicsResponse) errorCase {
	type reqTopic struct {
		Topic             string            `json:"topic"`
		NumPartitions     int32             `json:"num_partitions"`
		ReplicationFactor int16             `json:"replication_factor"`
		Configs           map[string]string `json:"configs,omitempty"`
	}
	type respConfig struct {
		Name      string  `json:"name"`
		Value     *string `json:"value"`
		Source    string  `json:"source"`
		ReadOnly  bool    `json:"read_only"`
		Sensitive bool    `json:"sensitive"`
	}
	type respTopic struct {
		Topic string `json:"topic"`
		errOut
		ConfigErrorCode   int16        `json:"config_error_code"`
		NumPartitions     int32        `json:"num_partitions"`
		ReplicationFactor int16        `json:"replication_factor"`
		TopicIDZero       bool         `json:"topic_id_zero"`
		Configs           []respConfig `json:"configs"`
	}
	var rt []reqTopic
	for _, t := range req.Topics {
		m := map[string]string{}
		for _, c := range t.Configs {
			m[c.Name] = deref(c.Value)
		}
		rt = append(rt, reqTopic{t.Topic, t.NumPartitions, t.ReplicationFactor, m})
	}
	var out []respTopic
	for _, t := range resp.Topics {
		cs := []respConfig{}
		for _, c := range t.Configs {
			cs = append(cs, respConfig{c.Name, c.Value, kmsg.ConfigSource(c.Source).String(), c.ReadOnly, c.IsSensitive})
		}
		sort.Slice(cs, func(i, j int) bool { return cs[i].Name < cs[j].Name })
		out = append(out, respTopic{
			Topic: t.Topic, errOut: errInfo(t.ErrorCode, t.ErrorMessage), ConfigErrorCode: t.ConfigErrorCode,
			NumPartitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor,
			TopicIDZero: t.TopicID == [16]byte{}, Configs: cs,
		})
	}
	v := resp.GetVersion()
	return errorCase{
		Name: name, Description: desc, Broker: brokerLabel(addr), Transport: "kgo",
		API: "CreateTopics", APIKey: 19, Version: req.GetVersion(),
		Request:         map[string]any{"validate_only": req.ValidateOnly, "timeout_millis": req.TimeoutMillis, "topics": rt},
		ResponseVersion: &v,
		Response:        map[string]any{"throttle_millis": resp.ThrottleMillis, "topics": out},
	}
}

func createDefaultTopic(addr string) ([16]byte, errorCase) {
	req, resp := createTopics(addr, false, topic(defaultTopic, -1, -1))
	t := resp.Topics[0]
	if t.ErrorCode != 0 {
		log.Fatalf("creating %s: %v %s (run against a fresh broker)", defaultTopic, kerr.ErrorForCode(t.ErrorCode), deref(t.ErrorMessage))
	}
	c := createTopicsCase(addr, "create-topics-ok-defaults",
		"Baseline: CreateTopics with num_partitions=-1 and replication_factor=-1 (broker defaults), no configs. "+
			"The response carries the resolved partition count, replication factor and every topic config.",
		req, resp)
	return t.TopicID, c
}

func createTopicsErrors(addr string) []errorCase {
	type tc struct {
		name, desc string
		t          kmsg.CreateTopicsRequestTopic
	}
	tcs := []tc{
		{"create-topics-invalid-config-value", "Config value that does not parse: retention.ms=abc.",
			topic("kafkaref-bad-value", 1, 1, "retention.ms", "abc")},
		{"create-topics-unknown-config", "Unknown topic config name: no.such.config=1.",
			topic("kafkaref-unknown-config", 1, 1, "no.such.config", "1")},
		{"create-topics-rf-too-large", "replication_factor=3 on a one-broker cluster.",
			topic("kafkaref-rf3", 1, 3)},
		{"create-topics-invalid-name", `Illegal topic name "bad topic!" (space and '!').`,
			topic("bad topic!", 1, 1)},
		{"create-topics-zero-partitions", "num_partitions=0.",
			topic("kafkaref-zero-partitions", 0, 1)},
		{"create-topics-already-exists", "The topic created by the baseline case, again.",
			topic(defaultTopic, 1, 1)},
	}
	var out []errorCase
	for _, c := range tcs {
		req, resp := createTopics(addr, false, c.t)
		out = append(out, createTopicsCase(addr, c.name, c.desc, req, resp))
	}
	// All bad topics in one request: is each judged on its own?
	var all []kmsg.CreateTopicsRequestTopic
	for _, c := range tcs[:5] {
		all = append(all, c.t)
	}
	req, resp := createTopics(addr, true, all...)
	out = append(out, createTopicsCase(addr, "create-topics-all-bad-validate-only",
		"The five bad topics above in a single request with validate_only=true: one result per topic.", req, resp))
	return out
}

// --- record encoding ---

// batchV2 returns a magic-2 record batch holding the given values (null keys).
func batchV2(values ...string) []byte {
	now := time.Now().UnixMilli()
	var recs []byte
	for i, v := range values {
		var body []byte
		body = append(body, 0)              // attributes
		body = binary.AppendVarint(body, 0) // timestamp delta
		body = binary.AppendVarint(body, int64(i))
		body = binary.AppendVarint(body, -1) // null key
		body = binary.AppendVarint(body, int64(len(v)))
		body = append(body, v...)
		body = binary.AppendVarint(body, 0) // headers
		recs = binary.AppendVarint(recs, int64(len(body)))
		recs = append(recs, body...)
	}
	b := make([]byte, 0, 61+len(recs))
	b = binary.BigEndian.AppendUint64(b, 0)                     // base offset
	b = binary.BigEndian.AppendUint32(b, uint32(49+len(recs)))  // batch length
	b = binary.BigEndian.AppendUint32(b, 0xffffffff)            // partition leader epoch -1
	b = append(b, 2)                                            // magic
	b = binary.BigEndian.AppendUint32(b, 0)                     // crc, below
	b = binary.BigEndian.AppendUint16(b, 0)                     // attributes
	b = binary.BigEndian.AppendUint32(b, uint32(len(values)-1)) // last offset delta
	b = binary.BigEndian.AppendUint64(b, uint64(now))           // base timestamp
	b = binary.BigEndian.AppendUint64(b, uint64(now))           // max timestamp
	b = binary.BigEndian.AppendUint64(b, 0xffffffffffffffff)    // producer id -1
	b = binary.BigEndian.AppendUint16(b, 0xffff)                // producer epoch -1
	b = binary.BigEndian.AppendUint32(b, 0xffffffff)            // base sequence -1
	b = binary.BigEndian.AppendUint32(b, uint32(len(values)))   // record count
	b = append(b, recs...)
	crc := crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli))
	binary.BigEndian.PutUint32(b[17:], crc)
	return b
}

// corruptCRC flips the low bit of the stored CRC of a magic-2 batch.
func corruptCRC(b []byte) []byte {
	b = append([]byte(nil), b...)
	b[20] ^= 1
	return b
}

// messageSetV1 returns a legacy message set with one magic-1 message (null key).
func messageSetV1(value string) []byte {
	var m []byte
	m = append(m, 1, 0) // magic, attributes
	m = binary.BigEndian.AppendUint64(m, uint64(time.Now().UnixMilli()))
	m = binary.BigEndian.AppendUint32(m, 0xffffffff) // null key
	m = binary.BigEndian.AppendUint32(m, uint32(len(value)))
	m = append(m, value...)
	var b []byte
	b = binary.BigEndian.AppendUint64(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(4+len(m)))
	b = binary.BigEndian.AppendUint32(b, crc32.ChecksumIEEE(m))
	return append(b, m...)
}

func produceReq(topicName string, topicID [16]byte, records []byte) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks = -1
	req.TimeoutMillis = 10000
	t := kmsg.NewProduceRequestTopic()
	t.Topic, t.TopicID = topicName, topicID
	p := kmsg.NewProduceRequestTopicPartition()
	p.Partition = 0
	p.Records = records
	t.Partitions = append(t.Partitions, p)
	req.Topics = append(req.Topics, t)
	return req
}

func produceResponse(resp *kmsg.ProduceResponse) any {
	type part struct {
		Partition int32 `json:"partition"`
		errOut
		BaseOffset     int64  `json:"base_offset"`
		LogAppendTime  int64  `json:"log_append_time"`
		LogStartOffset *int64 `json:"log_start_offset,omitempty"` // v5+
		RecordErrors   any    `json:"record_errors,omitempty"`
	}
	type topic struct {
		Topic       string `json:"topic"`
		TopicIDZero bool   `json:"topic_id_zero"`
		Partitions  []part `json:"partitions"`
	}
	var ts []topic
	for _, t := range resp.Topics {
		var ps []part
		for _, p := range t.Partitions {
			var re any
			if len(p.ErrorRecords) > 0 {
				re = p.ErrorRecords
			}
			var lso *int64
			if resp.GetVersion() >= 5 {
				lso = &p.LogStartOffset
			}
			ps = append(ps, part{p.Partition, errInfo(p.ErrorCode, p.ErrorMessage), p.BaseOffset, p.LogAppendTime, lso, re})
		}
		ts = append(ts, topic{t.Topic, t.TopicID == [16]byte{}, ps})
	}
	return map[string]any{"throttle_millis": resp.ThrottleMillis, "topics": ts}
}

func produceCase(addr, name, desc string, version int16, topicName string, topicID [16]byte, records []byte, recDesc string) errorCase {
	req := produceReq(topicName, topicID, records)
	resp := request[*kmsg.ProduceResponse](addr, map[int16]int16{0: version}, req)
	if req.GetVersion() != version {
		log.Fatalf("%s: sent Produce v%d, wanted v%d", name, req.GetVersion(), version)
	}
	v := resp.GetVersion()
	r := map[string]any{"acks": req.Acks, "timeout_millis": req.TimeoutMillis, "partition": 0, "records": recDesc}
	if version >= 13 {
		r["topic_id"] = "(id of " + defaultTopic + " or random)"
	} else {
		r["topic"] = topicName
	}
	return errorCase{
		Name: name, Description: desc, Broker: brokerLabel(addr), Transport: "kgo",
		API: "Produce", APIKey: 0, Version: version, Request: r,
		ResponseVersion: &v, Response: produceResponse(resp),
	}
}

// metadataCase asks for one topic by name.
func metadataCase(addr, name, desc, topicName string, allowAuto bool) (errorCase, *kmsg.MetadataResponse) {
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(topicName)
	req.Topics = append(req.Topics, t)
	req.AllowAutoTopicCreation = allowAuto
	resp := request[*kmsg.MetadataResponse](addr, nil, req)
	type part struct {
		Partition int32 `json:"partition"`
		errOut
		Leader int32 `json:"leader"`
	}
	type topic struct {
		Topic string `json:"topic"`
		errOut
		TopicIDZero bool   `json:"topic_id_zero"`
		Partitions  []part `json:"partitions"`
	}
	var ts []topic
	for _, t := range resp.Topics {
		ps := []part{}
		for _, p := range t.Partitions {
			ps = append(ps, part{p.Partition, errInfo(p.ErrorCode, nil), p.Leader})
		}
		ts = append(ts, topic{deref(t.Topic), errInfo(t.ErrorCode, nil), t.TopicID == [16]byte{}, ps})
	}
	v := resp.GetVersion()
	return errorCase{
		Name: name, Description: desc, Broker: brokerLabel(addr), Transport: "kgo",
		API: "Metadata", APIKey: 3, Version: req.GetVersion(),
		Request:         map[string]any{"topics": []string{topicName}, "allow_auto_topic_creation": allowAuto},
		ResponseVersion: &v, Response: map[string]any{"topics": ts},
	}, resp
}

func first[A, B any](a A, _ B) A { return a }

func produceErrors(addr, noAuto string, topicID [16]byte) []errorCase {
	var out []errorCase
	good := batchV2("kafkaref-1", "kafkaref-2")
	bad := corruptCRC(batchV2("kafkaref-corrupt"))
	out = append(out,
		produceCase(addr, "produce-v3-ok", "Baseline: Produce v3, acks=-1, a valid magic-2 batch of 2 records to "+defaultTopic+"-0.",
			3, defaultTopic, [16]byte{}, good, "one magic-2 batch, 2 records, valid CRC"),
		produceCase(addr, "produce-v3-corrupt-crc", "Produce v3 with a magic-2 batch whose stored CRC has one bit flipped.",
			3, defaultTopic, [16]byte{}, bad, "one magic-2 batch, 1 record, CRC low bit flipped"),
		produceCase(addr, "produce-v12-corrupt-crc", "Same corrupt batch with Produce v12 (by name), which has error_message.",
			12, defaultTopic, [16]byte{}, bad, "one magic-2 batch, 1 record, CRC low bit flipped"),
		produceCase(addr, "produce-v13-corrupt-crc", "Same corrupt batch with Produce v13 (topic addressed by topic ID).",
			13, "", topicID, bad, "one magic-2 batch, 1 record, CRC low bit flipped"),
	)
	var randomID [16]byte
	rand.Read(randomID[:])
	out = append(out, produceCase(addr, "produce-v13-unknown-topic-id", "Produce v13 to a random topic ID.",
		13, "", randomID, good, "one magic-2 batch, 2 records, valid CRC"))

	brokers := []string{addr}
	if noAuto != "" {
		brokers = append(brokers, noAuto)
	} else {
		log.Print("no --bootstrap-noauto: skipping the auto-create off cases")
	}
	for _, b := range brokers {
		suffix := "autocreate-on"
		if b == noAuto {
			suffix = "autocreate-off"
		}
		unknown := "kafkaref-unknown-" + suffix
		out = append(out,
			produceCase(b, "produce-v3-unknown-topic-"+suffix, "Produce v3 by name to a topic that does not exist.",
				3, unknown, [16]byte{}, good, "one magic-2 batch, 2 records, valid CRC"),
			produceCase(b, "produce-v12-unknown-topic-"+suffix, "Produce v12 (latest by-name version) to a topic that does not exist.",
				12, unknown, [16]byte{}, good, "one magic-2 batch, 2 records, valid CRC"),
			first(metadataCase(b, "metadata-after-produce-unknown-topic-"+suffix,
				"Metadata (allow_auto_topic_creation=false) for the topic of the two Produce cases above: did Produce create it?",
				unknown, false)),
			first(metadataCase(b, "metadata-allow-auto-create-"+suffix,
				"Metadata with allow_auto_topic_creation=true for another unknown topic (auto-creation is done by Metadata, not Produce).",
				"kafkaref-meta-"+suffix, true)),
			metadataAfter(b, "metadata-after-allow-auto-create-"+suffix,
				"Metadata (allow_auto_topic_creation=false) for the topic of the previous case, polled for up to 5 s until it has no error: "+
					"was it created (asynchronously) by the previous request?",
				"kafkaref-meta-"+suffix),
		)
	}

	// Produce v0-v2: listed in ApiVersions but kgo will not send them below
	// the broker's minimum, so write them by hand.
	for v := int16(0); v <= 2; v++ {
		p := produceReq(defaultTopic, [16]byte{}, messageSetV1("kafkaref-legacy"))
		p.SetVersion(v)
		out = append(out, rawCase(addr, fmt.Sprintf("produce-v%d", v),
			fmt.Sprintf("Produce v%d (acks=-1) with a valid legacy message set (one magic-1 message) to %s-0.", v, defaultTopic),
			p, map[string]any{"acks": -1, "timeout_millis": 10000, "topic": defaultTopic, "partition": 0, "records": "one magic-1 message, valid CRC"}))
	}
	p2b := produceReq(defaultTopic, [16]byte{}, batchV2("kafkaref-v2-magic2"))
	p2b.SetVersion(2)
	out = append(out, rawCase(addr, "produce-v2-magic2-batch",
		"Produce v2 (acks=-1) carrying a valid magic-2 record batch instead of a legacy message set.",
		p2b, map[string]any{"acks": -1, "timeout_millis": 10000, "topic": defaultTopic, "partition": 0, "records": "one magic-2 batch, 1 record, valid CRC"}))
	return out
}

// metadataAfter polls Metadata (no auto-create) until the topic has no error
// or 5 s have passed, and records the last answer.
func metadataAfter(addr, name, desc, topicName string) errorCase {
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, resp := metadataCase(addr, name, desc, topicName, false)
		if len(resp.Topics) == 1 && resp.Topics[0].ErrorCode == 0 || time.Now().After(deadline) {
			return c
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// clientAPIs are the APIs of the summary table in docs/kafka-reference.md.
var clientAPIs = []int16{0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 18, 19, 20, 21, 22, 23, 32, 33, 35, 37, 44, 47, 60, 61, 75}

// minVersionProbe sends, for every client API, a default (empty) request at
// the minimum version ApiVersions lists and at the version below it, each on
// a new connection, and records whether the broker answered or closed the
// connection. Only the version check is of interest, not the answer.
func minVersionProbe(addr string, keys []apiKeyOut) errorCase {
	type probe struct {
		API       string `json:"api"`
		Key       int16  `json:"api_key"`
		Version   int16  `json:"version"`
		ListedMin int16  `json:"listed_min"`
		Outcome   string `json:"outcome"` // "answered" or "connection closed"
	}
	listed := map[int16]int16{}
	for _, k := range keys {
		listed[k.Key] = k.Min
	}
	var out []probe
	for _, k := range clientAPIs {
		min, ok := listed[k]
		if !ok {
			continue
		}
		vs := []int16{min}
		if min > 0 {
			vs = []int16{min - 1, min}
		}
		if k == 0 { // Produce: v0 is listed; find where it really starts.
			vs = []int16{0, 1, 2, 3}
		}
		for _, v := range vs {
			req := kmsg.RequestForKey(k)
			req.SetVersion(v)
			if p, ok := req.(*kmsg.ProduceRequest); ok {
				p.Acks = -1 // acks=0 gets no answer
				p.TimeoutMillis = 1000
			}
			rc := dialRaw(addr)
			_, closed := rc.call(req)
			rc.c.Close()
			o := "answered"
			if closed {
				o = "connection closed"
			}
			out = append(out, probe{kmsg.NameForKey(k), k, v, min, o})
		}
	}
	return errorCase{
		Name: "listed-min-version-probe",
		Description: "For each client API: a default-valued request at the min version listed by ApiVersions, and at min-1, " +
			"each on a new raw connection. \"connection closed\" = the broker rejected the version (it logs UnsupportedVersionException " +
			"and closes the socket). Only the version check matters here, not the answer's content.",
		Broker: brokerLabel(addr), Transport: "tcp", API: "(several)", APIKey: -1, Version: -1,
		Request: "default-valued request body", Response: out,
	}
}

func versionErrors(addr string) []errorCase {
	av := kmsg.NewPtrApiVersionsRequest()
	av.ClientSoftwareName, av.ClientSoftwareVersion = "tributary-kafkaref", "1.0"
	av.SetVersion(127)
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(127)
	return []errorCase{
		rawCase(addr, "apiversions-v127",
			"ApiVersions v127 (header v2, body encoded as the v3+ flexible format). "+
				"The response is decoded as ApiVersions v0 (the version Kafka answers an unsupported ApiVersions with).",
			av, map[string]any{"client_software_name": av.ClientSoftwareName, "client_software_version": av.ClientSoftwareVersion}),
		rawCase(addr, "metadata-v127", "Metadata v127 (any other API at an unsupported version), for contrast with ApiVersions v127.",
			md, map[string]any{"topics": nil}),
	}
}

// ---------------------------------------------------------------------------
// raw TCP

type rawConn struct {
	c    net.Conn
	corr int32
	f    *kmsg.RequestFormatter
}

func dialRaw(addr string) *rawConn {
	c, err := net.DialTimeout("tcp", addr, *timeout)
	if err != nil {
		log.Fatal(err)
	}
	return &rawConn{c: c, corr: 1000, f: kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))}
}

// call writes req and returns the response body after the correlation ID
// (header tags not stripped), or closed=true if the broker closed the
// connection instead of answering.
func (r *rawConn) call(req kmsg.Request) (body []byte, closed bool) {
	r.corr++
	r.c.SetDeadline(time.Now().Add(*timeout))
	if _, err := r.c.Write(r.f.AppendRequest(nil, req, r.corr)); err != nil {
		return nil, true
	}
	var size [4]byte
	if _, err := io.ReadFull(r.c, size[:]); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			log.Fatalf("raw %s v%d: no answer within %v", kmsg.NameForKey(req.Key()), req.GetVersion(), *timeout)
		}
		return nil, true // EOF or connection reset: the broker closed it
	}
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(r.c, buf); err != nil {
		log.Fatalf("raw %s v%d: short response: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	if got := int32(binary.BigEndian.Uint32(buf)); got != r.corr {
		log.Fatalf("raw: correlation id %d, want %d", got, r.corr)
	}
	return buf, false
}

// decode parses a response body (starting at the correlation ID) as version v.
// ApiVersions responses always use response header v0.
func decode(key, v int16, buf []byte) (kmsg.Response, error) {
	resp := kmsg.ResponseForKey(key)
	resp.SetVersion(v)
	b := buf[4:]
	if key != 18 && resp.IsFlexible() {
		if len(b) == 0 || b[0] != 0 {
			return nil, fmt.Errorf("unexpected response header tags")
		}
		b = b[1:]
	}
	return resp, resp.ReadFrom(b)
}

func rawCase(addr, name, desc string, req kmsg.Request, reqDesc any) errorCase {
	c := errorCase{
		Name: name, Description: desc, Broker: brokerLabel(addr), Transport: "tcp",
		API: kmsg.NameForKey(req.Key()), APIKey: req.Key(), Version: req.GetVersion(), Request: reqDesc,
	}
	rc := dialRaw(addr)
	defer rc.c.Close()
	buf, closed := rc.call(req)
	if closed {
		c.ConnectionClosed = true
	} else {
		c.ResponseHex = hex.EncodeToString(buf)
		// An ApiVersions at an unsupported version is answered as v0; else
		// try the request's version.
		v := req.GetVersion()
		if req.Key() == 18 && v > req.MaxVersion() {
			v = 0
		}
		resp, err := decode(req.Key(), v, buf)
		if err != nil {
			c.Response = map[string]any{"decode_error": fmt.Sprintf("as v%d: %v", v, err)}
		} else {
			c.ResponseVersion = &v
			c.Response = summarize(resp)
		}
	}
	// Is the connection still usable?
	f := kmsg.NewPtrApiVersionsRequest()
	f.SetVersion(0)
	fbuf, fclosed := rc.call(f)
	if fclosed {
		c.FollowUp = map[string]any{"connection_closed": true}
	} else {
		resp, err := decode(18, 0, fbuf)
		if err != nil {
			c.FollowUp = map[string]any{"decode_error": err.Error()}
		} else {
			c.FollowUp = map[string]any{"connection_closed": false, "error_code": resp.(*kmsg.ApiVersionsResponse).ErrorCode}
		}
	}
	return c
}

func summarize(resp kmsg.Response) any {
	switch r := resp.(type) {
	case *kmsg.ApiVersionsResponse:
		keys := []apiKeyOut{}
		for _, k := range r.ApiKeys {
			keys = append(keys, apiKeyOut{k.ApiKey, kmsg.NameForKey(k.ApiKey), k.MinVersion, k.MaxVersion})
		}
		return map[string]any{"error": errInfo(r.ErrorCode, nil), "num_api_keys": len(r.ApiKeys), "api_keys": keys}
	case *kmsg.ProduceResponse:
		return produceResponse(r)
	default:
		return r
	}
}

// ---------------------------------------------------------------------------

func write(name string, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		log.Fatal(err)
	}
	p := filepath.Join(*outDir, name)
	if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %s (%d bytes)", p, len(b)+1)
}

func deref(s *string) string {
	if s == nil {
		return "<null>"
	}
	return *s
}
