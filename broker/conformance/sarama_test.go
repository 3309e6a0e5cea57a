package conformance

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// Sarama speaking Kafka 4.0's protocol versions (headers need 0.11+; the
// broker serves Kafka 4's baseline). Its producer defaults are acks=1
// (WaitForLocal), not idempotent, FNV-1a hash partitioner, no compression;
// the "sarama-idempotent" variant turns idempotence on with what Sarama
// requires for it (acks=all, one request in flight).
func init() {
	goClients["sarama"] = saramaClient("sarama", false)
	goClients["sarama-idempotent"] = saramaClient("sarama-idempotent", true)
}

var saramaVersion = sarama.V4_0_0_0

func saramaClient(name string, idempotent bool) goClient {
	return goClient{
		name:   name,
		create: saramaCreate,
		produce: func(t *testing.T, addr, topic string, recs []goRecord, codec string) []goAck {
			return saramaProduce(t, addr, topic, recs, codec, idempotent)
		},
		consume: saramaConsume,
	}
}

func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = saramaVersion
	cfg.ClientID = "conformance-sarama"
	return cfg
}

func saramaCreate(t *testing.T, addr, topic string) {
	t.Helper()
	adm, err := sarama.NewClusterAdmin([]string{addr}, saramaConfig())
	if err != nil {
		t.Fatalf("sarama.NewClusterAdmin: %v", err)
	}
	defer adm.Close()
	if err := adm.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: goPartitions, ReplicationFactor: 1}, false); err != nil {
		t.Fatalf("sarama CreateTopic %s: %v", topic, err)
	}
}

func saramaProduce(t *testing.T, addr, topic string, recs []goRecord, codec string, idempotent bool) []goAck {
	t.Helper()
	cfg := saramaConfig()
	cfg.Producer.Return.Successes = true // to learn each record's offset
	if idempotent {
		cfg.Producer.Idempotent = true
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Net.MaxOpenRequests = 1
	}
	switch codec {
	case "":
	case "gzip":
		cfg.Producer.Compression = sarama.CompressionGZIP
	case "snappy":
		cfg.Producer.Compression = sarama.CompressionSnappy
	case "lz4":
		cfg.Producer.Compression = sarama.CompressionLZ4
	case "zstd":
		cfg.Producer.Compression = sarama.CompressionZSTD
	default:
		t.Fatalf("unknown codec %q", codec)
	}
	p, err := sarama.NewAsyncProducer([]string{addr}, cfg)
	if err != nil {
		t.Fatalf("sarama.NewAsyncProducer: %v", err)
	}
	acks := make([]goAck, len(recs))
	done := make(chan error, 1)
	go func() {
		var firstErr error
		deadline := time.After(goDeadline)
		for n := 0; n < len(recs); n++ {
			select {
			case m := <-p.Successes():
				acks[m.Metadata.(int)] = goAck{m.Partition, m.Offset}
			case e := <-p.Errors():
				if firstErr == nil {
					firstErr = fmt.Errorf("record %d: %w", e.Msg.Metadata.(int), e.Err)
				}
			case <-deadline:
				done <- fmt.Errorf("%d of %d records answered after %v", n, len(recs), goDeadline)
				return
			}
		}
		done <- firstErr
	}()
	for i, r := range recs {
		m := &sarama.ProducerMessage{Topic: topic, Key: sarama.ByteEncoder(r.Key), Value: sarama.ByteEncoder(r.Value), Timestamp: r.Timestamp, Metadata: i}
		for _, h := range r.Headers {
			m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
		}
		p.Input() <- m
	}
	err = <-done
	if cerr := p.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("sarama produce: %v", err)
	}
	return acks
}

// saramaConsume reads every partition at once, each from the oldest
// offset, with Sarama's default consumer settings.
func saramaConsume(t *testing.T, addr, topic string, end map[int32]int64) []goConsumed {
	t.Helper()
	c, err := sarama.NewConsumer([]string{addr}, saramaConfig())
	if err != nil {
		t.Fatalf("sarama.NewConsumer: %v", err)
	}
	defer c.Close()
	var (
		mu   sync.Mutex
		got  []goConsumed
		errs []error
		wg   sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(context.Background(), goDeadline)
	defer cancel()
	for p := int32(0); p < goPartitions; p++ {
		if end[p] == 0 {
			continue
		}
		pc, err := c.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("sarama ConsumePartition %s/%d: %v", topic, p, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var part []goConsumed
			err := func() error {
				for next := int64(0); next < end[p]; {
					select {
					case m := <-pc.Messages():
						g := goConsumed{Partition: m.Partition, Offset: m.Offset}
						g.Key, g.Value, g.Timestamp = m.Key, m.Value, m.Timestamp
						for _, h := range m.Headers {
							g.Headers = append(g.Headers, goHeader{string(h.Key), h.Value})
						}
						part = append(part, g)
						next = m.Offset + 1
					case e := <-pc.Errors():
						return fmt.Errorf("sarama consume %s/%d: %w", topic, p, e)
					case <-ctx.Done():
						return fmt.Errorf("sarama consume %s/%d: at offset %d of %d after %v", topic, p, next, end[p], goDeadline)
					}
				}
				return nil
			}()
			pc.AsyncClose()
			for range pc.Messages() {
			}
			mu.Lock()
			defer mu.Unlock()
			got = append(got, part...)
			if err != nil {
				errs = append(errs, err)
			}
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
