package tier_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/broker/tier"
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
	for off := int64(0); off < l.LogStartOffset(); {
		data, wait, err := m.Read(l.TopicPartition(), off, 700, true)
		if err != nil {
			t.Fatal(err)
		}
		if wait != nil {
			select {
			case <-wait:
			case <-time.After(10 * time.Second):
				t.Fatal("remote read never completed")
			}
			continue
		}
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
	for i := 0; err2 == nil; i++ {
		if i == 100 {
			t.Fatal("reads succeed with remote storage gone: offset 0 never left the cache")
		}
		_, wait, err := m.Read(l.TopicPartition(), 0, 700, true)
		if wait != nil {
			<-wait
		}
		err2 = err
	}
	if !errors.Is(err2, kerr.KafkaStorageError) {
		t.Fatalf("read with remote storage gone: %v, want KAFKA_STORAGE_ERROR", err2)
	}
}
