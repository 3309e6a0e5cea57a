package conformance

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// franz-go with its defaults: idempotent, acks=all, sticky key partitioner
// (murmur2, as Java's), snappy batches.
func init() {
	goClients["franz-go"] = goClient{name: "franz-go", create: franzCreate, produce: franzProduce, consume: franzConsume}
}

// franzLogger hands franz-go's warnings and errors to a goClientLog.
type franzLogger struct{ l *goClientLog }

func (f franzLogger) Level() kgo.LogLevel { return kgo.LogLevelWarn }

func (f franzLogger) Log(level kgo.LogLevel, msg string, keyvals ...any) {
	f.l.add("%s: %s %v", level, msg, keyvals)
}

func franzCreate(t *testing.T, addr, topic string) {
	t.Helper()
	adm, ctx := goAdmin(t, addr)
	resp, err := adm.CreateTopic(ctx, goPartitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("kadm CreateTopic %s: %v (%s)", topic, err, resp.ErrMessage)
	}
	if resp.NumPartitions != goPartitions {
		t.Fatalf("kadm CreateTopic %s: %d partitions, want %d", topic, resp.NumPartitions, goPartitions)
	}
}

func franzCodec(t *testing.T, codec string) []kgo.Opt {
	switch codec {
	case "":
		return nil
	case "gzip":
		return []kgo.Opt{kgo.ProducerBatchCompression(kgo.GzipCompression())}
	case "snappy":
		return []kgo.Opt{kgo.ProducerBatchCompression(kgo.SnappyCompression())}
	case "lz4":
		return []kgo.Opt{kgo.ProducerBatchCompression(kgo.Lz4Compression())}
	case "zstd":
		return []kgo.Opt{kgo.ProducerBatchCompression(kgo.ZstdCompression())}
	}
	t.Fatalf("unknown codec %q", codec)
	return nil
}

func franzProduce(t *testing.T, addr, topic string, recs []goRecord, codec string) []goAck {
	t.Helper()
	var log goClientLog
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.WithLogger(franzLogger{&log})}, franzCodec(t, codec)...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer log.report(t, "franz-go producer")
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), goDeadline)
	defer cancel()
	acks := make([]goAck, len(recs))
	errs := make([]error, len(recs))
	for i, r := range recs {
		kr := &kgo.Record{Key: r.Key, Value: r.Value, Timestamp: r.Timestamp}
		for _, h := range r.Headers {
			kr.Headers = append(kr.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		cl.Produce(ctx, kr, func(kr *kgo.Record, err error) {
			acks[i], errs[i] = goAck{kr.Partition, kr.Offset}, err
		})
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	for i, err := range errs {
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	return acks
}

func franzConsume(t *testing.T, addr, topic string, end map[int32]int64) []goConsumed {
	t.Helper()
	parts := map[int32]kgo.Offset{}
	for p := range end {
		parts[p] = kgo.NewOffset().At(0)
	}
	var log goClientLog
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: parts}), kgo.WithLogger(franzLogger{&log}))
	if err != nil {
		t.Fatal(err)
	}
	defer log.report(t, "franz-go consumer")
	defer cl.Close()
	return franzPoll(t, cl, topic, end)
}

// franzPoll polls until every partition reached its end offset.
func franzPoll(t *testing.T, cl *kgo.Client, topic string, end map[int32]int64) []goConsumed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), goDeadline)
	defer cancel()
	next := map[int32]int64{}
	done := func() bool {
		for p, e := range end {
			if next[p] < e {
				return false
			}
		}
		return true
	}
	var got []goConsumed
	for !done() {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d records, positions %v of %v: %v", len(got), next, end, ctx.Err())
		}
		fs.EachError(func(topic string, p int32, err error) {
			t.Errorf("fetch %s/%d: %v", topic, p, err)
		})
		if t.Failed() {
			t.FailNow()
		}
		fs.EachRecord(func(kr *kgo.Record) {
			c := goConsumed{Partition: kr.Partition, Offset: kr.Offset}
			c.Key, c.Value, c.Timestamp = kr.Key, kr.Value, kr.Timestamp
			for _, h := range kr.Headers {
				c.Headers = append(c.Headers, goHeader{h.Key, h.Value})
			}
			got = append(got, c)
			next[kr.Partition] = kr.Offset + 1
		})
	}
	return got
}
