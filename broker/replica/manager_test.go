package replica

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/config"
	"github.com/tributary-io/tributary/broker/log"
)

// imageWith is img with a topic of n partitions, each led by node 1 alone.
func imageWith(t *testing.T, img *cluster.Image, name string, n int) *cluster.Image {
	t.Helper()
	id := cluster.NewTopicID()
	rs := []cluster.Record{{Topic: &cluster.TopicRecord{Name: name, ID: id}}}
	for i := range n {
		rs = append(rs, cluster.Record{Partition: &cluster.PartitionRecord{TopicID: id,
			Partition: cluster.Partition{Index: int32(i), Leader: 1, LeaderEpoch: 0, Replicas: []int32{1}, ISR: []int32{1}}}})
	}
	for _, r := range rs {
		var err error
		if img, err = img.Apply(r); err != nil {
			t.Fatal(err)
		}
	}
	return img
}

// TestApplyFailureIsRetriedAndShown: a partition whose log cannot be
// created (here a file stands where its directory goes, as a failing disk
// would refuse the mkdir) is not dropped with a log line: it is listed by
// Failures with its log dir until a retry succeeds, and the other
// partitions of the change are created meanwhile.
func TestApplyFailureIsRetriedAndShown(t *testing.T) {
	root := t.TempDir()
	cfg, err := config.ParseBroker(map[string]string{"node.id": "1", "log.dirs": root, "process.roles": "broker,controller",
		"listeners": "PLAINTEXT://127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	d := testDir(t, root)
	defer d.Close()
	m := NewManager(cfg, []*log.Dir{d}, slog.New(slog.DiscardHandler))
	defer m.StopReplication()
	blocker := filepath.Join(root, "t-1")
	if err := os.WriteFile(blocker, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := cluster.EmptyImage("c")
	img := imageWith(t, empty, "t", 3)
	if err := m.Apply(empty, img); err == nil {
		t.Fatal("Apply reported no error with t-1's directory blocked")
	}
	fs := m.Failures()
	if len(fs) != 1 || fs[0].TP != (log.TopicPartition{Topic: "t", Partition: 1}) || fs[0].Dir != 0 {
		t.Fatalf("failures = %+v, want t-1 in dir 0", fs)
	}
	for _, p := range []int32{0, 2} {
		if _, ok := m.Get("t", p); !ok {
			t.Errorf("t-%d not created beside the failing t-1", p)
		}
	}
	// An unrelated change does not touch t: t-1 stays failed until its
	// retry, which succeeds once the disk lets it.
	img2 := imageWith(t, img, "u", 1)
	if err := m.Apply(img, img2); err != nil {
		t.Fatalf("applying an unrelated topic: %v", err)
	}
	if len(m.Failures()) != 1 {
		t.Fatalf("failures after an unrelated change: %+v", m.Failures())
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); len(m.Failures()) > 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("t-1 still failing after 10 s: %+v", m.Failures())
		}
	}
	if _, ok := m.Get("t", 1); !ok {
		t.Fatal("t-1 not hosted after its retry succeeded")
	}
}
