package server

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/kwire"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Helpers of the admin API tests (20_delete_topics_test.go and the others
// of that family).

// startAdminBroker is startBroker with auto-creation off, so that a topic
// a test did not create never appears behind its back.
func startAdminBroker(t *testing.T, props map[string]string) *Server {
	t.Helper()
	all := map[string]string{"auto.create.topics.enable": "false"}
	for k, v := range props {
		all[k] = v
	}
	return startBroker(t, all)
}

// send sends req at exactly version on a new connection and decodes the
// answer, so that every version a handler advertises can be exercised
// (kgo would pick the highest version both sides support).
func admSend[Resp kmsg.Response](t *testing.T, s *Server, req kmsg.Request, version int16) Resp {
	t.Helper()
	req.SetVersion(version)
	buf := kwire.AppendRequest(nil, req, 42, "admin")

	nc, err := net.Dial("tcp", s.Addr("PLAINTEXT"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := nc.Write(buf); err != nil {
		t.Fatal(err)
	}
	var sz [4]byte
	if _, err := io.ReadFull(nc, sz[:]); err != nil {
		t.Fatalf("%s v%d: no answer: %v", kmsg.NameForKey(req.Key()), version, err)
	}
	body := make([]byte, binary.BigEndian.Uint32(sz[:]))
	if _, err := io.ReadFull(nc, body); err != nil {
		t.Fatal(err)
	}
	r := kbin.Reader{Src: body}
	if corr := r.Int32(); corr != 42 {
		t.Fatalf("correlation id %d", corr)
	}
	resp := req.ResponseKind()
	resp.SetVersion(version)
	// ApiVersions answers with header v0 at every version.
	if resp.IsFlexible() && req.Key() != kmsg.ApiVersions.Int16() {
		if n := r.Uvarint(); n != 0 {
			t.Fatalf("unexpected %d tagged fields in the response header", n)
		}
	}
	if err := resp.ReadFrom(r.Src); err != nil {
		t.Fatalf("decoding %s v%d: %v", kmsg.NameForKey(req.Key()), version, err)
	}
	return resp.(Resp)
}

// newClient is a kgo client of s that writes to the partition each record
// names.
func admClient(t *testing.T, s *Server, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(s.Addr("PLAINTEXT")), kgo.RecordPartitioner(kgo.ManualPartitioner())}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// createTopic creates a topic with RF 1 and these overrides.
func admCreateTopic(t *testing.T, s *Server, name string, partitions int32, configs map[string]string) [16]byte {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = name, partitions, 1
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name, c.Value = k, strPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	resp := admSend[*kmsg.CreateTopicsResponse](t, s, req, 7)
	if st := resp.Topics[0]; st.ErrorCode != 0 {
		t.Fatalf("create topic %s: %v %s", name, kerr.ErrorForCode(st.ErrorCode), admShow(st.ErrorMessage))
	}
	return resp.Topics[0].TopicID
}

// produce writes n records to one partition and returns the offset of
// the first.
func admProduce(t *testing.T, cl *kgo.Client, topic string, partition int32, n int) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs := make([]*kgo.Record, n)
	for i := range rs {
		rs[i] = &kgo.Record{Topic: topic, Partition: partition, Value: []byte(fmt.Sprintf("record %d of %s-%d", i, topic, partition))}
	}
	res := cl.ProduceSync(ctx, rs...)
	if err := res.FirstErr(); err != nil {
		t.Fatalf("produce to %s-%d: %v", topic, partition, err)
	}
	return res[0].Record.Offset
}

// wantCode fails the test unless code is want; what names the entry.
func admWantCode(t *testing.T, what string, code int16, msg *string, want *kerr.Error) {
	t.Helper()
	var wantCode int16
	if want != nil {
		wantCode = want.Code
	}
	if code != wantCode {
		t.Errorf("%s: error %v (%s), want %v", what, kerr.ErrorForCode(code), admShow(msg), want)
	}
}

// wantMessage fails the test unless msg contains every part.
func admWantMessage(t *testing.T, what string, msg *string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if msg == nil || !strings.Contains(*msg, p) {
			t.Errorf("%s: message %s does not say %q", what, admShow(msg), p)
		}
	}
}

