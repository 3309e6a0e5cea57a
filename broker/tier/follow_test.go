package tier_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tributary-io/tributary/broker/tier"
)

// TestPromotedFollowerKeepsRemoteRange: a follower trims its local log by
// the leader's manifest, then is elected while the manifest cannot be read
// (HDFS down), in the same process and after a restart. The remote range
// must still be the partition's: LogStart (ListOffsets EARLIEST) is the
// remote start and a read of offset 0 is data or a retriable error, never
// ErrNotRemote (OFFSET_OUT_OF_RANGE, which resets consumers past it).
func TestPromotedFollowerKeepsRemoteRange(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	lead, fol := smallTieredLog(t), smallTieredLog(t)
	tp := fol.TopicPartition()
	cfg := tier.Config{URI: "file://" + root, ChunkBytes: 1000, CacheBytes: 8000}
	m1 := tier.New(cfg)
	defer m1.Close()
	m1.Pass([]tier.Target{{TP: tp, TopicID: "id", Log: lead, LeaderEpoch: 0, Bound: lead.LogEndOffset()}}, nil)
	m2 := tier.New(cfg)
	defer m2.Close()
	m2.Pass([]tier.Target{{TP: tp, TopicID: "id", Log: fol, LeaderEpoch: 0, Follower: true}}, nil)
	if fol.LogStartOffset() == 0 {
		t.Fatal("the follower did not trim by the manifest")
	}
	if _, err := os.Stat(filepath.Join(fol.Dir(), tier.LocalManifestFile)); err != nil {
		t.Errorf("the follower keeps no local copy of the manifest: %v", err)
	}

	breakManifest(t, root)
	check := func(what string, m *tier.Manager) {
		t.Helper()
		if start, ok := m.LogStart(tp); !ok || start != 0 {
			t.Errorf("%s: LogStart = %d %v, want the remote start 0 (local start %d)", what, start, ok, fol.LogStartOffset())
		}
		data, wait, err := m.Read(tp, 0, 1000, true)
		if wait != nil {
			<-wait
			data, _, err = m.Read(tp, 0, 1000, true)
		}
		if errors.Is(err, tier.ErrNotRemote) || (err == nil && len(data) == 0) {
			t.Errorf("%s: Read(0) = %d bytes, %v: offset 0 is held remotely", what, len(data), err)
		}
	}
	// Elected in the same process.
	m2.Pass([]tier.Target{{TP: tp, TopicID: "id", Log: fol, LeaderEpoch: 1, Bound: fol.LogEndOffset()}}, nil)
	check("elected", m2)
	// Restarted, then elected.
	m3 := tier.New(cfg)
	defer m3.Close()
	m3.Pass([]tier.Target{{TP: tp, TopicID: "id", Log: fol, LeaderEpoch: 2, Bound: fol.LogEndOffset()}}, nil)
	check("restarted and elected", m3)
}
