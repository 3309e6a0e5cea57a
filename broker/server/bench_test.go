package server

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/internal/kwire"
)

// The server benchmarks drive a real broker over loopback with requests
// encoded once, so that the client costs next to nothing and the figures
// are the broker's: request decode, validation, append or fetch read, and
// the answer. cpu-s/GB is the whole process (the client goroutine
// included), as the broker CPU rows of bench-vs-kafka.sh are.

const (
	benchPartitions = 6
	benchBatchBytes = 64 << 10 // ProducerPerformance's batch.size in bench-vs-kafka.sh
)

func BenchmarkProduce(b *testing.B) {
	for _, value := range []int{100, 16 << 10} {
		b.Run(benchSizeName(value), func(b *testing.B) {
			s := startBroker(b, map[string]string{
				"auto.create.topics.enable": "false",
				// Keep the disk use bounded however long -benchtime is.
				"log.segment.bytes":               fmt.Sprint(64 << 20),
				"log.retention.bytes":             fmt.Sprint(128 << 20),
				"log.retention.check.interval.ms": "1000",
			})
			benchCreateTopic(b, s, "bench")
			frame := benchProduceFrame(b, "bench", value)
			c := benchDial(b, s)
			for range 32 { // segments, indexes and page cache warm
				c.produce(b, frame)
			}
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			cpu := benchProcessCPU()
			b.ResetTimer()
			for range b.N {
				c.produce(b, frame)
			}
			b.StopTimer()
			benchReportCPU(b, benchProcessCPU()-cpu, int64(len(frame))*int64(b.N))
		})
	}
}

// BenchmarkProduceCompressed is BenchmarkProduce with batches compressed
// as producers send them, of text-like values that compress about as
// real events do (3-5x), so that the figure includes what the broker pays
// to decompress and check every record.
func BenchmarkProduceCompressed(b *testing.B) {
	for _, codec := range []record.Codec{record.CodecLZ4, record.CodecZstd, record.CodecGzip} {
		for _, value := range []int{100, 1 << 10} {
			b.Run(fmt.Sprintf("codec=%s/%s", codec, benchSizeName(value)), func(b *testing.B) {
				s := startBroker(b, map[string]string{
					"auto.create.topics.enable":       "false",
					"log.segment.bytes":               fmt.Sprint(64 << 20),
					"log.retention.bytes":             fmt.Sprint(128 << 20),
					"log.retention.check.interval.ms": "1000",
				})
				benchCreateTopic(b, s, "bench")
				frame, raw := benchCompressedFrame(b, "bench", codec, value)
				c := benchDial(b, s)
				for range 32 {
					c.produce(b, frame)
				}
				// Bytes are the records' uncompressed size: what the
				// producer had to send.
				b.SetBytes(int64(raw))
				b.ReportAllocs()
				cpu := benchProcessCPU()
				b.ResetTimer()
				for range b.N {
					c.produce(b, frame)
				}
				b.StopTimer()
				benchReportCPU(b, benchProcessCPU()-cpu, int64(raw)*int64(b.N))
			})
		}
	}
}

