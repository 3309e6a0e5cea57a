package cluster_test

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/share"
	"github.com/tributary-io/tributary/internal/testcluster"
)

// TestShareFetchStrangerAtLeader: a client that never joined any group
// sends ShareFetch and ShareAcknowledge under 300 made-up group ids to the
// leader of a partition, a broker that is not those groups' coordinator
// and so cannot know their members. As in Kafka 4.4, the leader serves
// only share partitions their group's coordinator initialized: each fetch
// is answered UNKNOWN_SERVER_ERROR without a message and acquires
// nothing, each acknowledgement UNKNOWN_TOPIC_OR_PARTITION, and nothing is
// left behind: no share partition in any broker's memory, no record in
// __share_group_state. A real group whose coordinator is another broker
// then reads the partition from the same leader.
func TestShareFetchStrangerAtLeader(t *testing.T) {
	c, _ := startQueue(t, 1)
	leader := leaderOf(t, c, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...), kgo.DefaultProduceTopic("q"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(n int) {
		for i := 0; i < n; i++ {
			if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(5)
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	var id [16]byte
	for _, tm := range md.Topics {
		if tm.Topic != nil && *tm.Topic == "q" {
			id = tm.TopicID
		}
	}

	// Group ids whose coordinator is not the leader.
	coordinator := func(groups []string) map[string]int32 {
		out := map[string]int32{}
		for deadline := time.Now().Add(testcluster.HangBound); len(out) < len(groups); time.Sleep(100 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("coordinators of %d groups not found", len(groups)-len(out))
			}
			fc := kmsg.NewPtrFindCoordinatorRequest()
			fc.CoordinatorKeys = groups
			r, err := fc.RequestWith(ctx, cl)
			if err != nil {
				continue
			}
			for _, k := range r.Coordinators {
				if k.ErrorCode == 0 {
					out[k.Key] = k.NodeID
				}
			}
		}
		return out
	}
	var strangers []string
	for batch := 0; len(strangers) < 300; batch++ {
		var cand []string
		for i := 0; i < 100; i++ {
			cand = append(cand, fmt.Sprintf("made-up-%d-%d", batch, i))
		}
		for g, n := range coordinator(cand) {
			if n != leader && len(strangers) < 300 {
				strangers = append(strangers, g)
			}
		}
	}

	at := cl.Broker(int(leader))
	const member = "ZHmXq4TyRkWZ1HnqCcRT0w"
	for i, g := range strangers {
		f := kmsg.NewPtrShareFetchRequest()
		f.GroupID, f.MemberID, f.MaxWaitMillis, f.MaxBytes, f.MaxRecords, f.BatchSize = kmsg.StringPtr(g), kmsg.StringPtr(member), 0, 1<<20, 100, 100
		f.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{kmsg.NewShareFetchRequestTopicPartition()}}}
		var p kmsg.ShareFetchResponseTopicPartition
		for deadline := time.Now().Add(testcluster.HangBound); ; time.Sleep(50 * time.Millisecond) {
			r, err := f.RequestWith(ctx, at)
			if err != nil {
				t.Fatal(err)
			}
			if r.ErrorCode != 0 || len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
				t.Fatalf("stranger %s: %v, %+v", g, kerr.ErrorForCode(r.ErrorCode), r.Topics)
			}
			p = r.Topics[0].Partitions[0]
			// While __share_group_state is created and its partitions
			// elected (the first strangers create it), the state cannot
			// be read: nothing is handed out, as Kafka answers while a
			// share partition initializes, and the fetch is asked again.
			if p.ErrorCode != 0 || len(p.AcquiredRecords) != 0 || time.Now().After(deadline) {
				break
			}
		}
		if p.ErrorCode != kerr.UnknownServerError.Code || p.ErrorMessage != nil || len(p.AcquiredRecords) != 0 {
			t.Fatalf("stranger %s's fetch: %v (message %v), %d records acquired; want UNKNOWN_SERVER_ERROR without a message and nothing acquired",
				g, kerr.ErrorForCode(p.ErrorCode), p.ErrorMessage, len(p.AcquiredRecords))
		}
		// Acknowledge what it might have got, closing the session (a
		// connection holds few).
		a := kmsg.NewPtrShareAcknowledgeRequest()
		a.GroupID, a.MemberID, a.ShareSessionEpoch = kmsg.StringPtr(g), kmsg.StringPtr(member), -1
		ap := kmsg.NewShareAcknowledgeRequestTopicPartition()
		ap.AcknowledgementBatches = []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{{FirstOffset: 0, LastOffset: 4, AcknowledgeTypes: []int8{1}}}
		a.Topics = []kmsg.ShareAcknowledgeRequestTopic{{TopicID: id, Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{ap}}}
		ar, err := a.RequestWith(ctx, at)
		if err != nil {
			t.Fatal(err)
		}
		if ar.ErrorCode != 0 || len(ar.Topics) != 1 || ar.Topics[0].Partitions[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("stranger %s's acknowledgement: %v / %+v, want UNKNOWN_TOPIC_OR_PARTITION", g, kerr.ErrorForCode(ar.ErrorCode), ar.Topics)
		}
		if i == 0 {
			produce(5) // records to take, for all but the first
		}
	}
	for _, n := range c.Brokers() {
		if got := sharePartitionsHeld(t, n); got != 0 {
			t.Errorf("node %d holds %d share partitions after the strangers, want 0", n.ID, got)
		}
	}
	if left := shareStateGroups(t, ctx, cl, c.Bootstrap(), func(g string) bool { return strings.HasPrefix(g, "made-up-") }); len(left) > 0 {
		t.Errorf("__share_group_state has records of %d made-up groups, e.g. %v", len(left), left[:min(3, len(left))])
	}

	// A real group, coordinated elsewhere, reads from the same leader.
	var real string
	for g, n := range coordinator([]string{"real-0", "real-1", "real-2", "real-3", "real-4", "real-5", "real-6", "real-7"}) {
		if n != leader {
			real = g
			break
		}
	}
	if real == "" {
		t.Fatal("no real group id coordinated away from the leader")
	}
	sc, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...), kgo.ShareGroup(real), kgo.ConsumeTopics("q"))
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	got := 0
	for i := 0; got == 0; i++ {
		if ctx.Err() != nil {
			t.Fatal("the real group never got a record")
		}
		produce(1) // share.auto.offset.reset is latest: records after the join
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		fs := sc.PollRecords(pctx, 10)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) { got++; sc.MarkAcks(kgo.AckAccept, r) })
	}
	if held := sharePartitionsHeld(t, c.Node(leader)); held != 1 {
		t.Errorf("the leader holds %d share partitions with the real group reading, want 1", held)
	}
	if left := shareStateGroups(t, ctx, cl, c.Bootstrap(), func(g string) bool { return g == real }); len(left) != 1 {
		t.Errorf("__share_group_state has no state of the real group %s", real)
	}
}

