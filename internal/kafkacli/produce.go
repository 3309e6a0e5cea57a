package kafkacli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// WriterConfig is what a producing command sets on kafka-go's Writer.
type WriterConfig struct {
	Topic       string
	Partition   int // -1: by key (see Partitioner)
	Acks        kafka.RequiredAcks
	Compression kafka.Compression
	BatchSize   int           // records per batch; 0: kafka-go's 100
	BatchBytes  int64         // bytes per request to a partition; 0: 1 MiB
	Linger      time.Duration // how long a batch waits to fill; 0: 5 ms
	// BufferBytes bounds the bytes handed to the writer and not yet
	// acknowledged, as the Java producer's buffer.memory does; 0: 32 MiB.
	BufferBytes int64
}

// DefaultLinger is Kafka's linger.ms since 4.0 (KIP-1030). kafka-go's own
// default, 1 s, would hold every partial batch for a second.
const DefaultLinger = 5 * time.Millisecond

// DefaultBufferBytes is the Java producer's buffer.memory.
const DefaultBufferBytes = 32 << 20

// newWriter builds an asynchronous writer: WriteMessages only queues, and
// completion reports each batch's outcome. Asynchronous is how Kafka's own
// producer works and the only way kafka-go keeps a request in flight to
// every partition at once.
func (c *Cluster) newWriter(cfg WriterConfig, completion func([]kafka.Message, error)) *kafka.Writer {
	linger := cfg.Linger
	if linger <= 0 {
		linger = DefaultLinger
	}
	return &kafka.Writer{
		Addr:         c.Client.Addr,
		Transport:    c.Transport,
		Topic:        cfg.Topic,
		Balancer:     NewPartitioner(cfg.Partition),
		RequiredAcks: cfg.Acks,
		Compression:  cfg.Compression,
		BatchSize:    cfg.BatchSize,
		BatchBytes:   cfg.BatchBytes,
		BatchTimeout: linger,
		Async:        true,
		Completion:   completion,
		ErrorLogger:  debugLogger("kafka-go writer"),
	}
}

// debugLogger passes kafka-go's log lines to slog at debug level
// (--log-level debug shows them).
func debugLogger(who string) kafka.Logger {
	return kafka.LoggerFunc(func(msg string, args ...any) {
		slog.Debug(who + ": " + fmt.Sprintf(msg, args...))
	})
}

// budget bounds the bytes queued in an asynchronous writer.
type budget struct {
	mu   sync.Mutex
	cond sync.Cond
	max  int64
	used int64
}

func newBudget(max int64) *budget {
	if max <= 0 {
		max = DefaultBufferBytes
	}
	b := &budget{max: max}
	b.cond.L = &b.mu
	return b
}

// acquire waits until n more bytes fit; one record larger than the whole
// budget still goes through, alone.
func (b *budget) acquire(n int64) {
	b.mu.Lock()
	for b.used > 0 && b.used+n > b.max {
		b.cond.Wait()
	}
	b.used += n
	b.mu.Unlock()
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
	b.cond.Broadcast()
}

func messageBytes(m *kafka.Message) int64 {
	n := int64(len(m.Key) + len(m.Value))
	for _, h := range m.Headers {
		n += int64(len(h.Key) + len(h.Value))
	}
	return n
}

// LineConfig says how ProduceLines turns lines into records.
type LineConfig struct {
	WriterConfig
	// KeySeparator, if set, splits each line into key and value at its
	// first occurrence; a line without it is an error, as in Kafka's
	// console producer.
	KeySeparator string
	// Headers are added to every record.
	Headers []kafka.Header
}

// ProduceSummary says what ProduceLines did.
type ProduceSummary struct {
	Topic      string
	Records    int64         // acknowledged (or sent, with acks=0)
	Failed     int64         // not written
	Partitions map[int]int64 // records per partition
	Elapsed    time.Duration
	Err        error // the first failure
}

