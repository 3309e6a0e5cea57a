package loader

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/tributary-io/tributary/formats/decode"
	"github.com/tributary-io/tributary/internal/kafkacli"
)

// fetchMaxBytes is what one Fetch may return. 4 MiB keeps a worker's memory
// small while amortising the round trip over thousands of records.
const fetchMaxBytes = 4 << 20

// ErrGone is wrapped by the errors of offsets no longer on the broker.
var ErrGone = errors.New("offsets no longer on the broker")

// rangeReader reads exactly the offsets [from, to) of a partition. Offsets
// missing inside the range (compaction) are simply absent; the reader stops
// at the first record at or past to.
type rangeReader struct {
	client    *kafka.Client
	topic     string
	partition int32
	next, to  int64
	allowGaps bool
	gaps      []Gap
}

// read calls fn with batches of records until the range is read.
func (r *rangeReader) read(ctx context.Context, fn func([]decode.Record) error) error {
	var recs []decode.Record
	empty := 0
	for r.next < r.to {
		recs = recs[:0]
		resp, err := kafkacli.FetchCommitted(ctx, r.client, r.topic, r.partition, r.next, fetchMaxBytes, 500*time.Millisecond, func(rec *kafka.Record) error {
			if rec.Offset < r.next || rec.Offset >= r.to {
				return nil // the head of a batch that starts before the range, or past its end
			}
			d, err := toRecord(r.topic, r.partition, rec)
			if err == nil {
				recs = append(recs, d)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("fetching %s/%d at offset %d: %w", r.topic, r.partition, r.next, unwrapKafka(err))
		}
		if resp.Err != nil {
			if errors.Is(resp.Err, kafka.OffsetOutOfRange) && resp.LogStartOffset > r.next {
				gap := Gap{Topic: r.topic, Partition: r.partition, From: r.next, To: min(resp.LogStartOffset, r.to),
					Reason: "deleted by retention or DeleteRecords while the run was planned"}
				if !r.allowGaps {
					return fmt.Errorf("%s/%d: %w: offsets %d to %d are gone, the first available is %d (rerun with --allow-gaps to skip them)",
						r.topic, r.partition, ErrGone, gap.From, gap.To-1, resp.LogStartOffset)
				}
				r.gaps = append(r.gaps, gap)
				r.next = gap.To
				continue
			}
			return fmt.Errorf("fetching %s/%d at offset %d: %w", r.topic, r.partition, r.next, resp.Err)
		}
		// Aborted records and markers are skipped, not loaded: the range
		// moves past them too.
		if resp.Next > r.next {
			r.next = min(resp.Next, r.to)
		}
		if len(recs) == 0 {
			if r.next >= r.to {
				break
			}
			// Nothing new: compacted away up to the last stable offset,
			// or the log was truncated below the range after the plan.
			if resp.Next < 0 && resp.LastStable <= r.next {
				if empty++; empty >= 3 {
					return fmt.Errorf("%s/%d: the committed log ends at %d, before the planned end %d (truncated after the plan?)", r.topic, r.partition, resp.LastStable, r.to)
				}
			}
			continue
		}
		empty = 0
		if err := fn(recs); err != nil {
			return err
		}
	}
	return nil
}

func toRecord(topic string, partition int32, rec *kafka.Record) (decode.Record, error) {
	d := decode.Record{Topic: topic, Partition: partition, Offset: rec.Offset, Timestamp: rec.Time.UnixMilli()}
	var err error
	if d.Key, err = readBytes(rec.Key); err != nil {
		return d, err
	}
	if d.Value, err = readBytes(rec.Value); err != nil {
		return d, err
	}
	for _, h := range rec.Headers {
		d.Headers = append(d.Headers, decode.Header{Key: h.Key, Value: append([]byte(nil), h.Value...)})
	}
	return d, nil
}

// readBytes copies a record's key or value out of kafka-go's buffers,
// which are reused by the next fetch.
func readBytes(b kafka.Bytes) ([]byte, error) {
	if b == nil {
		return nil, nil
	}
	out := make([]byte, b.Len())
	_, err := io.ReadFull(b, out)
	return out, err
}

// unwrapKafka drops kafka-go's "kafka.(*Client).Method: " prefix.
func unwrapKafka(err error) error {
	if inner := errors.Unwrap(err); inner != nil && len(err.Error()) > len(inner.Error()) {
		return inner
	}
	return err
}