var sharePartitionsGauge = regexp.MustCompile(`(?m)^tributary_broker_share_partitions (\d+)`)

// sharePartitionsHeld is a node's tributary_broker_share_partitions.
func sharePartitionsHeld(t *testing.T, n *testcluster.Node) int {
	t.Helper()
	m := sharePartitionsGauge.FindStringSubmatch(ldScrape(t, n.AdminAddr()))
	if m == nil {
		t.Fatalf("node %d's /metrics has no tributary_broker_share_partitions", n.ID)
	}
	v, _ := strconv.Atoi(m[1])
	return v
}

// shareStateGroups reads __share_group_state whole and returns the groups
// keep selects that have a record there.
func shareStateGroups(t *testing.T, ctx context.Context, cl *kgo.Client, bootstrap string, keep func(string) bool) []string {
	t.Helper()
	ends := map[int32]int64{}
	lo := kmsg.NewPtrListOffsetsRequest()
	md := kmsg.NewPtrMetadataRequest()
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("__share_group_state")}}
	mr, err := md.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(mr.Topics) != 1 || mr.Topics[0].ErrorCode != 0 {
		return nil // no state topic: no state
	}
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "__share_group_state"
	for _, p := range mr.Topics[0].Partitions {
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Partition, lp.Timestamp = p.Partition, -1
		lt.Partitions = append(lt.Partitions, lp)
	}
	lo.Topics = []kmsg.ListOffsetsRequestTopic{lt}
	shards := cl.RequestSharded(ctx, lo)
	for _, sh := range shards {
		if sh.Err != nil {
			t.Fatal(sh.Err)
		}
		for _, rt := range sh.Resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, rp := range rt.Partitions {
				if rp.Offset > 0 {
					ends[rp.Partition] = rp.Offset
				}
			}
		}
	}
	if len(ends) == 0 {
		return nil
	}
	offs := map[int32]kgo.Offset{}
	for p := range ends {
		offs[p] = kgo.NewOffset().AtStart()
	}
	rc, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"__share_group_state": offs}))
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	seen := map[string]bool{}
	read := map[int32]int64{}
	done := func() bool {
		for p, end := range ends {
			if read[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		if ctx.Err() != nil {
			t.Fatalf("__share_group_state not read to its end: %v of %v", read, ends)
		}
		fs := rc.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			read[r.Partition] = r.Offset + 1
			if k, _, err := share.ParseStateKey(r.Key); err == nil && keep(k.Group) {
				seen[k.Group] = true
			}
		})
	}
	var out []string
	for g := range seen {
		out = append(out, g)
	}
	return out
}