// benchCompressedFrame is one acks=1 Produce v9 request with a 64 KiB
// (uncompressed) batch per partition, and the records' uncompressed size.
func benchCompressedFrame(b *testing.B, topic string, codec record.Codec, value int) ([]byte, int) {
	n := max(1, benchBatchBytes/(value+10))
	recs := make([]kmsg.Record, n)
	words := []string{"page_view", "click", "search", "user", "session", "/products/", "referrer", "https://example.com/", "Mozilla/5.0"}
	seed := uint32(1)
	for i := range recs {
		v := make([]byte, 0, value)
		for len(v) < value {
			seed = seed*1664525 + 1013904223
			v = append(v, words[seed>>28%uint32(len(words))]...)
			v = strconv.AppendUint(v, uint64(seed>>12), 10)
			v = append(v, ' ')
		}
		recs[i] = kmsg.Record{OffsetDelta: int32(i), Key: []byte(strconv.Itoa(i % 97)), Value: v[:value]}
	}
	opts := record.DefaultBuildOptions()
	opts.BaseTimestamp = time.Now().UnixMilli()
	opts.Codec = codec
	batch, err := record.Build(opts, recs)
	if err != nil {
		b.Fatal(err)
	}
	req := kmsg.NewProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = 1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for p := range int32(benchPartitions) {
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, batch
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return kwire.AppendRequest(nil, &req, 1, "bench"), benchPartitions * n * (value + 10)
}

// BenchmarkFetch reads a filled topic from the start again and again, 1 MiB
// per partition per request, as a consumer catching up does.
func BenchmarkFetch(b *testing.B) {
	for _, sendfile := range []bool{true, false} {
		b.Run(fmt.Sprintf("sendfile=%v", sendfile), func(b *testing.B) {
			s := startBroker(b, map[string]string{"auto.create.topics.enable": "false"})
			s.sendfile = sendfile
			benchCreateTopic(b, s, "bench")
			c := benchDial(b, s)
			frame := benchProduceFrame(b, "bench", 100)
			const fill = 32 << 20 // per partition
			for range fill / benchBatchBytes {
				c.produce(b, frame)
			}
			end := benchLogEnd(b, s, "bench")
			b.ReportAllocs()
			cpu := benchProcessCPU()
			b.ResetTimer()
			for range b.N {
				for p, o := range c.fetch(b) {
					if o >= end {
						o = 0
					}
					c.offsets[p] = o
				}
			}
			b.StopTimer()
			b.SetBytes(c.fetched / int64(b.N))
			benchReportCPU(b, benchProcessCPU()-cpu, c.fetched)
		})
	}
}

// BenchmarkFetchTail is a caught-up consumer at a low rate: each op appends
// one small batch (5 records of 100 B) to one of the partitions, then
// fetches all of them from where the last fetch ended, as the end-to-end
// latency runs of bench-vs-kafka.sh do.
func BenchmarkFetchTail(b *testing.B) {
	s := startBroker(b, map[string]string{"auto.create.topics.enable": "false"})
	benchCreateTopic(b, s, "bench")
	c := benchDial(b, s)
	var frames [benchPartitions][]byte
	for p := range frames {
		frames[p] = benchProduceFrameFor(b, "bench", int32(p), 100, 5)
	}
	op := func(i int) {
		c.produce(b, frames[i%benchPartitions])
		for p, o := range c.fetch(b) {
			c.offsets[p] = max(c.offsets[p], o)
		}
	}
	for i := range 10000 { // a tail of small batches behind each index entry
		op(i)
	}
	c.fetched = 0
	b.ReportAllocs()
	cpu := benchProcessCPU()
	b.ResetTimer()
	for i := range b.N {
		op(i)
	}
	b.StopTimer()
	benchReportCPU(b, benchProcessCPU()-cpu, c.fetched)
}

func benchCreateTopic(b *testing.B, s *Server, name string) {
	spec := cluster.TopicSpec{Name: name, Partitions: benchPartitions, ReplicationFactor: 1}
	if _, err := s.ctrl.CreateTopic(spec, false); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for p := range int32(benchPartitions) {
		for {
			if _, err := s.leaderPartition(name, p); err == nil {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("partition %d of %s has no leader", p, name)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// benchClient is one connection, a request at a time, as a client with
// one request in flight.
type benchClient struct {
	nc      net.Conn
	resp    []byte // the last response, reused
	offsets [benchPartitions]int64
	fetched int64 // record bytes fetched
}

func benchDial(b *testing.B, s *Server) *benchClient {
	nc, err := net.Dial("tcp", s.Addr("PLAINTEXT"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { nc.Close() })
	return &benchClient{nc: nc}
}

// roundTrip sends frame and reads the body of its response.
func (c *benchClient) roundTrip(b *testing.B, frame []byte) []byte {
	if _, err := c.nc.Write(frame); err != nil {
		b.Fatal(err)
	}
	var sz [4]byte
	if _, err := io.ReadFull(c.nc, sz[:]); err != nil {
		b.Fatal(err)
	}
	n := int(binary.BigEndian.Uint32(sz[:]))
	if cap(c.resp) < n {
		c.resp = make([]byte, n)
	}
	body := c.resp[:n]
	if _, err := io.ReadFull(c.nc, body); err != nil {
		b.Fatal(err)
	}
	return body[5:] // correlation id, no header tags
}

// produce sends a Produce v9 request and checks that every partition
// took its records.
func (c *benchClient) produce(b *testing.B, frame []byte) {
	resp := kmsg.NewProduceResponse()
	resp.SetVersion(9)
	if err := resp.ReadFrom(c.roundTrip(b, frame)); err != nil {
		b.Fatal(err)
	}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				b.Fatalf("produce to %s-%d: error %d", t.Topic, p.Partition, p.ErrorCode)
			}
		}
	}
}

// fetch reads every partition of the topic "bench" from c.offsets and
// returns each partition's next offset (after its last whole batch).
func (c *benchClient) fetch(b *testing.B) []int64 {
	resp := kmsg.NewFetchResponse()
	resp.SetVersion(12)
	if err := resp.ReadFrom(c.roundTrip(b, benchFetchFrame("bench", c.offsets[:]))); err != nil {
		b.Fatal(err)
	}
	next := make([]int64, benchPartitions)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				b.Fatalf("fetch %s-%d: error %d", t.Topic, p.Partition, p.ErrorCode)
			}
			c.fetched += int64(len(p.RecordBatches))
			for rb, rest, ok := record.Split(p.RecordBatches); ok; rb, rest, ok = record.Split(rest) {
				next[p.Partition] = rb.LastOffset() + 1
			}
		}
	}
	return next
}

