package kafkacli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol"

	fetchAPI "github.com/segmentio/kafka-go/protocol/fetch"
)

// A read_committed fetch (KIP-98) stops at the last stable offset and
// names the aborted transactions whose records it may hold. kafka-go's
// Client.Fetch returns neither the aborted transactions nor the batches'
// producers, and its Reader does not drop aborted records, so the fetch is
// sent here, through the client's transport, and the records of aborted
// transactions are dropped as Kafka's consumer drops them. The loader and
// `tributary consume --isolation read_committed` read this way.

// CommittedFetch is one read_committed fetch of a partition.
type CommittedFetch struct {
	Err                                       error // the partition's error
	HighWatermark, LastStable, LogStartOffset int64
	// Next is the offset after the last one the fetch covered, skipped
	// records (aborted ones, markers) included; -1 when it covered none.
	Next int64
}

// FetchCommitted fetches a partition read_committed from offset and calls
// fn with each committed record, in offset order, before it reads the
// next: a record's bytes are valid only during the call.
func FetchCommitted(ctx context.Context, c *kafka.Client, topic string, partition int32, offset int64, maxBytes int, maxWait time.Duration, fn func(*kafka.Record) error) (*CommittedFetch, error) {
	return Fetch(ctx, c, topic, partition, offset, maxBytes, maxWait, true, fn)
}

// Fetch is FetchCommitted, or with committed false a read_uncommitted
// fetch: every record up to the high watermark, markers skipped.
// `tributary consume` reads both isolation levels this way rather than
// with kafka-go's Reader, whose parser panics on two adjacent record
// batches with no records (kafka-go issue #874): the cleaner leaves such
// batches, a producer's last one emptied for its sequence.
func Fetch(ctx context.Context, c *kafka.Client, topic string, partition int32, offset int64, maxBytes int, maxWait time.Duration, committed bool, fn func(*kafka.Record) error) (*CommittedFetch, error) {
	var isolation int8
	if committed {
		isolation = 1
	}
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	if c.Addr == nil {
		return nil, errors.New("no address was given for the kafka cluster")
	}
	tr := c.Transport
	if tr == nil {
		tr = kafka.DefaultTransport
	}
	m, err := tr.RoundTrip(ctx, c.Addr, &fetchAPI.Request{
		ReplicaID: -1, MaxWaitTime: int32(maxWait.Milliseconds()), MinBytes: 1, MaxBytes: int32(maxBytes),
		IsolationLevel: isolation, SessionID: -1, SessionEpoch: -1,
		Topics: []fetchAPI.RequestTopic{{Topic: topic, Partitions: []fetchAPI.RequestPartition{{
			Partition: partition, CurrentLeaderEpoch: -1, FetchOffset: offset, LogStartOffset: -1, PartitionMaxBytes: int32(maxBytes),
		}}}},
	})
	if err != nil {
		return nil, err
	}
	res := m.(*fetchAPI.Response)
	if len(res.Topics) == 0 || len(res.Topics[0].Partitions) == 0 {
		return nil, fmt.Errorf("fetch of %s/%d: no partition in the response", topic, partition)
	}
	p := &res.Topics[0].Partitions[0]
	out := &CommittedFetch{HighWatermark: p.HighWatermark, LastStable: p.LastStableOffset, LogStartOffset: p.LogStartOffset, Next: -1}
	if p.ErrorCode != 0 {
		out.Err = kafka.Error(p.ErrorCode)
		return out, nil
	}
	if res.ErrorCode != 0 {
		out.Err = kafka.Error(res.ErrorCode)
		return out, nil
	}
	aborted := slices.Clone(p.AbortedTransactions)
	slices.SortFunc(aborted, func(a, b fetchAPI.ResponseTransaction) int { return int(a.FirstOffset - b.FirstOffset) })
	var batches []protocol.RecordReader
	switch rs := p.RecordSet.Records.(type) {
	case *protocol.RecordStream:
		batches = rs.Records
	case nil:
	default:
		batches = []protocol.RecordReader{rs}
	}
	// Kafka's consumer: a producer's transaction is aborted from the first
	// offset the fetch names up to its abort marker.
	open := map[int64]bool{}
	var lastBase int64 = -1
	for _, b := range batches {
		lastBase = max(lastBase, batchLast(b))
		var pid int64 = -1
		transactional, control := false, false
		switch b := b.(type) {
		case *protocol.RecordBatch:
			pid, transactional = b.ProducerID, b.Attributes.Transactional()
		case *protocol.ControlBatch:
			pid, control = b.ProducerID, true
		}
		for len(aborted) > 0 && aborted[0].FirstOffset <= batchLast(b) {
			open[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		skip := control || transactional && open[pid]
		for {
			r, err := b.ReadRecord()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("reading %s/%d near offset %d: %w", topic, partition, offset, err)
			}
			out.Next = max(out.Next, r.Offset+1)
			if control {
				// A marker ends the producer's transaction, aborted or
				// committed: its later batches are a new one.
				if cr, err := protocol.ReadControlRecord(r); err == nil && (cr.Type == 0 || cr.Type == 1) {
					delete(open, pid)
				}
				continue
			}
			if !skip {
				if err := fn(r); err != nil {
					return nil, err
				}
			}
		}
	}
	if out.Next < 0 && lastBase >= 0 {
		// Only batches the cleaner emptied (a fetch reads one segment,
		// so it can hold nothing else): kafka-go drops a batch's last
		// offset delta, so move past the last one's base. Each of the
		// batches before it ends before the next one starts, and the
		// last one has no record: nothing is skipped. A fetch inside it
		// returns it again, and moves one offset further.
		out.Next = max(lastBase, offset) + 1
	}
	return out, nil
}

// batchLast is the batch's base offset: aborted transactions start at a
// batch's first offset, and a batch belongs to one producer, so comparing
// the base offset decides.
func batchLast(b protocol.RecordReader) int64 {
	switch b := b.(type) {
	case *protocol.RecordBatch:
		return b.BaseOffset
	case *protocol.ControlBatch:
		return b.BaseOffset
	}
	return -1
}
