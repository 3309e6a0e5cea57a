package tier_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/broker/tier"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/remotelog"
)

// earlierBuildRefuses is what the parser of the builds before versioned
// manifests (h/mend's remotelog.ParseManifest) checks before their
// leader's load sweeps the partition directory: the JSON decodes and its
// version is 1. The fence must fail it.
func earlierBuildRefuses(data []byte) bool {
	var m struct {
		Version int `json:"version"`
	}
	return json.Unmarshal(data, &m) != nil || m.Version != 1
}

// TestFenceAgainstEarlierBuilds: once this build tiers a partition,
// manifest.json is the fence, which the previous build's parser refuses
// (so its leader errors instead of removing manifests/ and every file
// named by upload), which no gc pass removes, and which this build reads
// as no manifest. A legacy manifest.json is replaced by the fence only
// after version 1 carries its content.
func TestFenceAgainstEarlierBuilds(t *testing.T) {
	t.Parallel()
	for _, legacy := range []bool{false, true} {
		name := "new"
		if legacy {
			name = "legacy"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			dir := tier.RemoteDir("t", "id", 0)
			if legacy {
				// What an earlier build leaves: a version-1 manifest.
				if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
					t.Fatal(err)
				}
				old := `{"version":1,"topic":"t","topic_id":"id","partition":0,"log_start_offset":-1,"leader_epoch":0,"segments":[]}`
				if err := os.WriteFile(filepath.Join(root, dir, remotelog.LegacyManifestFile), []byte(old), 0o644); err != nil {
					t.Fatal(err)
				}
			}
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
			now := time.Now()
			m := tier.New(tier.Config{URI: "file://" + root, Grace: time.Millisecond, Now: func() time.Time { return now }})
			defer m.Close()
			target := tier.Target{TP: l.TopicPartition(), TopicID: "id", Log: l, Bound: l.LogEndOffset(), LeaderEpoch: 0}
			for range 3 { // gc runs with everything older than the grace period
				m.Pass([]tier.Target{target}, nil)
				now = now.Add(time.Second)
			}
			if end, err := m.UploadedEnd(l.TopicPartition()); err != nil || end <= 0 {
				t.Fatalf("uploaded end %d (%v): nothing uploaded", end, err)
			}
			data, err := os.ReadFile(filepath.Join(root, dir, remotelog.LegacyManifestFile))
			if err != nil {
				t.Fatalf("manifest.json after gc: %v; without it an earlier build sweeps the partition", err)
			}
			if !remotelog.IsFence(data) || !earlierBuildRefuses(data) {
				t.Fatalf("manifest.json is not a fence the earlier build refuses:\n%s", data)
			}
			fs, err := fsys.Open("file://"+root, fsys.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer fs.Close()
			latest, err := remotelog.ReadLatest(fs, dir)
			if err != nil || latest == nil || latest.Sequence == 0 {
				t.Fatalf("newest manifest %+v (%v), want a version", latest, err)
			}
			// With no version at all (a claim that failed after the fence
			// was written), the fence reads as no manifest.
			if err := os.RemoveAll(filepath.Join(root, dir, remotelog.ManifestDir)); err != nil {
				t.Fatal(err)
			}
			if man, err := remotelog.ReadLatest(fs, dir); err != nil || man != nil {
				t.Fatalf("the fence alone read as %+v (%v), want no manifest", man, err)
			}
		})
	}
}
