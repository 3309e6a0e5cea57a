package tier_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/broker/tier"
	"github.com/tributary-io/tributary/internal/remotelog"
)

// smallTieredLog is 60 batches of two 100-byte records in 3000-byte
// segments ([0,20), [20,40), [40,60), ...), with local retention small
// enough that what is uploaded leaves the disk.
func smallTieredLog(t *testing.T) *log.Log {
	t.Helper()
	now := time.Now().UnixMilli()
	return smallTieredLogAt(t, func(int) int64 { return now })
}

// smallTieredLogAt is smallTieredLog with batch i's records at ts(i).
func smallTieredLogAt(t *testing.T, ts func(i int) int64) *log.Log {
	t.Helper()
	cfg := log.DefaultConfig()
	cfg.SegmentBytes = 3000
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
	for i := range 60 {
		opts.BaseTimestamp = ts(i)
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

// txnEntry is one .txnindex entry (version 0).
func txnEntry(pid, first, last, lso int64) []byte {
	e := binary.BigEndian.AppendUint16(nil, 0)
	for _, v := range []int64{pid, first, last, lso} {
		e = binary.BigEndian.AppendUint64(e, uint64(v))
	}
	return e
}

func abortedTxns(t *testing.T, m *tier.Manager, tp log.TopicPartition, from, to int64) ([]remotelog.AbortedTxn, error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		out, wait, err := m.AbortedTxns(tp, from, to)
		if err != nil || wait == nil {
			return out, err
		}
		<-wait
	}
	t.Fatal("AbortedTxns still waiting after 30 s")
	return nil, nil
}

// TestAbortedTxnsAcrossSegments: two overlapping aborted transactions,
// producer 7 from offset 4 with its abort marker at 45 (in a later remote
// segment), producer 8 from 6 to its marker at 12. The replica writes
// each entry's last stable offset as marker+1, although producer 7 was
// still open, so Kafka's LSO early stop would end the search at producer
// 8's entry: a read_committed fetch of [4, 13) must name both. Then a
// broker that cannot load the manifest must answer a retriable error,
// never an empty list.
func TestAbortedTxnsAcrossSegments(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	l := smallTieredLog(t)
	tp := l.TopicPartition()
	os.WriteFile(filepath.Join(l.Dir(), "00000000000000000000.txnindex"), txnEntry(8, 6, 12, 13), 0o644)
	os.WriteFile(filepath.Join(l.Dir(), "00000000000000000040.txnindex"), txnEntry(7, 4, 45, 46), 0o644)
	m := tier.New(tier.Config{URI: "file://" + root, ChunkBytes: 1000, CacheBytes: 8000})
	defer m.Close()
	m.Pass([]tier.Target{{TP: tp, TopicID: "id", Log: l, LeaderEpoch: 0, Bound: l.LogEndOffset()}}, nil)
	if l.LogStartOffset() < 40 {
		t.Fatalf("local log start %d: the segments with the markers are not remote only", l.LogStartOffset())
	}
	for _, c := range []struct {
		from, to int64
		want     map[int64]bool
	}{
		{4, 13, map[int64]bool{7: true, 8: true}},
		{13, 20, map[int64]bool{7: true}},
		{0, 4, map[int64]bool{}},
		{46, 60, map[int64]bool{}},
	} {
		out, err := abortedTxns(t, m, tp, c.from, c.to)
		if err != nil {
			t.Fatalf("AbortedTxns(%d, %d): %v", c.from, c.to, err)
		}
		got := map[int64]bool{}
		for _, a := range out {
			got[a.ProducerID] = true
		}
		if len(got) != len(c.want) || len(out) != len(c.want) {
			t.Errorf("AbortedTxns(%d, %d) = %v, want producers %v", c.from, c.to, out, c.want)
		}
		for pid := range c.want {
			if !got[pid] {
				t.Errorf("AbortedTxns(%d, %d) = %v: producer %d's aborted records would be delivered as committed", c.from, c.to, out, pid)
			}
		}
	}

	// A restarted broker whose manifest cannot be read (a directory in its
	// place, as HDFS trouble): retriable, not "no aborted transactions".
	breakManifest(t, root)
	m2 := tier.New(tier.Config{URI: "file://" + root, ChunkBytes: 1000, CacheBytes: 8000})
	defer m2.Close()
	m2.Pass([]tier.Target{{TP: tp, TopicID: "id", Log: l, LeaderEpoch: 1, Bound: l.LogEndOffset()}}, nil)
	if out, err := abortedTxns(t, m2, tp, 4, 13); !errors.Is(err, tier.ErrUnavailable) {
		t.Errorf("AbortedTxns with the manifest not loaded = %v, %v; want ErrUnavailable", out, err)
	}
}
