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

type growTopic struct {
	topic      string
	count      int32
	assignment [][]int32
}

func createPartitionsReq(validateOnly bool, topics ...growTopic) *kmsg.CreatePartitionsRequest {
	req := kmsg.NewPtrCreatePartitionsRequest()
	req.TimeoutMillis, req.ValidateOnly = 10000, validateOnly
	for _, g := range topics {
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = g.topic, g.count
		for _, a := range g.assignment {
			ra := kmsg.NewCreatePartitionsRequestTopicAssignment()
			ra.Replicas = a
			rt.Assignment = append(rt.Assignment, ra)
		}
		req.Topics = append(req.Topics, rt)
	}
	return req
}

func TestCreatePartitionsEveryVersion(t *testing.T) {
	s := startAdminBroker(t, nil)
	for v := int16(0); v <= 3; v++ {
		topic := fmt.Sprintf("grow-v%d", v)
		admCreateTopic(t, s, topic, 1, nil)

		resp := admSend[*kmsg.CreatePartitionsResponse](t, s, createPartitionsReq(true, growTopic{topic, 3, nil}), v)
		admWantCode(t, fmt.Sprintf("v%d validate only", v), resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, nil)
		if n := len(admMetadata(t, s, topic).Partitions); n != 1 {
			t.Errorf("v%d: validate_only grew the topic to %d partitions", v, n)
		}

		resp = admSend[*kmsg.CreatePartitionsResponse](t, s, createPartitionsReq(false, growTopic{topic, 3, nil}), v)
		st := resp.Topics[0]
		admWantCode(t, fmt.Sprintf("v%d", v), st.ErrorCode, st.ErrorMessage, nil)
		if st.Topic != topic || st.ErrorMessage != nil {
			t.Errorf("v%d: answered for %q with message %s", v, st.Topic, admShow(st.ErrorMessage))
		}
		mt := admMetadata(t, s, topic)
		if len(mt.Partitions) != 3 {
			t.Fatalf("v%d: Metadata lists %d partitions", v, len(mt.Partitions))
		}
		for i, p := range mt.Partitions {
			if p.Partition != int32(i) || p.Leader != s.nodeID || p.ErrorCode != 0 {
				t.Errorf("v%d: partition %+v", v, p)
			}
			if _, ok := s.parts.Get(topic, int32(i)); !ok {
				t.Errorf("v%d: partition %d is not hosted", v, i)
			}
		}
		// With an explicit assignment.
		resp = admSend[*kmsg.CreatePartitionsResponse](t, s, createPartitionsReq(false, growTopic{topic, 5, [][]int32{{1}, {1}}}), v)
		admWantCode(t, fmt.Sprintf("v%d with assignment", v), resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, nil)
		if n := len(admMetadata(t, s, topic).Partitions); n != 5 {
			t.Errorf("v%d: %d partitions after growing to 5", v, n)
		}
	}
}

// TestCreatePartitionsClientsSeeThem grows a topic under a running
// producer and consumer.
func TestCreatePartitionsClientsSeeThem(t *testing.T) {
	s := startAdminBroker(t, nil)
	admCreateTopic(t, s, "growing", 1, nil)
	producer := admClient(t, s)
	consumer := admClient(t, s, kgo.ConsumeTopics("growing"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.MetadataMinAge(10*time.Millisecond), kgo.MetadataMaxAge(100*time.Millisecond), kgo.FetchMaxWait(100*time.Millisecond))
	admProduce(t, producer, "growing", 0, 5)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := map[int32]int{}
	poll := func(want map[int32]int) {
		t.Helper()
		for {
			done := true
			for p, n := range want {
				done = done && got[p] >= n
			}
			if done {
				return
			}
			fs := consumer.PollFetches(ctx)
			if err := fs.Err(); err != nil {
				t.Fatalf("poll: %v (have %v, want %v)", err, got, want)
			}
			fs.EachRecord(func(r *kgo.Record) { got[r.Partition]++ })
		}
	}
	poll(map[int32]int{0: 5})

	resp := admSend[*kmsg.CreatePartitionsResponse](t, s, createPartitionsReq(false, growTopic{"growing", 3, nil}), 3)
	admWantCode(t, "grow", resp.Topics[0].ErrorCode, resp.Topics[0].ErrorMessage, nil)
	// The producer learns of partition 2 at its next metadata refresh.
	for {
		producer.ForceMetadataRefresh()
		r := producer.ProduceSync(ctx, &kgo.Record{Topic: "growing", Partition: 2, Value: []byte("first of partition 2")})
		if r.FirstErr() == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("producing to the new partition: %v", r.FirstErr())
		}
		time.Sleep(20 * time.Millisecond)
	}
	admProduce(t, producer, "growing", 2, 6)
	admProduce(t, producer, "growing", 1, 3)
	poll(map[int32]int{0: 5, 1: 3, 2: 7})
}

func TestCreatePartitionsErrors(t *testing.T) {
	s := startAdminBroker(t, nil)
	admCreateTopic(t, s, "three", 3, nil)
	admCreateTopic(t, s, "twice", 1, nil)
	for _, tc := range []struct {
		what   string
		topics []growTopic
		want   *kerr.Error
		says   string
	}{
		{"fewer", []growTopic{{"three", 2, nil}}, kerr.InvalidPartitions, "3 partitions"},
		{"as many", []growTopic{{"three", 3, nil}}, kerr.InvalidPartitions, "3 partitions"},
		{"unknown topic", []growTopic{{"missing", 4, nil}}, kerr.UnknownTopicOrPartition, "missing"},
		{"too few assignments", []growTopic{{"three", 6, [][]int32{{1}}}}, kerr.InvalidReplicaAssignment, "3 partitions are added but 1"},
		{"unknown broker", []growTopic{{"three", 4, [][]int32{{9}}}}, kerr.InvalidReplicaAssignment, "broker 9"},
		{"broker twice", []growTopic{{"three", 4, [][]int32{{1, 1}}}}, kerr.InvalidReplicaAssignment, "twice"},
		{"no replicas", []growTopic{{"three", 4, [][]int32{{}}}}, kerr.InvalidReplicaAssignment, "no replicas"},
		{"topic twice", []growTopic{{"twice", 2, nil}, {"twice", 3, nil}}, kerr.InvalidRequest, "more than once"},
	} {
		for _, validateOnly := range []bool{true, false} {
			resp := admSend[*kmsg.CreatePartitionsResponse](t, s, createPartitionsReq(validateOnly, tc.topics...), 3)
			if len(resp.Topics) != len(tc.topics) {
				t.Fatalf("%s: %d results", tc.what, len(resp.Topics))
			}
			for _, st := range resp.Topics {
				what := fmt.Sprintf("%s (validate only %v)", tc.what, validateOnly)
				admWantCode(t, what, st.ErrorCode, st.ErrorMessage, tc.want)
				admWantMessage(t, what, st.ErrorMessage, tc.says)
			}
		}
	}
	for topic, want := range map[string]int{"three": 3, "twice": 1} {
		if n := len(s.ctrl.Image().Topics[topic].Partitions); n != want {
			t.Errorf("%s has %d partitions after failed requests", topic, n)
		}
	}
}
