package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
)

// kafka-go, the product's own client. Its Writer defaults to acks=0 and a
// round-robin balancer that ignores keys, so the test sets what it needs:
// acks=all (to learn each record's offset, and what the tracker uses) and
// the murmur2 balancer (keyed records, placed as Java's client does).
func init() {
	goClients["kafka-go"] = goClient{name: "kafka-go", create: kafkagoCreate, produce: kafkagoProduce, consume: kafkagoConsume}
}

func kafkagoCreate(t *testing.T, addr, topic string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), goDeadline)
	defer cancel()
	cl := &kafka.Client{Addr: kafka.TCP(addr)}
	resp, err := cl.CreateTopics(ctx, &kafka.CreateTopicsRequest{
		Topics: []kafka.TopicConfig{{Topic: topic, NumPartitions: goPartitions, ReplicationFactor: 1}},
	})
	if err == nil {
		err = resp.Errors[topic]
	}
	if err != nil {
		t.Fatalf("kafka-go CreateTopics %s: %v", topic, err)
	}
}

func kafkagoCodec(t *testing.T, codec string) kafka.Compression {
	switch codec {
	case "":
		return 0
	case "gzip":
		return compress.Gzip
	case "snappy":
		return compress.Snappy
	case "lz4":
		return compress.Lz4
	case "zstd":
		return compress.Zstd
	}
	t.Fatalf("unknown codec %q", codec)
	return 0
}

func kafkagoProduce(t *testing.T, addr, topic string, recs []goRecord, codec string) []goAck {
	t.Helper()
	acks := make([]goAck, len(recs))
	var mu sync.Mutex
	var errs []error
	var log goClientLog
	defer log.report(t, "kafka-go Writer")
	w := &kafka.Writer{
		Addr:         kafka.TCP(addr),
		Topic:        topic,
		Balancer:     &kafka.Murmur2Balancer{},
		RequiredAcks: kafka.RequireAll,
		Compression:  kafkagoCodec(t, codec),
		ErrorLogger:  kafka.LoggerFunc(log.add),
		Completion: func(msgs []kafka.Message, err error) {
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			for _, m := range msgs {
				acks[m.WriterData.(int)] = goAck{int32(m.Partition), m.Offset}
			}
		},
	}
	msgs := make([]kafka.Message, len(recs))
	for i, r := range recs {
		msgs[i] = kafka.Message{Key: r.Key, Value: r.Value, Time: r.Timestamp, WriterData: i}
		for _, h := range r.Headers {
			msgs[i].Headers = append(msgs[i].Headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), goDeadline)
	defer cancel()
	err := w.WriteMessages(ctx, msgs...)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = errors.Join(errs...)
	}
	if err != nil {
		t.Fatalf("kafka-go WriteMessages: %v", err)
	}
	return acks
}

// kafkagoConsume reads each partition with its own Reader (no group),
// the partitions at once. MaxWait is cut from the default 10s to 2s:
// Reader.Close waits for the long poll in flight, which at the end of the
// log lasts as long as the broker waits. The Reader asks the broker to wait
// MaxWait less a margin for the round trip (1s, or a quarter of MaxWait
// below 1s) and gives up reading the answer at MaxWait, so a smaller MaxWait
// leaves too little margin under -race on a loaded machine (at 500ms, 125ms
// was seen to run out). After the last record each Reader waits idle
// through empty long polls, as a tailing consumer does; a Reader that logs
// an error meanwhile fails the test (kafka-go logs and retries protocol
// errors instead of returning them).
func kafkagoConsume(t *testing.T, addr, topic string, end map[int32]int64) []goConsumed {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), goDeadline)
	defer cancel()
	var (
		mu   sync.Mutex
		got  []goConsumed
		errs []error
		wg   sync.WaitGroup
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}
	for p := int32(0); p < goPartitions; p++ {
		if end[p] == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := kafka.NewReader(kafka.ReaderConfig{
				Brokers: []string{addr}, Topic: topic, Partition: int(p),
				MaxWait: 2 * time.Second,
				ErrorLogger: kafka.LoggerFunc(func(format string, args ...any) {
					fail(fmt.Errorf("kafka-go Reader %s/%d logged an error: "+format, append([]any{topic, p}, args...)...))
				}),
			})
			defer func() {
				if err := r.Close(); err != nil {
					fail(fmt.Errorf("kafka-go Reader.Close %s/%d: %w", topic, p, err))
				}
			}()
			var part []goConsumed
			for next := int64(0); next < end[p]; {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					fail(fmt.Errorf("kafka-go ReadMessage %s/%d at offset %d of %d: %w", topic, p, next, end[p], err))
					return
				}
				g := goConsumed{Partition: int32(m.Partition), Offset: m.Offset}
				g.Key, g.Value, g.Timestamp = m.Key, m.Value, m.Time
				for _, h := range m.Headers {
					g.Headers = append(g.Headers, goHeader{h.Key, h.Value})
				}
				part = append(part, g)
				next = m.Offset + 1
			}
			idle, cancelIdle := context.WithTimeout(ctx, 2500*time.Millisecond)
			defer cancelIdle()
			if m, err := r.ReadMessage(idle); !errors.Is(err, context.DeadlineExceeded) {
				fail(fmt.Errorf("kafka-go ReadMessage %s/%d past the end: %v at offset %d, want to wait until the deadline", topic, p, err, m.Offset))
			}
			mu.Lock()
			got = append(got, part...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
	return got
}
