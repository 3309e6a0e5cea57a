package tier_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/broker/tier"
	"github.com/tributary-io/tributary/internal/remotelog"
)

// TestAuxState: what a follower takes from remote storage to start at its
// leader's local log start (KIP-405): the end of the remote segment below
// that start, the leader epochs as of there and the producer state the
// uploader computed for there; a corrupt checkpoint or a snapshot larger
// than its metadata says is refused, not read.
func TestAuxState(t *testing.T) {
	t.Parallel()
	cfg := log.DefaultConfig()
	cfg.SegmentBytes = 4096
	cfg.RemoteStorage = true
	cfg.LocalRetentionBytes = 8192
	cfg.FileDeleteDelayMs = 0
	l, err := log.Open(filepath.Join(t.TempDir(), "t-0"), cfg, log.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	opts := record.DefaultBuildOptions()
	opts.BaseTimestamp = time.Now().UnixMilli()
	for i := range 60 {
		b, err := record.Build(opts, record.NewRecords(record.KV{Value: bytes.Repeat([]byte{byte(i)}, 200)}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendAsLeader(b, int32(i/20)); err != nil { // epochs 0, 1, 2
			t.Fatal(err)
		}
	}
	root := t.TempDir()
	m := tier.New(tier.Config{URI: "file://" + root})
	defer m.Close()
	var mu sync.Mutex // uploads run in parallel
	var asked []int64
	target := tier.Target{TP: l.TopicPartition(), TopicID: "id", Log: l, Bound: l.LogEndOffset(), LeaderEpoch: 2,
		ProducerSnapshot: func(next int64) ([]byte, bool, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, next)
			return []byte("snapshot at " + string(rune('0'+next%10))), true, nil
		}}
	m.Pass([]tier.Target{target}, nil)
	localStart := l.LogStartOffset()
	if localStart == 0 {
		t.Fatal("nothing uploaded and trimmed")
	}
	st, err := m.AuxState(l.TopicPartition(), "id", localStart)
	if err != nil {
		t.Fatal(err)
	}
	if st.Next != localStart {
		t.Fatalf("start at %d, want the leader's local start %d (segments share boundaries here)", st.Next, localStart)
	}
	if !slices.Contains(asked, st.Next) {
		t.Fatalf("the uploaded snapshot was not computed for %d (asked %v)", st.Next, asked)
	}
	if want := "snapshot at " + string(rune('0'+st.Next%10)); string(st.Snapshot) != want {
		t.Fatalf("snapshot %q, want %q", st.Snapshot, want)
	}
	var want []log.EpochEntry
	for _, e := range l.LeaderEpochs() {
		if e.StartOffset < st.Next {
			want = append(want, e)
		}
	}
	if !slices.Equal(st.Epochs, want) || len(want) == 0 {
		t.Fatalf("epochs %v, want %v", st.Epochs, want)
	}
	// The follower's leader starts mid-segment (an earlier leader
	// uploaded it): the follower starts at that segment's end.
	if st2, err := m.AuxState(l.TopicPartition(), "id", localStart-1); err != nil || st2.Next != localStart {
		t.Fatalf("from %d: next %d, %v; want %d", localStart-1, st2.Next, err, localStart)
	}
	if _, err := m.AuxState(l.TopicPartition(), "id", 1<<40); err == nil {
		t.Fatal("a local start past the remote segments was answered")
	}

	dir := filepath.Join(root, remotelog.Dir(l.TopicPartition().Topic, "id", 0))
	// What a reader of the segments needs of the upload: the snapshot is
	// exact, and the topic's max.message.bytes bounds decompression.
	data, err := os.ReadFile(newestVersion(t, root))
	if err != nil {
		t.Fatal(err)
	}
	man, err := remotelog.ParseManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range man.Segments {
		if s.ProducerState != remotelog.ProducerStateExact || s.MaxMessageBytes != cfg.MaxMessageBytes {
			t.Fatalf("segment [%d, %d]: producer state %q, max.message.bytes %d; want exact, %d",
				s.BaseOffset, s.EndOffset, s.ProducerState, s.MaxMessageBytes, cfg.MaxMessageBytes)
		}
	}
	seg, ok := man.Find(localStart - 1)
	if !ok {
		t.Fatalf("no remote segment holds %d", localStart-1)
	}
	// The file the newest manifest names (by upload), the one AuxState reads.
	ck := filepath.Join(dir, seg.FileName(remotelog.SuffixEpochs))
	good, err := os.ReadFile(ck)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Replace(good, []byte("0\n"), []byte("1\n"), 1) // another version, same size
	if err := os.WriteFile(ck, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.AuxState(l.TopicPartition(), "id", localStart); err == nil {
		t.Fatal("a checkpoint of another version was taken")
	}
	if err := os.WriteFile(ck, append(good, "9 99\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := m.AuxState(l.TopicPartition(), "id", localStart); err == nil {
		t.Fatal("a checkpoint longer than its metadata says was taken")
	}
}

// TestAuxStateNeedsExactSnapshot: a remote segment uploaded without the
// producer state at its end (it could not be computed, or older code
// uploaded it) is no state to start a follower from: AuxState refuses it
// with ErrNoProducerState, on which the follower copies the remote range,
// rather than answer it as a state with no producers.
func TestAuxStateNeedsExactSnapshot(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"not computed", "older upload"} {
		cfg := log.DefaultConfig()
		cfg.SegmentBytes = 4096
		cfg.RemoteStorage = true
		cfg.LocalRetentionBytes = 8192
		cfg.FileDeleteDelayMs = 0
		l, err := log.Open(filepath.Join(t.TempDir(), "t-0"), cfg, log.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		opts := record.DefaultBuildOptions()
		opts.BaseTimestamp = time.Now().UnixMilli()
		for i := range 60 {
			b, err := record.Build(opts, record.NewRecords(record.KV{Value: bytes.Repeat([]byte{byte(i)}, 200)}))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.AppendAsLeader(b, 0); err != nil {
				t.Fatal(err)
			}
		}
		m := tier.New(tier.Config{URI: "file://" + t.TempDir()})
		defer m.Close()
		target := tier.Target{TP: l.TopicPartition(), TopicID: "id", Log: l, Bound: l.LogEndOffset(), LeaderEpoch: 0}
		if name == "not computed" {
			target.ProducerSnapshot = func(int64) ([]byte, bool, error) { return nil, false, nil }
		}
		m.Pass([]tier.Target{target}, nil)
		localStart := l.LogStartOffset()
		if localStart == 0 {
			t.Fatalf("%s: nothing uploaded and trimmed", name)
		}
		st, err := m.AuxState(l.TopicPartition(), "id", localStart)
		if !errors.Is(err, tier.ErrNoProducerState) {
			t.Fatalf("%s: AuxState: %+v, %v; want ErrNoProducerState", name, st, err)
		}
	}
}
