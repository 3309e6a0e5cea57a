package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// deleteRecordsReq asks to delete before offset in each named partition.
func deleteRecordsReq(topic string, offsets map[int32]int64) *kmsg.DeleteRecordsRequest {
	req := kmsg.NewPtrDeleteRecordsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewDeleteRecordsRequestTopic()
	rt.Topic = topic
	for p, o := range offsets {
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Partition, rp.Offset = p, o
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

func deleteRecordsOne(t *testing.T, s *Server, topic string, partition int32, offset int64, v int16) kmsg.DeleteRecordsResponseTopicPartition {
	t.Helper()
	resp := admSend[*kmsg.DeleteRecordsResponse](t, s, deleteRecordsReq(topic, map[int32]int64{partition: offset}), v)
	return resp.Topics[0].Partitions[0]
}

func TestDeleteRecords(t *testing.T) {
	s := startAdminBroker(t, nil)
	cl := admClient(t, s)
	for v := int16(0); v <= 2; v++ {
		topic := fmt.Sprintf("trim-v%d", v)
		// Small segments, so that moving the start deletes whole ones.
		admCreateTopic(t, s, topic, 1, map[string]string{"segment.bytes": "256"})
		for range 10 {
			admProduce(t, cl, topic, 0, 10) // one batch of 10 per request
		}
		part, _ := s.parts.Get(topic, 0)
		segs := part.Log.SegmentCount()
		if segs < 3 {
			t.Fatalf("want several segments to delete, have %d", segs)
		}

		for _, step := range []struct {
			offset  int64
			wantLW  int64
			wantErr *kerr.Error
		}{
			{45, 45, nil},
			{20, 45, nil},                    // below the start: nothing moves
			{45, 45, nil},                    // at the start: idempotent
			{101, -1, kerr.OffsetOutOfRange}, // beyond the high watermark
			{-2, -1, kerr.OffsetOutOfRange},
			{-1, 100, nil}, // the high watermark
		} {
			sp := deleteRecordsOne(t, s, topic, 0, step.offset, v)
			what := fmt.Sprintf("v%d offset %d", v, step.offset)
			admWantCode(t, what, sp.ErrorCode, nil, step.wantErr)
			if sp.LowWatermark != step.wantLW {
				t.Errorf("%s: low watermark %d, want %d", what, sp.LowWatermark, step.wantLW)
			}
		}
		if got := part.Log.LogStartOffset(); got != 100 {
			t.Errorf("v%d: log start offset %d after deleting everything", v, got)
		}
		if n := part.Log.SegmentCount(); n >= segs {
			t.Errorf("v%d: %d segments before, %d after: none deleted", v, segs, n)
		}
	}
}

// TestDeleteRecordsSeenByClients checks that ListOffsets and consumers
// start at the new log start offset.
func TestDeleteRecordsSeenByClients(t *testing.T) {
	s := startAdminBroker(t, nil)
	admCreateTopic(t, s, "trimmed", 2, nil)
	cl := admClient(t, s)
	admProduce(t, cl, "trimmed", 0, 20)
	admProduce(t, cl, "trimmed", 1, 20)

	resp := admSend[*kmsg.DeleteRecordsResponse](t, s, deleteRecordsReq("trimmed", map[int32]int64{0: 15, 1: 5}), 2)
	for _, sp := range resp.Topics[0].Partitions {
		admWantCode(t, fmt.Sprintf("partition %d", sp.Partition), sp.ErrorCode, nil, nil)
	}

	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "trimmed"
	for p := range int32(2) {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp = p, -2 // earliest
		lt.Partitions = append(lt.Partitions, lp)
	}
	lo.Topics = append(lo.Topics, lt)
	want := map[int32]int64{0: 15, 1: 5}
	for _, lp := range admSend[*kmsg.ListOffsetsResponse](t, s, lo, 8).Topics[0].Partitions {
		if lp.ErrorCode != 0 || lp.Offset != want[lp.Partition] {
			t.Errorf("earliest offset of partition %d: %d (%v), want %d", lp.Partition, lp.Offset, kerr.ErrorForCode(lp.ErrorCode), want[lp.Partition])
		}
	}

	consumer := admClient(t, s, kgo.ConsumeTopics("trimmed"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first := map[int32]int64{}
	for n := 0; n < 5+15; {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err(); err != nil {
			t.Fatal(err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			n++
			if _, ok := first[r.Partition]; !ok {
				first[r.Partition] = r.Offset
			}
		})
	}
	if first[0] != 15 || first[1] != 5 {
		t.Errorf("consumption from the start began at %v, want partition 0 at 15 and 1 at 5", first)
	}
}

func TestDeleteRecordsErrors(t *testing.T) {
	s := startAdminBroker(t, nil)
	admCreateTopic(t, s, "kept", 1, nil)
	admCreateTopic(t, s, "compacted", 1, map[string]string{"cleanup.policy": "compact"})
	cl := admClient(t, s)
	admProduce(t, cl, "kept", 0, 3)

	for _, tc := range []struct {
		topic     string
		partition int32
		want      *kerr.Error
	}{
		{"missing", 0, kerr.UnknownTopicOrPartition},
		{"kept", 1, kerr.UnknownTopicOrPartition},
		{"kept", -1, kerr.UnknownTopicOrPartition},
		{"compacted", 0, kerr.PolicyViolation},
	} {
		sp := deleteRecordsOne(t, s, tc.topic, tc.partition, -1, 2)
		admWantCode(t, fmt.Sprintf("%s-%d", tc.topic, tc.partition), sp.ErrorCode, nil, tc.want)
		if sp.LowWatermark != -1 {
			t.Errorf("%s-%d: low watermark %d on error", tc.topic, tc.partition, sp.LowWatermark)
		}
	}
	if p, _ := s.parts.Get("kept", 0); p.Log.LogStartOffset() != 0 {
		t.Errorf("a failed request moved the start of kept-0 to %d", p.Log.LogStartOffset())
	}
}
