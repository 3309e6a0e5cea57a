package tier_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/broker/tier"
	"github.com/tributary-io/tributary/internal/remotelog"
)

// TestUploadAndReadLocalStore drives the manager by hand over a log on disk
// and a file:// remote store: uploads wait for the bound, local retention
// waits for uploads, and remote reads return the batches local retention
// removed, through the cache's wait channel.
func TestUploadAndReadLocalStore(t *testing.T) {
	t.Parallel()
	cfg := log.DefaultConfig()
	cfg.SegmentBytes = 4096
	cfg.RemoteStorage = true
	cfg.LocalRetentionBytes = 8192
	cfg.FileDeleteDelayMs = 0
	// An index entry every few batches, as Kafka's 4 KiB interval is
	// against the 4 MiB chunks: a read scans at most a chunk or two.
	cfg.IndexIntervalBytes = 500
	l, err := log.Open(filepath.Join(t.TempDir(), "t-0"), cfg, log.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const batches = 100
	opts := record.DefaultBuildOptions()
	opts.BaseTimestamp = time.Now().UnixMilli()
	for i := range batches {
		b, err := record.Build(opts, record.NewRecords(
			record.KV{Value: bytes.Repeat([]byte{byte(i)}, 100)}, record.KV{Value: bytes.Repeat([]byte{byte(i)}, 100)}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.AppendAsLeader(b, 0); err != nil {
			t.Fatal(err)
		}
	}
	root := t.TempDir()
	m := tier.New(tier.Config{URI: "file://" + root, ChunkBytes: 1000, CacheBytes: 4000})
	defer m.Close()
	target := tier.Target{TP: l.TopicPartition(), TopicID: "id", Log: l, Bound: 0}
	m.Pass([]tier.Target{target}, nil)
	if segs, _ := m.Uploaded(); segs != 0 {
		t.Fatalf("uploaded %d segments above the bound 0", segs)
	}
	if _, err := l.EnforceRetention(); err != nil {
		t.Fatal(err)
	}
	if l.LogStartOffset() != 0 {
		t.Fatalf("local retention deleted segments that are not uploaded: log start %d", l.LogStartOffset())
	}
	target.Bound = l.LogEndOffset()
	m.Pass([]tier.Target{target}, nil)
	segs, _ := m.Uploaded()
	if segs < 5 || l.LogStartOffset() == 0 || l.Size() > 3*4096 {
		t.Fatalf("uploaded %d segments, local log start %d, local size %d", segs, l.LogStartOffset(), l.Size())
	}
	if start, ok := m.LogStart(l.TopicPartition()); !ok || start != 0 {
		t.Fatalf("remote log start %d %v, want 0", start, ok)
	}
	// Read everything below the local start from the remote copy.
	readRemote(t, m, l.TopicPartition(), 0, l.LogStartOffset(), 700)
	// A consumer asking for far more than the cache holds gets a capped
	// read (a quarter of the cache), not the whole segment...
	if data := readOnce(t, m, l.TopicPartition(), 0, 1<<30); len(data) == 0 || len(data) > 1000 {
		t.Fatalf("a read of 1 GiB returned %d bytes with a 4000-byte cache, want 1..1000", len(data))
	}
	// ...and with a cache smaller than a segment, reads still complete:
	// the chunks of one read never evict each other before it is answered.
	small := tier.New(tier.Config{URI: "file://" + root, ChunkBytes: 500, CacheBytes: 2000})
	defer small.Close()
	small.Pass([]tier.Target{target}, nil)
	readRemote(t, small, l.TopicPartition(), 0, l.LogStartOffset(), 1<<30)
	if _, _, err := m.Read(l.TopicPartition(), l.LogEndOffset()+10, 100, true); err != tier.ErrNotRemote {
		t.Fatalf("read past the remote copy: %v", err)
	}
	// A broker that restarts while remote storage is unreachable keeps
	// the log start from its cached manifest, and answers reads below the
	// local start with a retriable error, not OFFSET_OUT_OF_RANGE.
	down := tier.New(tier.Config{URI: "hdfs://127.0.0.1:1/nowhere"})
	defer down.Close()
	down.Pass([]tier.Target{target}, nil)
	if start, ok := down.LogStart(l.TopicPartition()); !ok || start != 0 {
		t.Fatalf("log start with remote storage unreachable: %d %v, want 0 from the cached manifest", start, ok)
	}
	if _, _, err := down.Read(l.TopicPartition(), 0, 700, true); !errors.Is(err, kerr.KafkaStorageError) {
		t.Fatalf("read with remote storage unreachable: %v, want KAFKA_STORAGE_ERROR", err)
	}

	// Remote storage gone: a read of bytes not in memory fails with a
	// retriable KAFKA_STORAGE_ERROR, and no upload is registered.
	if err := os.RemoveAll(root); err != nil {
		t.Fatal(err)
	}
	var err2 error
	for off := int64(0); err2 == nil; off++ {
		if off == l.LogStartOffset() {
			t.Fatal("reads succeed with remote storage gone: every offset is in the cache")
		}
		for range 3 {
			_, wait, err := m.Read(l.TopicPartition(), off, 700, true)
			if err2 = err; wait == nil {
				break
			}
			<-wait
		}
	}
	if !errors.Is(err2, kerr.KafkaStorageError) {
		t.Fatalf("read with remote storage gone: %v, want KAFKA_STORAGE_ERROR", err2)
	}
}

// readOnce reads at off, waiting for remote bytes at most 50 times.
func readOnce(t *testing.T, m *tier.Manager, tp log.TopicPartition, off, maxBytes int64) []byte {
	t.Helper()
	for range 50 {
		data, wait, err := m.Read(tp, off, maxBytes, true)
		if err != nil {
			t.Fatal(err)
		}
		if wait == nil {
			return data
		}
		select {
		case <-wait:
		case <-time.After(10 * time.Second):
			t.Fatal("remote read never completed")
		}
	}
	t.Fatalf("remote read at %d with max %d bytes never completed: still waiting after 50 loads", off, maxBytes)
	return nil
}

// readRemote reads [from, to) from remote storage and checks each offset
// holds its batch: batch i has two records of byte i.
func readRemote(t *testing.T, m *tier.Manager, tp log.TopicPartition, from, to, maxBytes int64) {
	t.Helper()
	for off := from; off < to; {
		data := readOnce(t, m, tp, off, maxBytes)
		if len(data) == 0 {
			t.Fatalf("no data at offset %d", off)
		}
		for rest := data; len(rest) > 0; {
			b, r, ok := record.Split(rest)
			if !ok {
				t.Fatalf("partial batch at offset %d", off)
			}
			if b.BaseOffset() > off || b.LastOffset() < off {
				t.Fatalf("batch [%d, %d] for offset %d", b.BaseOffset(), b.LastOffset(), off)
			}
			recs, err := b.DecodeRecords()
			if err != nil {
				t.Fatal(err)
			}
			if want := byte(off / 2); recs[0].Value[0] != want {
				t.Fatalf("offset %d holds batch %d's bytes, want %d", off, recs[0].Value[0], want)
			}
			off, rest = b.LastOffset()+1, r
		}
	}
}

// TestUploadAfterLeaderChange: a new leader's segments start elsewhere than
// the old leader's, and its segment spanning the uploaded end is uploaded
// whole, so that no offset is lost when local retention deletes it.
func TestUploadAfterLeaderChange(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	open := func(segBytes int64) *log.Log {
		cfg := log.DefaultConfig()
		cfg.SegmentBytes = segBytes
		cfg.RemoteStorage = true
		cfg.LocalRetentionBytes = 4096
		cfg.FileDeleteDelayMs = 0
		cfg.IndexIntervalBytes = 500
		l, err := log.Open(filepath.Join(t.TempDir(), "t-0"), cfg, log.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		opts := record.DefaultBuildOptions()
		opts.BaseTimestamp = time.Now().UnixMilli()
		for i := range 60 {
			b, err := record.Build(opts, record.NewRecords(
				record.KV{Value: bytes.Repeat([]byte{byte(i)}, 100)}, record.KV{Value: bytes.Repeat([]byte{byte(i)}, 100)}))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.AppendAsLeader(b, 0); err != nil {
				t.Fatal(err)
			}
		}
		return l
	}
	old, cur := open(4096), open(3000)
	m1 := tier.New(tier.Config{URI: "file://" + root, ChunkBytes: 1000, CacheBytes: 8000})
	defer m1.Close()
	// Records deleted before the first upload stay deleted: the remote
	// log start is the local one, not the segment's base.
	if err := old.DeleteRecordsBefore(4); err != nil {
		t.Fatal(err)
	}
	// The old leader uploads its first segment only: [0, 28); the new
	// leader's segments are [0, 20), [20, 40) ...
	m1.Pass([]tier.Target{{TP: old.TopicPartition(), TopicID: "id", Log: old, Bound: 30}}, nil)
	if segs, _ := m1.Uploaded(); segs != 1 {
		t.Fatalf("old leader uploaded %d segments, want 1", segs)
	}
	// The new leader's segment [20, 40) had aborted transactions.
	// One entry: producer 5, offsets 25 to its abort marker at 38, the
	// last stable offset then 39.
	entry := binary.BigEndian.AppendUint16(nil, 0)
	for _, v := range []int64{5, 25, 38, 39} {
		entry = binary.BigEndian.AppendUint64(entry, uint64(v))
	}
	if err := os.WriteFile(filepath.Join(cur.Dir(), "00000000000000000020.txnindex"), entry, 0o644); err != nil {
		t.Fatal(err)
	}
	m2 := tier.New(tier.Config{URI: "file://" + root, ChunkBytes: 1000, CacheBytes: 8000})
	defer m2.Close()
	m2.Pass([]tier.Target{{TP: cur.TopicPartition(), TopicID: "id", Log: cur, LeaderEpoch: 1, Bound: cur.LogEndOffset()}}, nil)
	if cur.LogStartOffset() == 0 {
		t.Fatal("the new leader kept every segment locally")
	}
	if start, ok := m2.LogStart(cur.TopicPartition()); !ok || start != 4 {
		t.Fatalf("remote log start %d %v, want 4 (the local start at the first upload)", start, ok)
	}
	readRemote(t, m2, cur.TopicPartition(), 4, cur.LogStartOffset(), 700)
	// The uploaded .txnindex is read back for read_committed fetches.
	aborted := func(from, to int64) []remotelog.AbortedTxn {
		for {
			out, wait, err := m2.AbortedTxns(cur.TopicPartition(), from, to)
			if err != nil {
				t.Fatal(err)
			}
			if wait == nil {
				return out
			}
			<-wait
		}
	}
	want := []remotelog.AbortedTxn{{ProducerID: 5, FirstOffset: 25, LastOffset: 38, LastStableOffset: 39}}
	if got := aborted(4, 20); len(got) != 0 {
		t.Errorf("aborted transactions of [4, 20): %v, want none", got)
	}
	if got := aborted(4, 30); !reflect.DeepEqual(got, want) {
		t.Errorf("aborted transactions of [4, 30): %v, want %v", got, want)
	}
	if got := aborted(38, 40); !reflect.DeepEqual(got, want) {
		t.Errorf("aborted transactions of [38, 40): %v, want %v", got, want)
	}
	if got := aborted(39, 45); len(got) != 0 {
		t.Errorf("aborted transactions of [39, 45): %v, want none", got)
	}
	// The deposed leader, not told yet, finds the manifest rewritten by
	// the new one and writes nothing over it.
	manifest := newestVersion(t, root)
	before, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	m1.Pass([]tier.Target{{TP: old.TopicPartition(), TopicID: "id", Log: old, Bound: old.LogEndOffset()}}, nil)
	if after, err := os.ReadFile(manifest); newestVersion(t, root) != manifest || err != nil || !bytes.Equal(before, after) {
		t.Fatalf("the deposed leader wrote a manifest version (err %v)", err)
	}
	// DeleteRecords below the local start raises the remote start, and a
	// broker loading the manifest afresh sees it too.
	if err := m2.DeleteRecords(cur.TopicPartition(), 10); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m2.Read(cur.TopicPartition(), 8, 700, true); err != tier.ErrNotRemote {
		t.Fatalf("read below the deleted offset: %v, want ErrNotRemote", err)
	}
	m3 := tier.New(tier.Config{URI: "file://" + root})
	defer m3.Close()
	m3.Pass([]tier.Target{{TP: cur.TopicPartition(), TopicID: "id", Log: cur, LeaderEpoch: 2, Bound: cur.LogEndOffset()}}, nil)
	if start, ok := m3.LogStart(cur.TopicPartition()); !ok || start != 10 {
		t.Fatalf("remote log start after DeleteRecords, reloaded: %d %v, want 10", start, ok)
	}
	readRemote(t, m3, cur.TopicPartition(), 10, cur.LogStartOffset(), 700)
}