// benchProduceFrame is one acks=1 Produce v9 request with a batch of
// benchBatchBytes for each partition, records of value bytes each.
func benchProduceFrame(b *testing.B, topic string, value int) []byte {
	n := max(1, benchBatchBytes/(value+10))
	return benchProduceFrameFor(b, topic, -1, value, n)
}

// benchProduceFrameFor is one acks=1 Produce v9 request with a batch of
// count records of value bytes for partition, or for each partition if it
// is -1.
func benchProduceFrameFor(b *testing.B, topic string, partition int32, value, count int) []byte {
	recs := make([]kmsg.Record, count)
	for i := range recs {
		recs[i] = kmsg.Record{OffsetDelta: int32(i), Value: make([]byte, value)}
	}
	opts := record.DefaultBuildOptions()
	opts.BaseTimestamp = time.Now().UnixMilli()
	batch, err := record.Build(opts, recs)
	if err != nil {
		b.Fatal(err)
	}
	req := kmsg.NewProduceRequest()
	req.SetVersion(9)
	req.Acks, req.TimeoutMillis = 1, 30000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	for p := range int32(benchPartitions) {
		if partition >= 0 && p != partition {
			continue
		}
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Partition, rp.Records = p, batch
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return kwire.AppendRequest(nil, &req, 1, "bench")
}

func benchFetchFrame(topic string, offsets []int64) []byte {
	req := kmsg.NewFetchRequest()
	req.SetVersion(12)
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 0, 1, 64<<20
	req.SessionEpoch = -1
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	for p, o := range offsets {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = int32(p), o, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return kwire.AppendRequest(nil, &req, 1, "bench")
}

func benchLogEnd(b *testing.B, s *Server, topic string) int64 {
	part, err := s.leaderPartition(topic, 0)
	if err != nil {
		b.Fatal(err)
	}
	return part.Log.LogEndOffset()
}

func benchProcessCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchReportCPU(b *testing.B, cpu time.Duration, bytes int64) {
	if bytes > 0 {
		b.ReportMetric(cpu.Seconds()/(float64(bytes)/1e9), "cpu-s/GB")
	}
}

func benchSizeName(n int) string {
	if n >= 1<<10 {
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}
