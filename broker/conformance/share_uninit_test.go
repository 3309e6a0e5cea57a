package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// uninitAnswer is what a broker answers a member fetching and
// acknowledging a share partition its group's coordinator never
// initialized.
type uninitAnswer struct {
	FetchCode   int16
	FetchMsg    *string
	Acquired    int
	AckCode     int16
	AckMsg      string
	AckMsgIsNil bool
}

// TestShareUninitializedLikeKafka: a member of a share group fetches and
// acknowledges a partition of a topic its group never subscribed to, so
// its state was never initialized. Apache Kafka 4.4 answers the fetch
// UNKNOWN_SERVER_ERROR without a message and no records, and the
// acknowledgement UNKNOWN_TOPIC_OR_PARTITION with that error's message;
// Tributary answers the same (the answer its leaders give made-up groups,
// TestShareFetchStrangerAtLeader in broker/cluster).
func TestShareUninitializedLikeKafka(t *testing.T) {
	k := testbroker.StartKafka(t)
	groupsWarmUp(t, k.Addr())
	want := uninitProbe(t, k.Addr())
	b := extBroker(t)
	groupsWarmUp(t, b.Addr())
	got := uninitProbe(t, b.Addr())
	t.Logf("Kafka 4.4: %+v; Tributary: %+v", want, got)
	if want.FetchCode != kerr.UnknownServerError.Code || want.FetchMsg != nil || want.AckCode != kerr.UnknownTopicOrPartition.Code {
		t.Errorf("Kafka 4.4 answered %+v: not what this test was written against", want)
	}
	if got.FetchCode != want.FetchCode || (got.FetchMsg == nil) != (want.FetchMsg == nil) || got.Acquired != want.Acquired ||
		got.AckCode != want.AckCode || got.AckMsg != want.AckMsg || got.AckMsgIsNil != want.AckMsgIsNil {
		t.Errorf("Tributary answered %+v, Kafka 4.4 %+v", got, want)
	}
}

func uninitProbe(t *testing.T, addr string) uninitAnswer {
	t.Helper()
	groupsCreateTopic(t, addr, "uninit-probe", 1)
	groupsCreateTopic(t, addr, "uninit-joined", 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	var id [16]byte
	for id == ([16]byte{}) {
		if ctx.Err() != nil {
			t.Fatal("no topic id for uninit-probe")
		}
		td, _ := adm.ListTopics(ctx, "uninit-probe")
		id = td["uninit-probe"].ID
		time.Sleep(50 * time.Millisecond)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "uninit-probe", Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	const group, member = "uninit-real", "ZHmXq4TyRkWZ1HnqCcRT0w"
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = group, member, 0, []string{"uninit-joined"}
	for {
		r, err := hb.RequestWith(ctx, cl)
		if err == nil && r.ErrorCode == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("join: %v %v", err, r)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Kafka leaves the partition out of its answers while its share
	// state topic starts: asked again until one names it with an error
	// or records.
	for {
		if ctx.Err() != nil {
			t.Fatal("no fetch answered the partition with an error or records in 2 minutes")
		}
		f := kmsg.NewPtrShareFetchRequest()
		f.GroupID, f.MemberID, f.MaxWaitMillis, f.MaxBytes, f.MaxRecords, f.BatchSize = kmsg.StringPtr(group), kmsg.StringPtr(member), 500, 1<<20, 10, 10
		f.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{kmsg.NewShareFetchRequestTopicPartition()}}}
		r, err := f.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if r.ErrorCode != 0 {
			t.Fatalf("fetch: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			time.Sleep(500 * time.Millisecond)
			continue
		}
		p := r.Topics[0].Partitions[0]
		if p.ErrorCode == 0 && len(p.AcquiredRecords) == 0 {
			// Tributary's form of the same wait: the partition with
			// nothing, while the state cannot be read yet.
			time.Sleep(500 * time.Millisecond)
			continue
		}
		out := uninitAnswer{FetchCode: p.ErrorCode, FetchMsg: p.ErrorMessage, Acquired: len(p.AcquiredRecords)}
		a := kmsg.NewPtrShareAcknowledgeRequest()
		a.GroupID, a.MemberID, a.ShareSessionEpoch = kmsg.StringPtr(group), kmsg.StringPtr(member), 1
		ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
		ap.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 0, AcknowledgeTypes: []int8{1}}}
		a.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: id, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{ap}}}
		ar, err := a.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if ar.ErrorCode != 0 || len(ar.Topics) != 1 || len(ar.Topics[0].Partitions) != 1 {
			t.Fatalf("acknowledgement: %v %+v", kerr.ErrorForCode(ar.ErrorCode), ar.Topics)
		}
		ap2 := ar.Topics[0].Partitions[0]
		out.AckCode, out.AckMsgIsNil = ap2.ErrorCode, ap2.ErrorMessage == nil
		if ap2.ErrorMessage != nil {
			out.AckMsg = *ap2.ErrorMessage
		}
		return out
	}
}
