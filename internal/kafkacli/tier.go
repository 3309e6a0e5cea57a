package kafkacli

import (
	"context"
	"fmt"

	"github.com/segmentio/kafka-go"
)

// ListOffsets' timestamps for tiered storage: the local log start
// (KIP-405) and the last offset in remote storage (KIP-1005).
const (
	earliestLocalTimestamp = -4
	latestTieredTimestamp  = -5
)

// TierOffsets are a tiered partition's local log start (below it, only
// remote storage holds the records) and its last offset in remote
// storage (-1 when nothing is remote yet).
type TierOffsets struct {
	LocalStart, LastTiered int64
	Err                    error
}

// TierOffsets lists the tier offsets of partitions of a topic
// (ListOffsets -4 and -5 to each leader).
func (c *Cluster) TierOffsets(ctx context.Context, topic string, partitions []int) (map[int]TierOffsets, error) {
	out := make(map[int]TierOffsets, len(partitions))
	for _, p := range partitions {
		out[p] = TierOffsets{LocalStart: -1, LastTiered: -1, Err: fmt.Errorf("no answer for partition %d", p)}
	}
	// One request per timestamp: kafka-go keys the answers of other
	// timestamps by offset, which would not say which was which.
	for _, ts := range []int64{earliestLocalTimestamp, latestTieredTimestamp} {
		reqs := make([]kafka.OffsetRequest, 0, len(partitions))
		for _, p := range partitions {
			reqs = append(reqs, kafka.OffsetRequest{Partition: p, Timestamp: ts})
		}
		resp, err := c.Client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
		if err != nil {
			return nil, fmt.Errorf("listing tier offsets of %q: %w", topic, unwrapClient(err))
		}
		for _, po := range resp.Topics[topic] {
			o := out[po.Partition]
			o.Err = po.Error
			for off := range po.Offsets {
				if ts == earliestLocalTimestamp {
					o.LocalStart = off
				} else {
					o.LastTiered = off
				}
			}
			out[po.Partition] = o
		}
	}
	return out, nil
}
