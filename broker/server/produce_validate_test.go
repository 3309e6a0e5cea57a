package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/internal/kwire"
	"github.com/tributary-io/tributary/internal/testbroker"
)

// A hostile or broken producer's batches, each with a valid CRC, sent raw
// to the real broker binary: each gets Kafka's error code, nothing is
// appended, the broker's memory stays put, and a neighbour producing and
// consuming on another connection all the while notices nothing.
func TestProduceValidationE2E(t *testing.T) {
	b := testbroker.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	hour := "3600000"
	for topic, cfg := range map[string]map[string]*string{
		"plain":     nil,
		"compacted": {"cleanup.policy": ptr("compact")},
		"bounded":   {"message.timestamp.before.max.ms": &hour, "message.timestamp.after.max.ms": ptr("60000")},
		"neighbour": nil,
		"gzipped":   {"compression.type": ptr("gzip")},
	} {
		if _, err := adm.CreateTopic(ctx, 1, 1, cfg, topic); err != nil {
			t.Fatalf("create %s: %v", topic, err)
		}
	}

	stop, neighbourDone := make(chan struct{}), make(chan neighbourResult, 1)
	var neighbourProduced atomic.Int64
	go func() { neighbourDone <- runNeighbour(ctx, b.Addr(), "neighbour", stop, &neighbourProduced) }()

	conn, err := kwire.Dial(ctx, b.Addr(), "hostile")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rssBefore := scrape(t, "http://"+b.AdminAddr()+"/metrics")["process_resident_memory_bytes"]

	now := time.Now().UnixMilli()
	keyed := func(n int) []kmsg.Record {
		recs := make([]kmsg.Record, n)
		for i := range recs {
			recs[i] = kmsg.Record{OffsetDelta: int32(i), Key: fmt.Appendf(nil, "k%d", i), Value: []byte("v")}
		}
		return recs
	}
	build := func(codec record.Codec, ts int64, recs []kmsg.Record) record.Batch {
		opts := record.DefaultBuildOptions()
		opts.Codec, opts.BaseTimestamp = codec, ts
		batch, err := record.Build(opts, recs)
		if err != nil {
			t.Fatal(err)
		}
		return batch
	}
	rng := rand.New(rand.NewPCG(3, 4))
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(rng.Uint32())
	}

	cases := []struct {
		name, topic string
		batch       record.Batch
		code        *kerr.Error
		message     string // in the error message
		records     []int32
	}{
		{"zstd bomb", "plain", bomb(t, record.CodecZstd, 1<<30), kerr.InvalidRecord, "decompresses to more than", nil},
		{"gzip bomb", "plain", bomb(t, record.CodecGzip, 256<<20), kerr.InvalidRecord, "decompresses to more than", nil},
		{"lz4 garbage", "plain", rawBatch(record.CodecLZ4, 1, now, garbage), kerr.CorruptMessage, "lz4", nil},
		{"zstd garbage", "plain", rawBatch(record.CodecZstd, 1, now, append([]byte{0x28, 0xb5, 0x2f, 0xfd}, garbage...)), kerr.CorruptMessage, "zstd", nil},
		{"gzip garbage", "plain", rawBatch(record.CodecGzip, 1, now, append([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff}, garbage...)), kerr.CorruptMessage, "gzip", nil},
		{"count above records", "plain", recount(build(record.CodecNone, now, keyed(2)), 3), kerr.InvalidRecord, "batch says 3 records, holds 2", nil},
		{"count below records", "plain", recount(build(record.CodecGzip, now, keyed(3)), 2), kerr.InvalidRecord, "batch says 2 records, holds more", nil},
		{"null keys, compacted", "compacted", build(record.CodecLZ4, now, []kmsg.Record{
			{Key: []byte("a"), Value: []byte("1")}, {OffsetDelta: 1, Value: []byte("2")}, {OffsetDelta: 2, Key: []byte("c")}, {OffsetDelta: 3, Value: []byte("4")},
		}), kerr.InvalidRecord, "Compacted topic cannot accept message without key", []int32{1, 3}},
		{"a request of many small bombs", "plain", func() record.Batch {
			one := build(record.CodecZstd, now, []kmsg.Record{{Key: []byte("k"), Value: make([]byte, 512<<10)}})
			return record.Batch(bytes.Repeat(one, 200))
		}(), kerr.InvalidRecord, "the request's batches decompress to more than 256 times their size", nil},
		{"too old", "bounded", build(record.CodecZstd, now-2*3600_000, keyed(2)), kerr.InvalidTimestamp, "invalid timestamp", []int32{0, 1}},
		{"too far ahead", "bounded", build(record.CodecNone, now, []kmsg.Record{
			{Key: []byte("a")}, {OffsetDelta: 1, Key: []byte("b"), TimestampDelta64: 10 * 60_000},
		}), kerr.InvalidTimestamp, "invalid timestamp", []int32{1}},
	}
	for _, tc := range cases {
		before := endOffset(ctx, t, adm, tc.topic)
		req := kmsg.NewPtrProduceRequest()
		req.SetVersion(9)
		req.Acks, req.TimeoutMillis = -1, 10000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = tc.topic
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = tc.batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		start := time.Now()
		resp, err := conn.RoundTrip(req, 30*time.Second)
		if err != nil {
			t.Fatalf("%s: the broker closed the connection: %v", tc.name, err)
		}
		took := time.Since(start)
		sp := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		msg := ""
		if sp.ErrorMessage != nil {
			msg = *sp.ErrorMessage
		}
		if sp.ErrorCode != tc.code.Code || !strings.Contains(msg, tc.message) {
			t.Errorf("%s: %v %q, want %v with %q", tc.name, kerr.ErrorForCode(sp.ErrorCode), msg, tc.code, tc.message)
		}
		var got []int32
		for _, r := range sp.ErrorRecords {
			got = append(got, r.RelativeOffset)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.records) {
			t.Errorf("%s: RecordErrors at %v, want %v (%+v)", tc.name, got, tc.records, sp.ErrorRecords)
		}
		if after := endOffset(ctx, t, adm, tc.topic); after != before {
			t.Errorf("%s: end offset %d -> %d: something was appended", tc.name, before, after)
		}
		t.Logf("%s (%d bytes): %v in %v: %s", tc.name, len(tc.batch), kerr.ErrorForCode(sp.ErrorCode), took.Round(time.Millisecond), msg)
	}

	// The bombs decompress as a stream into a small buffer: the broker's
	// memory does not grow with what they claim.
	rssAfter := scrape(t, "http://"+b.AdminAddr()+"/metrics")["process_resident_memory_bytes"]
	t.Logf("broker RSS %.0f MiB before the bad batches, %.0f MiB after", rssBefore/(1<<20), rssAfter/(1<<20))
	if rssAfter-rssBefore > 64<<20 {
		t.Errorf("broker RSS grew from %.0f to %.0f MiB", rssBefore/(1<<20), rssAfter/(1<<20))
	}

	// The bad batches take milliseconds: let the neighbour overlap them
	// by a fair number of round trips before it stops.
	for deadline := time.Now().Add(20 * time.Second); neighbourProduced.Load() < 20 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	close(stop)
	n := <-neighbourDone
	if n.err != nil {
		t.Fatalf("the neighbour noticed: %v", n.err)
	}
	if n.produced < 20 || n.consumed != n.produced {
		t.Errorf("neighbour produced %d, consumed %d", n.produced, n.consumed)
	}
	t.Logf("neighbour: %d records produced and consumed, slowest produce %v", n.produced, n.slowest)

	// A real producer of every codec still gets through, and its records
	// read back.
	for _, codec := range []kgo.CompressionCodec{kgo.NoCompression(), kgo.GzipCompression(), kgo.SnappyCompression(), kgo.Lz4Compression(), kgo.ZstdCompression()} {
		topic := "plain"
		p, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(codec))
		if err != nil {
			t.Fatal(err)
		}
		before := endOffset(ctx, t, adm, topic)
		var recs []*kgo.Record
		for i := range 500 {
			recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "user-%d", i%13), Value: fmt.Appendf(nil, `{"event":"page_view","n":%d,"path":"/items/%d"}`, i, i%7)})
		}
		if err := p.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("codec %v: %v", codec, err)
		}
		p.Close()
		c, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(before)}}))
		if err != nil {
			t.Fatal(err)
		}
		var read int
		for read < len(recs) && ctx.Err() == nil {
			fs := c.PollFetches(ctx)
			if errs := fs.Errors(); len(errs) > 0 {
				t.Fatalf("codec %v: fetch: %v", codec, errs)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if want := recs[read]; !bytes.Equal(r.Value, want.Value) || !bytes.Equal(r.Key, want.Key) {
					t.Fatalf("codec %v: record %d is %q=%q, want %q=%q", codec, read, r.Key, r.Value, want.Key, want.Value)
				}
				read++
			})
		}
		c.Close()
		if read != len(recs) {
			t.Fatalf("codec %v: read %d of %d", codec, read, len(recs))
		}
	}

	// compression.type=gzip stores an lz4 producer's records as gzip.
	p, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("gzipped"), kgo.ProducerBatchCompression(kgo.Lz4Compression()))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ProduceSync(ctx, &kgo.Record{Key: []byte("k"), Value: []byte("stored as gzip")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	p.Close()
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(12)
	fetch.ReplicaID, fetch.MaxBytes, fetch.SessionEpoch = -1, 1<<20, -1
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "gzipped"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes, fp.CurrentLeaderEpoch = 1<<20, -1
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	fr, err := conn.RoundTrip(fetch, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	stored, _, ok := record.Split(fr.(*kmsg.FetchResponse).Topics[0].Partitions[0].RecordBatches)
	if !ok || stored.Codec() != record.CodecGzip {
		t.Fatalf("compression.type=gzip stored %v (ok %v)", stored.Codec(), ok)
	}
	if recs, err := stored.DecodeRecords(); err != nil || len(recs) != 1 || string(recs[0].Value) != "stored as gzip" {
		t.Fatalf("the gzip batch holds %+v: %v", recs, err)
	}
}

func ptr(s string) *string { return &s }

func endOffset(ctx context.Context, t *testing.T, adm *kadm.Client, topic string) int64 {
	t.Helper()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := ends.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("end offset of %s: %v", topic, o.Err)
	}
	return o.Offset
}

// rawBatch is a batch of count records whose records section is raw, with
// its length and CRC right, as a client computes them.
func rawBatch(codec record.Codec, count int32, ts int64, raw []byte) record.Batch {
	opts := record.DefaultBuildOptions()
	opts.BaseTimestamp = ts
	b, err := record.Build(opts, []kmsg.Record{{Value: []byte("x")}})
	if err != nil {
		panic(err)
	}
	out := append(append(record.Batch(nil), b[:record.HeaderSize]...), raw...)
	binary.BigEndian.PutUint16(out[21:], uint16(codec))
	binary.BigEndian.PutUint32(out[23:], uint32(count-1))
	binary.BigEndian.PutUint32(out[57:], uint32(count))
	return reseal(out)
}

// recount changes a batch's record count (and last offset delta, so that
// only the records disagree with it).
func recount(b record.Batch, n int32) record.Batch {
	binary.BigEndian.PutUint32(b[23:], uint32(n-1))
	binary.BigEndian.PutUint32(b[57:], uint32(n))
	return reseal(b)
}

func reseal(b record.Batch) record.Batch {
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-record.LogOverhead))
	binary.BigEndian.PutUint32(b[17:], b.ComputeCRC())
	return b
}

