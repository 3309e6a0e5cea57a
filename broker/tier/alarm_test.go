package tier_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/broker/tier"
)

// TestFencedPassIsNoOutage: a deposed leader's pass fails, fenced by the
// manifest its successor wrote. That is a leader change, not remote
// storage failing: the outage alarm (the "remote storage is failing" log
// line and FailingPartitions, which docs/operations.md has operators
// alert on and look at HDFS for) stays quiet, and the pass only says it
// will retry. Before, every failed pass raised it.
func TestFencedPassIsNoOutage(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	old, cur := smallTieredLog(t), smallTieredLog(t)
	var logs syncBuffer
	m1 := tier.New(tier.Config{URI: "file://" + root, ChunkBytes: 1000, CacheBytes: 8000, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	defer m1.Close()
	m1.Pass([]tier.Target{{TP: old.TopicPartition(), TopicID: "id", Log: old, Bound: 30}}, nil)
	if segs, _ := m1.Uploaded(); segs == 0 {
		t.Fatalf("the first leader uploaded nothing; its log:\n%s", logs.String())
	}
	m2 := tier.New(tier.Config{URI: "file://" + root, ChunkBytes: 1000, CacheBytes: 8000})
	defer m2.Close()
	m2.Pass([]tier.Target{{TP: cur.TopicPartition(), TopicID: "id", Log: cur, LeaderEpoch: 1, Bound: cur.LogEndOffset()}}, nil)
	before := len(logs.String())
	m1.Pass([]tier.Target{{TP: old.TopicPartition(), TopicID: "id", Log: old, Bound: old.LogEndOffset()}}, nil)
	later := logs.String()[before:]
	if !strings.Contains(later, "newer leader") || !strings.Contains(later, "will retry") {
		t.Fatalf("the deposed leader's pass was not fenced; its log:\n%s", later)
	}
	if m1.PassErrors() == 0 {
		t.Error("the fenced pass is not counted among the failed passes")
	}
	if strings.Contains(later, "remote storage is failing") {
		t.Errorf("a leader change raised the remote storage alarm; the log:\n%s", later)
	}
	if n := m1.FailingPartitions(); n != 0 {
		t.Errorf("FailingPartitions = %d after a fenced pass, want 0", n)
	}
}
