package conformance

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// TestShareGroupIDsKeepTheirType: a group id belongs to one kind of group.
// With a share group live, the classic protocol's JoinGroup is
// INCONSISTENT_GROUP_PROTOCOL, its SyncGroup, Heartbeat and LeaveGroup's
// member UNKNOWN_MEMBER_ID, an OffsetCommit, a TxnOffsetCommit (in a
// transaction) and a ConsumerGroupHeartbeat GROUP_ID_NOT_FOUND; and a ShareGroupHeartbeat naming a live classic or
// consumer (KIP-848) group is GROUP_ID_NOT_FOUND. Kafka 4.4's answers
// (GroupMetadataManager, ShareGroup.validateOffsetCommit): the test passes
// against Apache Kafka 4.4 too (TRIBUTARY_GROUPS_AGAINST_KAFKA=1). A
// Java 4.4 KafkaConsumer with the share group's id fails to join with
// InconsistentGroupProtocolException (Kafka's console consumer).
func TestShareGroupIDsKeepTheirType(t *testing.T) {
	b := groupsStart(t)
	bs := b.Addr()
	const topic = "typed-q"
	groupsCreateTopic(t, bs, topic, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	// A live share group: one franz-go share consumer.
	sc, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.ShareGroup("typed-share"), kgo.ConsumeTopics(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	for {
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		sc.PollRecords(pctx, 1)
		pcancel()
		d := kmsg.NewPtrShareGroupDescribeRequest()
		d.GroupIDs = []string{"typed-share"}
		if r, err := d.RequestWith(ctx, cl); err == nil && len(r.Groups) == 1 && r.Groups[0].ErrorCode == 0 && len(r.Groups[0].Members) == 1 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the share consumer never joined")
		}
	}

	noError := &kerr.Error{Message: "no error"}
	want := func(what string, got int16, want *kerr.Error) {
		t.Helper()
		if got != want.Code {
			t.Errorf("%s: %v, want %v", what, kerr.ErrorForCode(got), want)
		}
	}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "typed-share", "consumer", 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: (&kmsg.ConsumerMemberMetadata{Topics: []string{topic}}).AppendTo(nil)}}
	if r, err := join.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	} else {
		want("JoinGroup naming a share group", r.ErrorCode, kerr.InconsistentGroupProtocol)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.Generation, sync.MemberID = "typed-share", 1, "someone"
	sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	if r, err := sync.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	} else {
		want("SyncGroup naming a share group", r.ErrorCode, kerr.UnknownMemberID)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.Generation, hb.MemberID = "typed-share", 1, "someone"
	if r, err := hb.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	} else {
		want("Heartbeat naming a share group", r.ErrorCode, kerr.UnknownMemberID)
	}
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Group = "typed-share"
	leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "someone"}}
	if r, err := leave.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	} else {
		want("LeaveGroup naming a share group", r.ErrorCode, noError)
		if len(r.Members) != 1 {
			t.Fatalf("LeaveGroup answer %+v", r)
		}
		want("LeaveGroup's member in a share group", r.Members[0].ErrorCode, kerr.UnknownMemberID)
	}
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}
	mr, err := md.RequestWith(ctx, cl)
	if err != nil || len(mr.Topics) != 1 {
		t.Fatalf("metadata: %v", err)
	}
	topicID := mr.Topics[0].TopicID
	for _, gen := range []int32{-1, 1} {
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group, oc.Generation, oc.MemberID = "typed-share", gen, ""
		if gen > 0 {
			oc.MemberID = "someone"
		}
		oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: topic, TopicID: topicID, Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 0}}}}
		r, err := oc.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			t.Fatalf("OffsetCommit answer %+v", r)
		}
		want("OffsetCommit naming a share group (generation "+strconv.Itoa(int(gen))+")", r.Topics[0].Partitions[0].ErrorCode, kerr.GroupIDNotFound)
	}
	of := kmsg.NewPtrOffsetFetchRequest()
	of.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "typed-share", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic, TopicID: topicID, Partitions: []int32{0}}}}}
	if r, err := of.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	} else if len(r.Groups) != 1 {
		t.Fatalf("OffsetFetch answer %+v", r)
	} else {
		// Kafka 4.4 answers an administrator's fetch (no member) as for
		// a group without commits.
		g := r.Groups[0]
		want("OffsetFetch naming a share group", g.ErrorCode, noError)
		if len(g.Topics) != 1 || len(g.Topics[0].Partitions) != 1 || g.Topics[0].Partitions[0].Offset != -1 || g.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Errorf("OffsetFetch naming a share group: %+v, want offset -1 without an error", g.Topics)
		}
	}
	// A transactional producer committing offsets under the share
	// group's id: every partition GROUP_ID_NOT_FOUND (Kafka 4.4's
	// OffsetMetadataManager.validateTransactionalOffsetCommit, once the
	// transaction checks pass). Pre-4.0 versions, so that AddOffsetsToTxn
	// is part of the flow on both brokers.
	txc, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.MaxVersions(kversion.V3_9_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer txc.Close()
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr("typed-txn"), 60000
	ipr, err := ip.RequestWith(ctx, txc)
	if err != nil || ipr.ErrorCode != 0 {
		t.Fatalf("InitProducerID: %v %v", err, kerr.ErrorForCode(ipr.ErrorCode))
	}
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = "typed-txn", ipr.ProducerID, ipr.ProducerEpoch, "typed-share"
	if r, err := ao.RequestWith(ctx, txc); err != nil || r.ErrorCode != 0 {
		t.Fatalf("AddOffsetsToTxn: %v %v", err, kerr.ErrorForCode(r.ErrorCode))
	}
	toc := kmsg.NewPtrTxnOffsetCommitRequest()
	toc.TransactionalID, toc.Group, toc.ProducerID, toc.ProducerEpoch, toc.Generation = "typed-txn", "typed-share", ipr.ProducerID, ipr.ProducerEpoch, -1
	toc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: topic, Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0, Offset: 0, LeaderEpoch: -1}}}}
	if r, err := toc.RequestWith(ctx, txc); err != nil {
		t.Fatal(err)
	} else if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		t.Fatalf("TxnOffsetCommit answer %+v", r)
	} else {
		want("TxnOffsetCommit naming a share group", r.Topics[0].Partitions[0].ErrorCode, kerr.GroupIDNotFound)
	}
	et := kmsg.NewPtrEndTxnRequest()
	et.TransactionalID, et.ProducerID, et.ProducerEpoch, et.Commit = "typed-txn", ipr.ProducerID, ipr.ProducerEpoch, false
	if r, err := et.RequestWith(ctx, txc); err != nil || r.ErrorCode != 0 {
		t.Errorf("EndTxn (abort): %v %v", err, kerr.ErrorForCode(r.ErrorCode))
	}

	chb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	chb.Group, chb.MemberID, chb.MemberEpoch, chb.RebalanceTimeoutMillis = "typed-share", "c-member-0000000001", 0, 10000
	chb.Topics, chb.SubscribedTopicNames = []kmsg.ConsumerGroupHeartbeatRequestTopic{}, []string{topic}
	if r, err := chb.RequestWith(ctx, cl); err != nil {
		t.Fatal(err)
	} else {
		want("ConsumerGroupHeartbeat naming a share group", r.ErrorCode, kerr.GroupIDNotFound)
	}

	// A real client: Kafka 4.4's console consumer (a classic KafkaConsumer)
	// given the share group's id stops with the join's error.
	jvm := startToolJVM(t, javaSetup(t))
	// (It prints the exception and exits 0.)
	stdout, stderr, err := jvm.runTool(toolTimeout, "", consoleConsumerClass, "--bootstrap-server", bs, "--topic", topic, "--group", "typed-share", "--timeout-ms", "20000")
	if !strings.Contains(stdout+stderr, "InconsistentGroupProtocolException") {
		t.Errorf("kafka-console-consumer.sh --group typed-share: %v, want InconsistentGroupProtocolException\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}

	// A live classic group (a franz-go consumer) and a live consumer
	// group (a KIP-848 member joined by ConsumerGroupHeartbeat).
	cc, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.ConsumerGroup("typed-classic"), kgo.ConsumeTopics(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	for {
		pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		cc.PollFetches(pctx)
		pcancel()
		d := kmsg.NewPtrDescribeGroupsRequest()
		d.Groups = []string{"typed-classic"}
		if r, err := d.RequestWith(ctx, cl); err == nil && len(r.Groups) == 1 && r.Groups[0].State == "Stable" {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the classic consumer never joined")
		}
	}
	chb.Group = "typed-consumer"
	if r, err := chb.RequestWith(ctx, cl); err != nil || r.ErrorCode != 0 {
		t.Fatalf("ConsumerGroupHeartbeat joining typed-consumer: %v %v", err, kerr.ErrorForCode(r.ErrorCode))
	}
	for _, g := range []string{"typed-classic", "typed-consumer"} {
		shb := kmsg.NewPtrShareGroupHeartbeatRequest()
		shb.GroupID, shb.MemberID, shb.MemberEpoch, shb.SubscribedTopicNames = g, "s-member-0000000001", 0, []string{topic}
		if r, err := shb.RequestWith(ctx, cl); err != nil {
			t.Fatal(err)
		} else {
			want("ShareGroupHeartbeat naming "+g, r.ErrorCode, kerr.GroupIDNotFound)
		}
	}
}
