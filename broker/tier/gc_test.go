package tier_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/broker/tier"
)

// TestGCAgesByRemoteClock: a broker whose clock is an hour ahead of the
// remote store's (here the file times) removes an orphan older than the
// grace period, and keeps a file no version names that was just written:
// for all it knows a new leader's upload in progress. Measured on the
// broker's clock it looked an hour old, and was removed.
func TestGCAgesByRemoteClock(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	cfg := log.DefaultConfig()
	cfg.SegmentBytes = 2048
	cfg.RemoteStorage = true
	l, err := log.Open(filepath.Join(t.TempDir(), "t-0"), cfg, log.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	opts := record.DefaultBuildOptions()
	opts.BaseTimestamp = time.Now().UnixMilli()
	for range 30 {
		b, _ := record.Build(opts, record.NewRecords(record.KV{Value: bytes.Repeat([]byte{1}, 200)}))
		if _, err := l.AppendAsLeader(b, 0); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().Add(time.Hour)
	m := tier.New(tier.Config{URI: "file://" + root, Grace: time.Minute, Now: func() time.Time { return now }})
	defer m.Close()
	target := tier.Target{TP: l.TopicPartition(), TopicID: "id", Log: l, Bound: l.LogEndOffset(), LeaderEpoch: 0}
	m.Pass([]tier.Target{target}, nil)
	if end, err := m.UploadedEnd(l.TopicPartition()); err != nil || end <= 0 {
		t.Fatalf("uploaded end %d (%v): nothing uploaded", end, err)
	}
	dir := filepath.Join(root, tier.RemoteDir("t", "id", 0))
	fresh := filepath.Join(dir, "00000000000000009999-0123456789abcdef0123456789abcdef.log")
	orphan := filepath.Join(dir, "00000000000000009998-0123456789abcdef0123456789abcdef.log")
	for _, f := range []string{fresh, orphan} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(orphan, old, old); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute) // past the next gc
	m.Pass([]tier.Target{target}, nil)
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a file written just now was removed as an orphan (%v): the broker's clock, an hour ahead, aged it", err)
	}
	if _, err := os.Stat(orphan); !os.IsNotExist(err) {
		t.Errorf("an orphan two hours old is still there (%v)", err)
	}
}