// bomb is one record whose value claims size bytes (a multiple of 1 MiB),
// compressed with codec as the zeros it is: one compressed MiB repeated,
// gzip members and zstd frames being concatenable, so that making it costs
// the test little even under the race detector.
func bomb(t *testing.T, codec record.Codec, size int) record.Batch {
	t.Helper()
	rec := []byte{0} // attributes
	rec = binary.AppendVarint(rec, 0)
	rec = binary.AppendVarint(rec, 0)
	rec = binary.AppendVarint(rec, -1)
	rec = binary.AppendVarint(rec, int64(size))
	head := binary.AppendVarint(nil, int64(len(rec)+size+1))
	head = append(head, rec...)

	compress := func(data []byte) []byte {
		var out bytes.Buffer
		var w interface {
			Write([]byte) (int, error)
			Close() error
		}
		switch codec {
		case record.CodecZstd:
			zw, err := zstd.NewWriter(&out, zstd.WithEncoderConcurrency(1))
			if err != nil {
				t.Fatal(err)
			}
			w = zw
		case record.CodecGzip:
			gw, err := gzip.NewWriterLevel(&out, gzip.BestCompression)
			if err != nil {
				t.Fatal(err)
			}
			w = gw
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	first := make([]byte, 1<<20)
	copy(first, head)
	payload := compress(first)
	zeros := compress(make([]byte, 1<<20))
	for range size>>20 - 1 {
		payload = append(payload, zeros...)
	}
	return rawBatch(codec, 1, time.Now().UnixMilli(), payload)
}

type neighbourResult struct {
	produced, consumed int
	slowest            time.Duration
	err                error
}

// runNeighbour produces to topic, one acks=all record at a time, and
// consumes it on another client, until stop; then it reads what is left.
func runNeighbour(ctx context.Context, addr, topic string, stop <-chan struct{}, produced *atomic.Int64) (res neighbourResult) {
	p, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.ZstdCompression()))
	if err != nil {
		return neighbourResult{err: err}
	}
	defer p.Close()
	c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		return neighbourResult{err: err}
	}
	defer c.Close()
	var consumed atomic.Int64
	var wg sync.WaitGroup
	cctx, ccancel := context.WithCancel(ctx)
	var cerr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for cctx.Err() == nil {
			fs := c.PollFetches(cctx)
			for _, e := range fs.Errors() {
				if cctx.Err() == nil {
					cerr = e.Err
				}
			}
			consumed.Add(int64(fs.NumRecords()))
		}
	}()
	for {
		select {
		case <-stop:
		default:
			start := time.Now()
			if err := p.ProduceSync(ctx, &kgo.Record{Value: fmt.Appendf(nil, "neighbour %d", res.produced)}).FirstErr(); err != nil {
				ccancel()
				wg.Wait()
				return neighbourResult{err: err}
			}
			res.slowest = max(res.slowest, time.Since(start))
			res.produced++
			produced.Add(1)
			time.Sleep(5 * time.Millisecond)
			continue
		}
		break
	}
	deadline := time.Now().Add(20 * time.Second)
	for consumed.Load() < int64(res.produced) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	ccancel()
	wg.Wait()
	res.consumed, res.err = int(consumed.Load()), cerr
	return res
}
