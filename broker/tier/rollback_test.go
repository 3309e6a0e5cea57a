package tier_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tributary-io/tributary/broker/tier"
	"github.com/tributary-io/tributary/internal/remotelog"
)

// TestRolledBackManifestRefused: a manifest version of a lower leader
// epoch that lacks the newest segment (a commit never writes one since
// the compare-and-swap; an operator's restore, or an older build, could).
// A broker that saw the newer one must not load it (gc would remove the
// newest segment's files, which no replica may hold any more), nor trim
// by it as a follower; and a remote read in the hole it would leave is an
// error, not the next segment.
func TestRolledBackManifestRefused(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	l := smallTieredLog(t)
	tp := l.TopicPartition()
	cfg := tier.Config{URI: "file://" + root, ChunkBytes: 1000, CacheBytes: 8000}
	m := tier.New(cfg)
	defer m.Close()
	m.Pass([]tier.Target{{TP: tp, TopicID: "id", Log: l, LeaderEpoch: 5, Bound: l.LogEndOffset()}}, nil)

	dir := filepath.Join(root, tier.RemoteDir("t", "id", 0))
	data, err := os.ReadFile(newestVersion(t, root))
	if err != nil {
		t.Fatal(err)
	}
	newer, err := remotelog.ParseManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	// put writes man as the next version, by hand.
	put := func(man *tier.Manifest) {
		t.Helper()
		data, _ := os.ReadFile(newestVersion(t, root))
		cur, _ := remotelog.ParseManifest(data)
		man.Sequence = cur.Sequence + 1
		if err := os.WriteFile(filepath.Join(dir, remotelog.ManifestName(man.Sequence)), man.Encode(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if len(newer.Segments) < 3 || newer.LeaderEpoch != 5 {
		t.Fatalf("manifest: %d segments, leader epoch %d", len(newer.Segments), newer.LeaderEpoch)
	}
	last := newer.Segments[len(newer.Segments)-1]
	older := newer.Clone()
	older.LeaderEpoch = 4
	older.Segments = older.Segments[:len(older.Segments)-1]
	put(older)

	// Restarted (the local copy of epoch 5 is what it knows) and
	// re-elected.
	m2 := tier.New(cfg)
	defer m2.Close()
	m2.Pass([]tier.Target{{TP: tp, TopicID: "id", Log: l, LeaderEpoch: 6, Bound: l.LogEndOffset()}}, nil)
	if _, err := os.Stat(filepath.Join(dir, last.FileName(".log"))); err != nil {
		t.Errorf("the newest segment's files were swept by loading a rolled-back manifest: %v", err)
	}
	if data, err := os.ReadFile(newestVersion(t, root)); err != nil {
		t.Fatal(err)
	} else if now, err := remotelog.ParseManifest(data); err != nil || now.LeaderEpoch != 4 {
		t.Errorf("the broker loaded the rolled-back manifest and wrote over it (leader epoch now %d, %v)", now.LeaderEpoch, err)
	}
	if start, ok := m2.LogStart(tp); !ok || start != 0 {
		t.Errorf("LogStart = %d %v, want 0 from the manifest known", start, ok)
	}

	// A hole in a manifest: the offset is in no segment, and a read there
	// is an error rather than the next segment's batches.
	hole := newer.Clone()
	hole.Segments = append(hole.Segments[:1:1], hole.Segments[2:]...)
	if _, ok := hole.Find(newer.Segments[1].BaseOffset); ok || !hole.Hole(newer.Segments[1].BaseOffset) {
		t.Errorf("Find in a hole: found, or not reported as a hole")
	}
	put(hole)
	m3 := tier.New(cfg)
	defer m3.Close()
	m3.Pass([]tier.Target{{TP: tp, TopicID: "id", Log: l, LeaderEpoch: 7, Bound: l.LogEndOffset()}}, nil)
	data2, _, err := m3.Read(tp, newer.Segments[1].BaseOffset, 1000, true)
	if !errors.Is(err, tier.ErrUnavailable) {
		t.Errorf("a read in a hole of the remote segments = %d bytes, %v; want ErrUnavailable", len(data2), err)
	}
}
