package server

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareAckRollback: an acknowledgement whose write to
// __share_group_state fails (appended, never committed, as with too few
// in-sync replicas) is answered COORDINATOR_NOT_AVAILABLE and does not
// count: the records come back when their lock runs out, delivered a
// second time, as Kafka's SharePartition rolls back a failed persister
// write.
func TestShareAckRollback(t *testing.T) {
	t.Parallel()
	props := map[string]string{}
	for k, v := range shareProps {
		props[k] = v
	}
	props["group.share.record.lock.duration.ms"] = "1000"
	// The member does not heartbeat: its session must outlast the whole
	// test on a loaded machine (6 s could run out before the last fetch).
	props["group.share.session.timeout.ms"] = "30000"
	s := startAdminBroker(t, props)
	id := admCreateTopic(t, s, "rb", 1, nil)
	admProduce(t, admClient(t, s), "rb", 0, 3)
	setShareEarliest(t, s, "rbg")
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"rbg"}
	admSend[*kmsg.FindCoordinatorResponse](t, s, fc, 4)
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.SubscribedTopicNames = "rbg", "m1", []string{"rb"}
	for i := 0; ; i++ {
		r := admSend[*kmsg.ShareGroupHeartbeatResponse](t, s, hb, 1)
		if r.ErrorCode == 0 {
			break
		}
		if i == 200 {
			t.Fatalf("join: %v", kerr.ErrorForCode(r.ErrorCode))
		}
		time.Sleep(20 * time.Millisecond)
	}

	group, member := "rbg", "m1"
	conn := admClient(t, s).Broker(1)
	epoch := int32(0)
	fetch := func(acks []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) kmsg.ShareFetchResponseTopicPartition {
		t.Helper()
		r := kmsg.NewPtrShareFetchRequest()
		r.GroupID, r.MemberID, r.ShareSessionEpoch, r.MaxRecords, r.MaxBytes, r.MaxWaitMillis = &group, &member, epoch, 10, 1<<20, 100
		tp := kmsg.NewShareFetchRequestTopicPartition()
		tp.AcknowledgementBatches = acks
		r.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{tp}}}
		resp, err := r.RequestWith(context.Background(), conn)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != 0 {
			t.Fatalf("share fetch: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		epoch++
		// A session's later answers name only partitions with news.
		if len(resp.Topics) == 0 {
			return kmsg.NewShareFetchResponseTopicPartition()
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("share fetch answered %+v", resp.Topics)
		}
		return resp.Topics[0].Partitions[0]
	}
	acquired := func() kmsg.ShareFetchResponseTopicPartitionAcquiredRecord {
		t.Helper()
		// Within the member's session timeout (30 s): it does not heartbeat.
		deadline := time.Now().Add(20 * time.Second)
		for {
			p := fetch(nil)
			if len(p.AcquiredRecords) > 0 {
				return p.AcquiredRecords[0]
			}
			if time.Now().After(deadline) {
				t.Fatal("no records acquired in 20 s")
			}
		}
	}
	if a := acquired(); a.FirstOffset != 0 || a.LastOffset != 2 || a.DeliveryCount != 1 {
		t.Fatalf("acquired %+v, want 0-2 delivered once", a)
	}

	s.shareState.uncommitted.Store(true)
	p := fetch([]kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 2, AcknowledgeTypes: []int8{1}}})
	s.shareState.uncommitted.Store(false)
	admWantCode(t, "accept with a failing state write", p.AcknowledgeErrorCode, nil, kerr.CoordinatorNotAvailable)

	// The accept did not count: once the lock (1 s) runs out the records
	// are delivered again.
	if a := acquired(); a.FirstOffset != 0 || a.LastOffset != 2 || a.DeliveryCount != 2 {
		t.Fatalf("after the failed accept, acquired %+v, want 0-2 delivered a second time", a)
	}
	p = fetch([]kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 2, AcknowledgeTypes: []int8{1}}})
	admWantCode(t, "accept", p.AcknowledgeErrorCode, nil, nil)
}