// String is the one-line summary: records, and how they fell on partitions.
func (s *ProduceSummary) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "produced %d %s to %q in %s", s.Records, plural(s.Records, "record"), s.Topic, s.Elapsed.Round(time.Millisecond))
	if len(s.Partitions) > 0 {
		ps := make([]int, 0, len(s.Partitions))
		for p := range s.Partitions {
			ps = append(ps, p)
		}
		sort.Ints(ps)
		b.WriteString(" (partition:records")
		for _, p := range ps {
			fmt.Fprintf(&b, " %d:%d", p, s.Partitions[p])
		}
		b.WriteString(")")
	}
	if s.Failed > 0 {
		fmt.Fprintf(&b, "; %d failed", s.Failed)
	}
	return b.String()
}

func plural(n int64, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// ProduceLines sends every line of in (without its \n or \r\n) as a record,
// until in ends, ctx is cancelled or a record fails; then it waits for what
// was sent to be acknowledged or to fail. The returned error is a bad line, or the first record that
// could not be written.
func (c *Cluster) ProduceLines(ctx context.Context, in io.Reader, cfg LineConfig) (*ProduceSummary, error) {
	sum := &ProduceSummary{Topic: cfg.Topic, Partitions: map[int]int64{}}
	var mu sync.Mutex // guards sum against the writer's goroutines
	failed := make(chan struct{})
	buf := newBudget(cfg.BufferBytes)
	w := c.newWriter(cfg.WriterConfig, func(msgs []kafka.Message, err error) {
		var n int64
		for i := range msgs {
			n += messageBytes(&msgs[i])
		}
		buf.release(n)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			sum.Failed += int64(len(msgs))
			if sum.Err == nil {
				sum.Err = fmt.Errorf("writing to %q partition %d: %w", cfg.Topic, msgs[0].Partition, unwrapClient(err))
				close(failed)
			}
			return
		}
		sum.Records += int64(len(msgs))
		sum.Partitions[msgs[0].Partition] += int64(len(msgs))
	})
	start := time.Now()

	// Lines are read in their own goroutine so that Ctrl-C stops the
	// command even while it waits on a terminal.
	type line struct {
		b   []byte
		err error
	}
	lines := make(chan line, 64)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(lines)
		r := bufio.NewReaderSize(in, 64<<10)
		for {
			b, err := r.ReadBytes('\n')
			if len(b) > 0 {
				select {
				case lines <- line{b: b}:
				case <-stop:
					return
				}
			}
			if err != nil {
				if err != io.EOF {
					select {
					case lines <- line{err: err}:
					case <-stop:
					}
				}
				return
			}
		}
	}()

	var inputErr error
	sep := []byte(cfg.KeySeparator)
	n := 0
loop:
	for {
		var l line
		var ok bool
		select {
		case <-ctx.Done():
			break loop
		case <-failed: // stop reading at the first record that failed
			break loop
		case l, ok = <-lines:
		}
		if !ok {
			break loop
		}
		if l.err != nil {
			inputErr = fmt.Errorf("reading input: %w", l.err)
			break loop
		}
		n++
		b := bytes.TrimSuffix(l.b, []byte("\n"))
		b = bytes.TrimSuffix(b, []byte("\r"))
		m := kafka.Message{Value: b, Headers: cfg.Headers, Time: time.Now()}
		if len(sep) > 0 {
			k, v, found := bytes.Cut(b, sep)
			if !found {
				inputErr = fmt.Errorf("line %d: no key separator %q in %q", n, cfg.KeySeparator, abbreviate(b))
				break loop
			}
			m.Key, m.Value = k, v
		}
		buf.acquire(messageBytes(&m))
		if err := w.WriteMessages(ctx, m); err != nil {
			buf.release(messageBytes(&m))
			var tooLarge kafka.MessageTooLargeError
			if errors.As(err, &tooLarge) {
				limit := w.BatchBytes
				if limit == 0 {
					limit = 1 << 20 // kafka-go's default, Kafka's max.request.size
				}
				inputErr = fmt.Errorf("line %d: a record of %d bytes is larger than a request may be (%d bytes)", n, messageBytes(&m), limit)
			} else {
				inputErr = fmt.Errorf("line %d: %w", n, unwrapClient(err))
			}
			break loop
		}
	}
	w.Close() // flushes and waits for every batch
	sum.Elapsed = time.Since(start)
	if inputErr != nil {
		return sum, inputErr
	}
	return sum, sum.Err
}

// abbreviate shortens a line for an error message.
func abbreviate(b []byte) string {
	if len(b) > 60 {
		return string(b[:57]) + "..."
	}
	return string(b)
}
