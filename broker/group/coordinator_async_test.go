package group

import (
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/config"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/replica"
)

// TestCommitWithoutISRTimesOutAndChangesNothing drives the coordinator over
// a real __consumer_offsets log led here whose two followers never fetch,
// so the high watermark never covers a commit: the commit is answered
// COORDINATOR_NOT_AVAILABLE after offsets.commit.timeout.ms (5 s, as Kafka
// answers a timed-out coordinator write), the group's offsets stay as they
// were, and meanwhile another group of the same partition is served at
// once: the wait holds no lock.
func TestCommitWithoutISRTimesOutAndChangesNothing(t *testing.T) {
	c := isrlessCoordinator(t, NewGroups(Config{Partitions: 1, MinSessionTimeout: time.Second, MaxSessionTimeout: time.Hour, MaxSize: 10, MaxMetadataBytes: 100}))

	commit := func(group string, offset int64) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.Generation = 8, group, -1
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset}}}}
		return c.CommitOffsets(req, func(string, int32) bool { return true }).Topics[0].Partitions[0].ErrorCode
	}
	start := time.Now()
	answered := make(chan int16, 1)
	go func() { answered <- commit("waits", 7) }()
	time.Sleep(200 * time.Millisecond)
	t0 := time.Now()
	if _, code := c.Committed("other"); code != nil {
		t.Fatalf("OffsetFetch of another group: %v", code)
	}
	if took := time.Since(t0); took > 100*time.Millisecond {
		t.Errorf("OffsetFetch of another group took %v while a commit waited for the ISR", took)
	}
	select {
	case code := <-answered:
		t.Fatalf("commit answered %v after %v without an ISR", kerr.ErrorForCode(code), time.Since(start))
	default:
	}
	code := <-answered
	if took := time.Since(start); code != kerr.CoordinatorNotAvailable.Code || took < offsetCommitTimeout {
		t.Fatalf("commit answered %v after %v, want COORDINATOR_NOT_AVAILABLE after %v", kerr.ErrorForCode(code), took, offsetCommitTimeout)
	}
	offsets, errc := c.Committed("waits")
	if errc != nil || len(offsets) != 0 {
		t.Fatalf("offsets after a timed-out commit: %v %v, want none", offsets, errc)
	}
}

// isrlessCoordinator is a coordinator of gs (one __consumer_offsets
// partition) over a real log led here whose two followers never fetch, so
// the high watermark never covers a write.
func isrlessCoordinator(t *testing.T, gs *Groups) *Coordinator {
	root := t.TempDir()
	bcfg, err := config.ParseBroker(map[string]string{"node.id": "1", "log.dirs": root, "process.roles": "broker,controller",
		"listeners": "PLAINTEXT://127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	dcfg := log.DefaultDirConfig(root)
	dcfg.CheckpointInterval, dcfg.RetentionCheckInterval, dcfg.FlushCheckInterval = 0, 0, 0
	dcfg.CleanerEnable = false
	dcfg.Logger = slog.New(slog.DiscardHandler)
	d, err := log.OpenDir(dcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	parts := replica.NewManager(bcfg, []*log.Dir{d}, slog.New(slog.DiscardHandler))
	t.Cleanup(parts.StopReplication)
	empty := cluster.EmptyImage("c")
	img := empty
	id := cluster.NewTopicID()
	for _, r := range []cluster.Record{{Topic: &cluster.TopicRecord{Name: OffsetsTopic, ID: id}},
		{Partition: &cluster.PartitionRecord{TopicID: id, Partition: cluster.Partition{Leader: 1, Replicas: []int32{1, 2, 3}, ISR: []int32{1, 2, 3}}}}} {
		if img, err = img.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := parts.Apply(empty, img); err != nil {
		t.Fatal(err)
	}
	c := &Coordinator{gs: gs, parts: parts, now: time.Now, logger: slog.New(slog.DiscardHandler),
		loaded: map[int32]bool{0: true}, loading: map[int32]bool{}, inflight: map[int32]*inflight{}, stop: make(chan struct{})}
	t.Cleanup(c.Stop)
	return c
}

// TestClassicLeaveWaitsForISR: a classic member's LeaveGroup to a consumer
// group is answered only once its removal is committed, as in Kafka: with
// followers that never fetch it is not answered, and when the write fails
// (here the coordinator stops) the answer is the write's error, not a
// success a failover would contradict (review 6).
func TestClassicLeaveWaitsForISR(t *testing.T) {
	h, a, _, _ := classicPair(t)
	h.gs.cfg.Partitions = 1
	h.hb("c", 0, nil, true) // upgraded: a and b are classic members of a consumer group
	c := isrlessCoordinator(t, h.gs)
	answered := make(chan *kerr.Error, 1)
	go func() {
		top, codes := c.Leave("g", []kmsg.LeaveGroupRequestMember{{MemberID: a}})
		if top == nil && codes[0] != nil {
			top = codes[0]
		}
		answered <- top
	}()
	select {
	case code := <-answered:
		t.Fatalf("LeaveGroup answered (%v) before its removal was committed", code)
	case <-time.After(300 * time.Millisecond):
	}
	c.Stop()
	select {
	case code := <-answered:
		if code == nil {
			t.Fatal("LeaveGroup answered success although its removal was never committed")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("LeaveGroup not answered after the coordinator stopped")
	}
}
