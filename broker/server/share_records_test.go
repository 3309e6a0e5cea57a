package server

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareFetchRecordsNeverNull: a partition answered with only an error
// carries empty records, never null. Records is non-nullable from
// ShareFetch v1 on and the Java client refuses a whole response with a
// null in it ("non-nullable field records was serialized as null"), so
// one failing partition cost a Java consumer every partition's records.
func TestShareFetchRecordsNeverNull(t *testing.T) {
	t.Parallel()
	s := startAdminBroker(t, shareProps)
	id := admCreateTopic(t, s, "null-share", 1, nil)
	admProduce(t, admClient(t, s), "null-share", 0, 3)
	setShareEarliest(t, s, "nulls")
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"nulls"}
	admSend[*kmsg.FindCoordinatorResponse](t, s, fc, 4)
	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = "nulls", "m1", 0, []string{"null-share"}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		r := admSend[*kmsg.ShareGroupHeartbeatResponse](t, s, hb, 1)
		if r.ErrorCode == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("join: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}
	group, member := "nulls", "m1"
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID, req.MemberID, req.MaxRecords, req.MaxBytes = &group, &member, 10, 1<<20
	// Partition 0 has records; partition 7 does not exist.
	req.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 0}, {Partition: 7}}}}
	resp, err := req.RequestWith(context.Background(), admClient(t, s).Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	saw := false
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.Partition == 7 {
				saw = true
				admWantCode(t, "partition 7", rp.ErrorCode, nil, kerr.UnknownTopicOrPartition)
			}
			if rp.Records == nil {
				t.Errorf("ShareFetch v%d partition %d: records null (error %d)", req.GetVersion(), rp.Partition, rp.ErrorCode)
			}
		}
	}
	if !saw {
		t.Fatalf("no answer for partition 7: %+v", resp.Topics)
	}
}
