package kafkacli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// StartKind says where consuming starts in each partition.
type StartKind int

const (
	StartEnd       StartKind = iota // only records produced from now on
	StartBeginning                  // the log start offset
	StartOffset                     // an offset; negative counts back from the end
	StartTime                       // the first record at or after a time
)

// Start is where consuming starts in each partition.
type Start struct {
	Kind   StartKind
	Offset int64
	Time   time.Time
}

// StartOffsets resolves s to an offset in each of partitions of topic.
// An --offset outside a partition's log is an error naming both.
func (c *Cluster) StartOffsets(ctx context.Context, topic string, partitions []int, s Start) (map[int]int64, error) {
	ranges, err := c.Offsets(ctx, topic, partitions)
	if err != nil {
		return nil, err
	}
	for _, p := range partitions {
		if r := ranges[p]; r.Err != nil {
			return nil, fmt.Errorf("offsets of %q partition %d: %w", topic, p, r.Err)
		}
	}
	out := make(map[int]int64, len(partitions))
	switch s.Kind {
	case StartEnd:
		for _, p := range partitions {
			out[p] = ranges[p].End
		}
	case StartBeginning:
		for _, p := range partitions {
			out[p] = ranges[p].Start
		}
	case StartOffset:
		for _, p := range partitions {
			r := ranges[p]
			switch {
			case s.Offset < 0:
				out[p] = max(r.End+s.Offset, r.Start)
			case s.Offset < r.Start || s.Offset > r.End:
				return nil, fmt.Errorf("--offset %d: partition %d of %q holds offsets %s", s.Offset, p, topic, describeRange(r))
			default:
				out[p] = s.Offset
			}
		}
	case StartTime:
		at, err := c.OffsetsForTime(ctx, topic, partitions, s.Time)
		if err != nil {
			return nil, err
		}
		for _, p := range partitions {
			out[p] = at[p]
			if at[p] < 0 { // nothing that recent: wait for new records
				out[p] = ranges[p].End
			}
		}
	}
	return out, nil
}

func describeRange(r OffsetRange) string {
	if r.End <= r.Start {
		return fmt.Sprintf("none yet (it is empty; the next record gets offset %d)", r.End)
	}
	return fmt.Sprintf("%d to %d (the next record gets offset %d)", r.Start, r.End-1, r.End)
}

// ErrStop, returned by a Consume callback, ends Consume without error.
var ErrStop = errors.New("stop consuming")

// ErrIdle is returned by Consume when no record came for ConsumeConfig.Idle.
var ErrIdle = errors.New("no record arrived")

// ConsumeConfig says what Consume reads.
type ConsumeConfig struct {
	Topic   string
	Offsets map[int]int64 // partition → first offset to read
	// MaxWait is how long the broker may hold a fetch open waiting for
	// records; it also bounds how long closing takes. 0: 500 ms, the
	// fetch.wait.max.ms of librdkafka and Kafka's own consumer.
	MaxWait time.Duration
	// MaxBytes is the most a fetch returns per partition; 0: 1 MiB
	// (max.partition.fetch.bytes).
	MaxBytes int
	// Idle, if set, ends Consume with ErrIdle when no record arrives for
	// that long.
	Idle time.Duration
	// ReadCommitted reads only committed transactions (isolation.level
	// read_committed): up to the last stable offset, aborted records
	// dropped. Otherwise every record up to the high watermark is read.
	ReadCommitted bool
}

// Consume reads the partitions directly, one fetch loop per partition
// (no consumer group; Fetch, not kafka-go's Reader), and calls fn with each record from a single
// goroutine: in offset order within a partition, interleaved across
// partitions as they arrive. It runs until fn returns ErrStop (nil is
// returned), fn fails, a reader fails, or ctx ends (ctx's error is
// returned).
func (c *Cluster) Consume(ctx context.Context, cfg ConsumeConfig, fn func(*kafka.Message) error) error {
	maxWait := cfg.MaxWait
	if maxWait <= 0 {
		maxWait = 500 * time.Millisecond
	}
	maxBytes := cfg.MaxBytes
	if maxBytes <= 0 {
		maxBytes = 1 << 20
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	type item struct {
		m   kafka.Message
		err error
	}
	items := make(chan item, 1024)
	partitions := make([]int, 0, len(cfg.Offsets))
	for p := range cfg.Offsets {
		partitions = append(partitions, p)
	}
	sort.Ints(partitions)
	var wg sync.WaitGroup
	for _, p := range partitions {
		wg.Add(1)
		go func(p int) {
			defer wg.Done()
			if err := c.consumeFetch(ctx, cfg.Topic, p, cfg.Offsets[p], maxBytes, maxWait, cfg.ReadCommitted, func(m kafka.Message) bool {
				select {
				case items <- item{m: m}:
					return true
				case <-ctx.Done():
					return false
				}
			}); err != nil && ctx.Err() == nil {
				select {
				case items <- item{err: fmt.Errorf("reading %q partition %d: %w", cfg.Topic, p, err)}:
				case <-ctx.Done():
				}
			}
		}(p)
	}
	defer func() {
		cancel()
		wg.Wait()
	}()

	var idle <-chan time.Time
	var timer *time.Timer
	if cfg.Idle > 0 {
		timer = time.NewTimer(cfg.Idle)
		defer timer.Stop()
		idle = timer.C
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-idle:
			return fmt.Errorf("%w in %s", ErrIdle, cfg.Idle)
		case it := <-items:
			if it.err != nil {
				return it.err
			}
			if timer != nil {
				timer.Reset(cfg.Idle)
			}
			if err := fn(&it.m); err != nil {
				if err == ErrStop {
					return nil
				}
				return err
			}
		}
	}
}

// consumeFetch reads a partition from offset with Fetch, read_committed
// or not, and hands each record to send until send says stop or ctx ends.
func (c *Cluster) consumeFetch(ctx context.Context, topic string, p int, offset int64, maxBytes int, maxWait time.Duration, committed bool, send func(kafka.Message) bool) error {
	for ctx.Err() == nil {
		var batch []kafka.Message
		resp, err := Fetch(ctx, c.Client, topic, int32(p), offset, maxBytes, maxWait, committed, func(r *kafka.Record) error {
			if r.Offset < offset {
				return nil
			}
			m := kafka.Message{Topic: topic, Partition: p, Offset: r.Offset, Time: r.Time}
			var err error
			if m.Key, err = readAll(r.Key); err != nil {
				return err
			}
			if m.Value, err = readAll(r.Value); err != nil {
				return err
			}
			for _, h := range r.Headers {
				m.Headers = append(m.Headers, kafka.Header{Key: h.Key, Value: append([]byte(nil), h.Value...)})
			}
			batch = append(batch, m)
			return nil
		})
		if err != nil {
			return err
		}
		if resp.Err != nil {
			return resp.Err
		}
		for _, m := range batch {
			m.HighWaterMark = resp.HighWatermark
			if !send(m) {
				return nil
			}
		}
		if resp.Next > offset {
			offset = resp.Next
		}
	}
	return ctx.Err()
}

// readAll is a record's key or value, nil for a null one.
func readAll(b kafka.Bytes) ([]byte, error) {
	if b == nil {
		return nil, nil
	}
	defer b.Close()
	return io.ReadAll(b)
}
