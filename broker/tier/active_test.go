package tier_test

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/broker/tier"
)

// TestOversizedActiveSegmentStaysLocal is what TestTieredClusterLeaderKills
// met when it failed 2 of 19 runs ("uploads to catch up", the remote end
// still at 2,400 of 3,000 minutes later): after a leader change the records
// a producer held back during the election reach the new leader as one
// batch, many times segment.bytes, which makes a segment of its own. While
// it is the active segment it is not uploaded, however far it is below the
// bound (Kafka's copy task stops at the active segment too); once it rolls
// it goes up whole, and remote reads serve it.
func TestOversizedActiveSegmentStaysLocal(t *testing.T) {
	t.Parallel()
	cfg := log.DefaultConfig()
	cfg.SegmentBytes = 4096
	cfg.RemoteStorage = true
	cfg.LocalRetentionBytes = 1
	cfg.FileDeleteDelayMs = 0
	l, err := log.Open(filepath.Join(t.TempDir(), "t-0"), cfg, log.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	opts := record.DefaultBuildOptions()
	opts.BaseTimestamp = time.Now().UnixMilli()
	for i := range 40 { // some 3 segments at the old leader's epoch
		b, err := record.Build(opts, record.NewRecords(record.KV{Value: bytes.Repeat([]byte{1}, 200)}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendAsLeader(b, 0); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	held := l.LogEndOffset()
	kvs := make([]record.KV, 100) // 20 KB in one batch, 5 times segment.bytes
	for i := range kvs {
		kvs[i] = record.KV{Value: bytes.Repeat([]byte{2}, 200)}
	}
	big, err := record.Build(opts, record.NewRecords(kvs...))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AppendAsLeader(big, 1); err != nil {
		t.Fatal(err)
	}
	m := tier.New(tier.Config{URI: "file://" + t.TempDir()})
	defer m.Close()
	target := tier.Target{TP: l.TopicPartition(), TopicID: "id", Log: l, Bound: l.LogEndOffset(), LeaderEpoch: 1}
	m.Pass([]tier.Target{target}, nil)
	if end, err := m.UploadedEnd(l.TopicPartition()); err != nil || end != held {
		t.Fatalf("uploaded end %d (%v), want %d: everything below the active segment, and not it", end, err, held)
	}
	if l.LogStartOffset() != held {
		t.Fatalf("local log start %d, want %d: the uploaded segments leave the disk", l.LogStartOffset(), held)
	}
	// Nothing changes pass after pass (the silence the cluster test saw).
	m.Pass([]tier.Target{target}, nil)
	if end, _ := m.UploadedEnd(l.TopicPartition()); end != held {
		t.Fatalf("uploaded end %d after a second pass, want %d", end, held)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	m.Pass([]tier.Target{target}, nil)
	if end, _ := m.UploadedEnd(l.TopicPartition()); end != l.LogEndOffset() {
		t.Fatalf("uploaded end %d once the segment rolled, want the log end %d", end, l.LogEndOffset())
	}
	data := readOnce(t, m, l.TopicPartition(), held+50, 1<<20)
	b, _, ok := record.Split(data)
	if !ok || b.BaseOffset() != held || int(b.RecordCount()) != len(kvs) {
		t.Fatalf("remote read at %d: a batch at %d of %d records (%v), want the one at %d of %d",
			held+50, b.BaseOffset(), b.RecordCount(), ok, held, len(kvs))
	}
}