func admShow(s *string) string {
	if s == nil {
		return "<null>"
	}
	return fmt.Sprintf("%q", *s)
}

// admMetadata asks Metadata v12 about one topic.
func admMetadata(t *testing.T, s *Server, topic string) kmsg.MetadataResponseTopic {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = strPtr(topic)
	req.Topics = append(req.Topics, rt)
	return admSend[*kmsg.MetadataResponse](t, s, req, 12).Topics[0]
}

// TestAdminApiVersionsLikeKafka checks that ApiVersions lists the admin
// APIs with Kafka 4.4.0's version ranges.
func TestAdminApiVersionsLikeKafka(t *testing.T) {
	raw, err := os.ReadFile("../config/testdata/kafka-4.4-apiversions.json")
	if err != nil {
		t.Fatal(err)
	}
	var kafka struct {
		ApiKeys []struct {
			Key      int16 `json:"key"`
			Min, Max int16
		} `json:"api_keys"`
	}
	if err := json.Unmarshal(raw, &kafka); err != nil {
		t.Fatal(err)
	}
	want := map[int16]string{}
	for _, k := range kafka.ApiKeys {
		want[k.Key] = fmt.Sprintf("v%d-v%d", k.Min, k.Max)
	}
	s := startAdminBroker(t, nil)
	got := map[int16]string{}
	for _, k := range admSend[*kmsg.ApiVersionsResponse](t, s, kmsg.NewPtrApiVersionsRequest(), 3).ApiKeys {
		got[k.ApiKey] = fmt.Sprintf("v%d-v%d", k.MinVersion, k.MaxVersion)
	}
	for _, key := range []kmsg.Key{kmsg.DeleteTopics, kmsg.DeleteRecords, kmsg.DescribeConfigs, kmsg.AlterConfigs,
		kmsg.DescribeLogDirs, kmsg.CreatePartitions, kmsg.IncrementalAlterConfigs, kmsg.DescribeTopicPartitions,
		kmsg.DescribeACLs, kmsg.CreateACLs, kmsg.DeleteACLs} {
		if got[key.Int16()] != want[key.Int16()] {
			t.Errorf("%s: %s, Kafka 4.4 %s", key.Name(), got[key.Int16()], want[key.Int16()])
		}
	}
}

// TestAdminBelowMinVersionCloses checks what Kafka 4.4 does with a version
// below the listed minimum (kafka-4.4-errors.json, listed-min-version-probe):
// no answer, the connection is closed.
func TestAdminBelowMinVersionCloses(t *testing.T) {
	s := startAdminBroker(t, nil)
	for _, req := range []kmsg.Request{kmsg.NewPtrDeleteTopicsRequest(), kmsg.NewPtrDescribeConfigsRequest(), kmsg.NewPtrDescribeLogDirsRequest()} {
		req.SetVersion(0)
		buf := binary.BigEndian.AppendUint32(nil, 0)
		buf = binary.BigEndian.AppendUint16(buf, uint16(req.Key()))
		buf = binary.BigEndian.AppendUint16(buf, 0)
		buf = binary.BigEndian.AppendUint32(buf, 1)
		buf = binary.BigEndian.AppendUint16(buf, 0xffff) // null client id
		buf = req.AppendTo(buf)
		binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
		nc, err := net.Dial("tcp", s.Addr("PLAINTEXT"))
		if err != nil {
			t.Fatal(err)
		}
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		nc.Write(buf)
		if n, err := nc.Read(make([]byte, 4)); err == nil {
			t.Errorf("%s v0: answered (%d bytes) instead of closing", kmsg.NameForKey(req.Key()), n)
		}
		nc.Close()
	}
}
