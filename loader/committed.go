package loader

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
	"github.com/tributary-io/tributary/formats/decode"
)

// The loader reads committed data only (KIP-98 read_committed): its plans
// end at each partition's last stable offset, and its fetches ask for
// read_committed, which stops at the LSO and names the aborted
// transactions whose records the fetch may hold. kafka-go's Client.Fetch
// returns neither the aborted transactions nor the batches' producers, so
// the fetch is sent here, through the client's transport, and the records
// of aborted transactions are dropped as Kafka's consumer drops them.

// committedFetch is one read_committed fetch of a partition.
type committedFetch struct {
	err                                       error // the partition's error
	highWatermark, lastStable, logStartOffset int64
	records                                   []decode.Record // committed, in offset order
	// next is the offset after the last one the fetch covered, skipped
	// records (aborted ones, markers) included; -1 when it covered none.
	next int64
}

func fetchCommitted(ctx context.Context, c *kafka.Client, topic string, partition int32, offset int64, maxBytes int, maxWait time.Duration) (*committedFetch, error) {
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
		IsolationLevel: 1, SessionID: -1, SessionEpoch: -1,
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
	out := &committedFetch{highWatermark: p.HighWatermark, lastStable: p.LastStableOffset, logStartOffset: p.LogStartOffset, next: -1}
	if p.ErrorCode != 0 {
		out.err = kafka.Error(p.ErrorCode)
		return out, nil
	}
	if res.ErrorCode != 0 {
		out.err = kafka.Error(res.ErrorCode)
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
	for _, b := range batches {
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
			out.next = max(out.next, r.Offset+1)
			if control {
				// A marker ends the producer's transaction, aborted or
				// committed: its later batches are a new one.
				if cr, err := protocol.ReadControlRecord(r); err == nil && (cr.Type == 0 || cr.Type == 1) {
					delete(open, pid)
				}
				continue
			}
			if !skip {
				// Now: a record's bytes are only valid until the next read.
				d, err := toRecord(topic, partition, r)
				if err != nil {
					return nil, err
				}
				out.records = append(out.records, d)
			}
		}
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
