package server

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/record"
)

// frame builds a request: size, key, version, correlation id, client id,
// tagged fields when flexible, then body.
func frame(req kmsg.Request, version int16, body []byte) []byte {
	req.SetVersion(version)
	b := make([]byte, 4, 64)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, 7)
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "test"...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	if body == nil {
		body = req.AppendTo(nil)
	}
	b = append(b, body...)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// roundTrip sends one frame and returns the response body after the
// correlation id, or the error that ended the connection.
func roundTrip(t *testing.T, addr string, f []byte) ([]byte, error) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write(f); err != nil {
		return nil, err
	}
	var sz [4]byte
	if _, err := io.ReadFull(nc, sz[:]); err != nil {
		return nil, err
	}
	resp := make([]byte, binary.BigEndian.Uint32(sz[:]))
	if _, err := io.ReadFull(nc, resp); err != nil {
		return nil, err
	}
	return resp[4:], nil
}

func apiVersionsWork(t *testing.T, addr string) {
	t.Helper()
	resp, err := roundTrip(t, addr, frame(kmsg.NewPtrApiVersionsRequest(), 3, nil))
	if err != nil {
		t.Fatalf("a healthy request on a new connection failed after bad input: %v", err)
	}
	// ApiVersions answers with response header v0 at every version.
	var av kmsg.ApiVersionsResponse
	av.SetVersion(3)
	if err := av.ReadFrom(resp); err != nil || av.ErrorCode != 0 || len(av.ApiKeys) < 5 {
		t.Fatalf("ApiVersions after bad input: %v %+v", err, av)
	}
}

func TestBadFramesCloseOnlyTheirConnection(t *testing.T) {
	s := startBroker(t, map[string]string{"socket.request.max.bytes": "1048576"})
	addr := s.Addr("PLAINTEXT")

	cases := map[string][]byte{
		"frame larger than socket.request.max.bytes": binary.BigEndian.AppendUint32(nil, 200<<20),
		"negative frame size":                        binary.BigEndian.AppendUint32(nil, 0xffffffff),
		"unknown API key": func() []byte {
			f := frame(kmsg.NewPtrApiVersionsRequest(), 0, nil)
			binary.BigEndian.PutUint16(f[4:], 999)
			return f
		}(),
		"unsupported Metadata version":   frame(kmsg.NewPtrMetadataRequest(), 127, []byte{}),
		"Produce v2, listed but refused": frame(kmsg.NewPtrProduceRequest(), 2, nil),
		// CVE-2022-34917: an array length far beyond the bytes present.
		"huge declared array length": frame(kmsg.NewPtrMetadataRequest(), 1, []byte{0x7f, 0xff, 0xff, 0xff}),
		"truncated header":           {0, 0, 0, 8, 0, 3, 0, 1, 0, 0, 0, 1},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := roundTrip(t, addr, f)
			if err == nil {
				t.Fatal("the broker answered; it should have closed the connection")
			}
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isReset(err) {
				t.Fatalf("connection ended with %v, want a close", err)
			}
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 50<<20 {
				t.Fatalf("the bad frame made the broker allocate %d MiB", grew>>20)
			}
			apiVersionsWork(t, addr)
		})
	}
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op)
}

// KIP-511: an ApiVersions the broker does not speak is answered in v0 with
// UNSUPPORTED_VERSION and the versions it does speak.
func TestApiVersionsUnsupportedVersion(t *testing.T) {
	s := startBroker(t, nil)
	resp, err := roundTrip(t, s.Addr("PLAINTEXT"), frame(kmsg.NewPtrApiVersionsRequest(), 127, []byte{}))
	if err != nil {
		t.Fatal(err)
	}
	var av kmsg.ApiVersionsResponse
	av.SetVersion(0)
	if err := av.ReadFrom(resp); err != nil {
		t.Fatal(err)
	}
	if av.ErrorCode != kerr.UnsupportedVersion.Code || len(av.ApiKeys) != 1 || av.ApiKeys[0].ApiKey != 18 || av.ApiKeys[0].MaxVersion < 3 {
		t.Fatalf("got %+v", av)
	}
}

func produceOne(t *testing.T, addr, topic string, batch []byte) kmsg.ProduceResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := roundTrip(t, addr, frame(req, 9, nil))
	if err != nil {
		t.Fatal(err)
	}
	var pr kmsg.ProduceResponse
	pr.SetVersion(9)
	if err := pr.ReadFrom(resp[1:]); err != nil {
		t.Fatal(err)
	}
	return pr.Topics[0].Partitions[0]
}

func testBatch(t *testing.T, value []byte) record.Batch {
	b, err := record.Build(record.DefaultBuildOptions(), record.NewRecords(record.KV{Key: []byte("k"), Value: value}))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBadProducesGetKafkaErrors(t *testing.T) {
	s := startBroker(t, map[string]string{"message.max.bytes": "2000", "replica.fetch.max.bytes": "2000"})
	addr := s.Addr("PLAINTEXT")
	if _, err := s.ctrl.CreateTopic(topicSpec("t"), false); err != nil {
		t.Fatal(err)
	}
	corrupt := testBatch(t, []byte("hello"))
	corrupt[len(corrupt)-1] ^= 1
	cases := []struct {
		name  string
		topic string
		batch []byte
		code  *kerr.Error
	}{
		{"crc mismatch", "t", corrupt, kerr.CorruptMessage},
		{"batch too large", "t", testBatch(t, make([]byte, 5000)), kerr.MessageTooLarge},
		{"unknown topic", "no-such-topic", testBatch(t, []byte("x")), kerr.UnknownTopicOrPartition},
		{"not a batch", "t", []byte{1, 2, 3}, kerr.CorruptMessage},
	}
	for _, tc := range cases {
		if got := produceOne(t, addr, tc.topic, tc.batch); got.ErrorCode != tc.code.Code {
			t.Errorf("%s: error %d, want %s", tc.name, got.ErrorCode, tc.code.Message)
		}
	}
	if got := produceOne(t, addr, "t", testBatch(t, []byte("fine"))); got.ErrorCode != 0 || got.BaseOffset != 0 {
		t.Fatalf("a good batch after bad ones: %+v", got)
	}
}

// FuzzRequest feeds arbitrary request frames to a connection's request
// path: nothing may panic, and the server must keep serving others.
func FuzzRequest(f *testing.F) {
	seeds := [][]byte{
		frame(kmsg.NewPtrApiVersionsRequest(), 3, nil)[4:],
		frame(kmsg.NewPtrMetadataRequest(), 12, nil)[4:],
		frame(kmsg.NewPtrFetchRequest(), 13, nil)[4:],
		frame(kmsg.NewPtrProduceRequest(), 9, nil)[4:],
		frame(kmsg.NewPtrCreateTopicsRequest(), 7, nil)[4:],
		frame(kmsg.NewPtrListOffsetsRequest(), 8, nil)[4:],
	}
	for _, s := range seeds {
		f.Add(s)
	}
	s := startBroker(f, nil)
	f.Fuzz(func(t *testing.T, body []byte) {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		go io.Copy(io.Discard, b)
		c := &conn{s: s, nc: a, listener: "PLAINTEXT", logger: s.logger}
		c.serveRequest(body)
	})
}
