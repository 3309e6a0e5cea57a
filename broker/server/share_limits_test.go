package server

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareJoin makes member a member of group on topic, retrying while the
// coordinator loads.
func shareJoin(t *testing.T, s *Server, group, member, topic string) {
	t.Helper()
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{group}
	admSend[*kmsg.FindCoordinatorResponse](t, s, fc, 4)
	r := kmsg.NewPtrShareGroupHeartbeatRequest()
	r.GroupID, r.MemberID, r.MemberEpoch, r.SubscribedTopicNames = group, member, 0, []string{topic}
	deadline := time.Now().Add(time.Minute)
	for i := 0; ; i++ {
		resp := admSend[*kmsg.ShareGroupHeartbeatResponse](t, s, r, 1)
		if resp.ErrorCode == 0 && resp.Assignment != nil && len(resp.Assignment.TopicPartitions) > 0 {
			return
		}
		if resp.ErrorCode == 0 {
			// Joined; the partitions come once the coordinator
			// initialized their state, at a later heartbeat.
			r.MemberEpoch, r.SubscribedTopicNames = resp.MemberEpoch, nil
			if time.Now().After(deadline) {
				t.Fatalf("join %s: no partition of %s assigned in a minute", group, topic)
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if i > 200 || resp.ErrorCode != kerr.CoordinatorLoadInProgress.Code && resp.ErrorCode != kerr.NotCoordinator.Code {
			t.Fatalf("join %s: %v", group, kerr.ErrorForCode(resp.ErrorCode))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestShareFetchLimits: a ShareFetch asking for 2 GiB gets at most the
// broker's fetch.max.bytes (review H1), and acknowledgement batches that
// Kafka's validateAcknowledgementBatches refuses are INVALID_REQUEST with
// nothing applied (review H2, M1).
func TestShareFetchLimits(t *testing.T) {
	t.Parallel()
	props := map[string]string{"fetch.max.bytes": "1024"}
	for k, v := range shareProps {
		props[k] = v
	}
	props["group.share.record.lock.duration.ms"] = "30000"
	s := startAdminBroker(t, props)
	id := admCreateTopic(t, s, "limits", 1, nil)
	cl := admClient(t, s)
	// One batch per record, 400 bytes each.
	for i := 0; i < 20; i++ {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "limits", Value: bytes.Repeat([]byte{'x'}, 400)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	setShareEarliest(t, s, "lim")
	shareJoin(t, s, "lim", "m1", "limits")
	group, member := "lim", "m1"
	conn := admClient(t, s).Broker(1)
	fetch := func(epoch int32, renew bool, acks ...kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch) *kmsg.ShareFetchResponseTopicPartition {
		t.Helper()
		r := kmsg.NewPtrShareFetchRequest()
		r.GroupID, r.MemberID, r.ShareSessionEpoch = &group, &member, epoch
		if renew {
			r.IsRenewAck, r.MaxWaitMillis, r.MinBytes, r.MaxBytes, r.MaxRecords = true, 0, 0, 0, 0
		} else {
			r.MaxRecords, r.MaxBytes = 20, 1<<31-1
		}
		tp := kmsg.NewShareFetchRequestTopicPartition()
		tp.AcknowledgementBatches = acks
		r.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{tp}}}
		resp, err := r.RequestWith(context.Background(), conn)
		if err != nil {
			t.Fatal(err)
		}
		admWantCode(t, "share fetch", resp.ErrorCode, resp.ErrorMessage, nil)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			t.Fatalf("share fetch answered %+v", resp.Topics)
		}
		return &resp.Topics[0].Partitions[0]
	}
	p := fetch(0, false)
	if len(p.Records) > 1024 || len(p.Records) == 0 {
		t.Fatalf("ShareFetch with max_bytes 2 GiB returned %d record bytes, want at most fetch.max.bytes=1024", len(p.Records))
	}
	if a := p.AcquiredRecords; len(a) != 1 || a[0].FirstOffset != 0 || a[0].LastOffset >= 19 {
		t.Fatalf("acquired %+v, want a few records from 0", a)
	}
	held := p.AcquiredRecords[0].LastOffset
	batch := func(first, last int64, typ int8) kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch {
		return kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{FirstOffset: first, LastOffset: last, AcknowledgeTypes: []int8{typ}}
	}
	epoch := int32(1)
	bad := []struct {
		name  string
		renew bool
		acks  []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch
	}{
		{"overlapping renews", true, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{batch(0, held, 4), batch(0, held, 4)}},
		{"renew without is_renew_ack", false, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{batch(0, held, 4)}},
		{"accept, then an overlapping batch", false, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{batch(0, 0, 1), batch(0, held, 1)}},
		{"first > last", false, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{batch(held, 0, 1)}},
		{"unknown type", false, []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{batch(0, 0, 7)}},
	}
	for _, b := range bad {
		p := fetch(epoch, b.renew, b.acks...)
		epoch++
		admWantCode(t, b.name, p.AcknowledgeErrorCode, nil, kerr.InvalidRequest)
	}
	// Nothing of the refused requests was applied: every held record is
	// still the member's to accept.
	p = fetch(epoch, false, batch(0, held, 1))
	admWantCode(t, "accept after the refused requests", p.AcknowledgeErrorCode, nil, nil)
}

// TestShareSessionBounds (review M2): partitions of topics that do not
// exist are answered UNKNOWN_TOPIC_ID once and not kept in the share
// session, and one connection cannot hold more than a few sessions;
// closing one frees its place.
func TestShareSessionBounds(t *testing.T) {
	t.Parallel()
	s := startAdminBroker(t, shareProps)
	id := admCreateTopic(t, s, "bounds", 1, nil)
	for i := 0; i < maxConnShareSessions; i++ {
		shareJoin(t, s, "bnd", fmt.Sprint("m", i), "bounds")
	}
	shareJoin(t, s, "bnd", "extra", "bounds")
	group := "bnd"
	conn := admClient(t, s).Broker(1)
	fetch := func(member string, epoch int32, topics ...[16]byte) *kmsg.ShareFetchResponse {
		t.Helper()
		r := kmsg.NewPtrShareFetchRequest()
		r.GroupID, r.MemberID, r.ShareSessionEpoch, r.MaxWaitMillis = &group, &member, epoch, 0
		for _, tid := range topics {
			r.Topics = append(r.Topics, kmsg.ShareFetchRequestTopic{TopicID: tid, Partitions: []kmsg.ShareFetchRequestTopicPartition{kmsg.NewShareFetchRequestTopicPartition()}})
		}
		resp, err := r.RequestWith(context.Background(), conn)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	madeUp := make([][16]byte, 50)
	for i := range madeUp {
		madeUp[i] = [16]byte{0xee, byte(i), 1}
	}
	f := fetch("m0", 0, append([][16]byte{id}, madeUp...)...)
	admWantCode(t, "open with made-up topics", f.ErrorCode, f.ErrorMessage, nil)
	unknown := 0
	for _, tp := range f.Topics {
		if tp.TopicID != id && tp.Partitions[0].ErrorCode == kerr.UnknownTopicID.Code {
			unknown++
		}
	}
	if unknown != len(madeUp) {
		t.Fatalf("%d made-up topics answered UNKNOWN_TOPIC_ID, want %d", unknown, len(madeUp))
	}
	f = fetch("m0", 1)
	for _, tp := range f.Topics {
		if tp.TopicID != id {
			t.Fatalf("made-up topic %x is still in the share session", tp.TopicID)
		}
	}
	// m0 holds one session; 15 more fit, the 17th does not.
	for i := 1; i < maxConnShareSessions; i++ {
		admWantCode(t, "open a session", fetch(fmt.Sprint("m", i), 0, id).ErrorCode, nil, nil)
	}
	admWantCode(t, "one session too many", fetch("extra", 0, id).ErrorCode, nil, kerr.ShareSessionLimitReached)
	admWantCode(t, "close one", fetch("m1", -1).ErrorCode, nil, nil)
	admWantCode(t, "open after closing one", fetch("extra", 0, id).ErrorCode, nil, nil)
}

// TestShareGroupEdges: a deleted topic's share state goes with it
// (review M3), a share heartbeat without a group id is INVALID_REQUEST
// (L4), and AlterShareGroupOffsets does not create a share twin of a
// classic group (L1).
func TestShareGroupEdges(t *testing.T) {
	t.Parallel()
	s := startAdminBroker(t, shareProps)
	id := admCreateTopic(t, s, "doomed", 1, nil)
	admProduce(t, admClient(t, s), "doomed", 0, 3)
	setShareEarliest(t, s, "edges")
	shareJoin(t, s, "edges", "m", "doomed")
	group, member := "edges", "m"
	r := kmsg.NewPtrShareFetchRequest()
	r.GroupID, r.MemberID, r.MaxRecords = &group, &member, 3
	r.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{kmsg.NewShareFetchRequestTopicPartition()}}}
	if f, err := r.RequestWith(context.Background(), admClient(t, s).Broker(1)); err != nil || len(f.Topics) != 1 || len(f.Topics[0].Partitions[0].AcquiredRecords) == 0 {
		t.Fatalf("share fetch: %v %+v", err, f)
	}
	if n := s.shares.LoadedPartitions(); n != 1 {
		t.Fatalf("%d share partitions before the delete, want 1", n)
	}
	dt := kmsg.NewPtrDeleteTopicsRequest()
	dt.TopicNames, dt.TimeoutMillis = []string{"doomed"}, 10000
	if code := admSend[*kmsg.DeleteTopicsResponse](t, s, dt, 4).Topics[0].ErrorCode; code != 0 {
		t.Fatalf("delete topic: %v", kerr.ErrorForCode(code))
	}
	for i := 0; s.shares.LoadedPartitions() != 0; i++ {
		if i > 100 {
			t.Fatalf("the deleted topic's share partition is still held")
		}
		time.Sleep(50 * time.Millisecond)
	}

	hb := kmsg.NewPtrShareGroupHeartbeatRequest()
	hb.MemberID, hb.SubscribedTopicNames = "x", []string{"doomed"}
	admWantCode(t, "heartbeat without a group id", admSend[*kmsg.ShareGroupHeartbeatResponse](t, s, hb, 1).ErrorCode, nil, kerr.InvalidRequest)

	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = "classic-app", -1
	admCreateTopic(t, s, "plain", 1, nil)
	oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "plain", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 0}}}}
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKeys = []string{"classic-app"}
	admSend[*kmsg.FindCoordinatorResponse](t, s, fc, 4)
	if code := admSend[*kmsg.OffsetCommitResponse](t, s, oc, 8).Topics[0].Partitions[0].ErrorCode; code != 0 {
		t.Fatalf("offset commit: %v", kerr.ErrorForCode(code))
	}
	ao := kmsg.NewPtrAlterShareGroupOffsetsRequest()
	ao.GroupID = "classic-app"
	ao.Topics = []kmsg.AlterShareGroupOffsetsRequestTopic{{Topic: "plain", Partitions: []kmsg.AlterShareGroupOffsetsRequestTopicPartition{{Partition: 0, StartOffset: 0}}}}
	resp := admSend[*kmsg.AlterShareGroupOffsetsResponse](t, s, ao, 0)
	admWantCode(t, "AlterShareGroupOffsets on a classic group", resp.ErrorCode, resp.ErrorMessage, kerr.GroupIDNotFound)
	if s.shares.Has("classic-app") {
		t.Errorf("a share twin of the classic group was created")
	}
}
