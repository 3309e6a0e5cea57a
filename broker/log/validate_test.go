package log

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/record"
)

// A producer's append is all or nothing: one bad record in the last batch
// leaves the log as it was, and the topic's rules (keys on a compacted
// topic, timestamp bounds by the log's clock) come from its config.
func TestAppendAsLeaderChecksEveryRecord(t *testing.T) {
	now := cleanerTestNow.UnixMilli()
	l := compactedLog(t, filepath.Join(t.TempDir(), "t-0"), false, func(c *Config) {
		c.TimestampBeforeMaxMs, c.TimestampAfterMaxMs = 60_000, 1_000
	})
	defer l.Close()
	good := kvBatch(t, record.CodecZstd, kv{"a", "1"}, kv{"b", "2"})
	keyless := kvBatch(t, record.CodecLZ4, kv{"c", "3"}, kv{"", "4"})
	old := kvBatch(t, record.CodecGzip, kv{"d", "5"})
	for name, tc := range map[string]struct {
		batches []byte
		code    *kerr.Error
	}{
		"keyless record in the second batch": {append(append([]byte(nil), good...), keyless...), kerr.InvalidRecord},
		"too old":                            {withBaseTimestamp(old, now-60_001), kerr.InvalidTimestamp},
		"too new":                            {withBaseTimestamp(kvBatch(t, record.CodecNone, kv{"e", "6"}), now+1_001), kerr.InvalidTimestamp},
	} {
		if _, err := l.AppendAsLeader(tc.batches, 0); !errors.Is(err, tc.code) {
			t.Errorf("%s: %v, want %v", name, err, tc.code)
		}
		if l.LogEndOffset() != 0 {
			t.Fatalf("%s: log end %d after a refused append", name, l.LogEndOffset())
		}
	}
	// Within the bounds, and with a max timestamp the producer got wrong:
	// the log holds what the records say.
	ok := withBaseTimestamp(kvBatch(t, record.CodecNone, kv{"f", "7"}), now-60_000)
	ok.SetMaxTimestamp(1)
	if _, err := l.AppendAsLeader(ok, 0); err != nil {
		t.Fatal(err)
	}
	if ok.MaxTimestamp() != now-60_000 || ok.ComputeCRC() != ok.CRC() {
		t.Errorf("stored max timestamp %d (want %d), CRC right: %v", ok.MaxTimestamp(), now-60_000, ok.ComputeCRC() == ok.CRC())
	}
}

// withBaseTimestamp moves every record of b to ts and reseals it.
func withBaseTimestamp(b record.Batch, ts int64) record.Batch {
	for i := range 8 {
		b[27+i] = byte(uint64(ts) >> (56 - 8*i))
		b[35+i] = byte(uint64(ts) >> (56 - 8*i))
	}
	crcFix(b)
	return b
}

// compression.type other than producer stores the records in that codec,
// as Kafka does, at the offsets the producer's batches are told.
func TestAppendAsLeaderRecompresses(t *testing.T) {
	for _, target := range []record.Codec{record.CodecNone, record.CodecZstd, record.CodecGzip} {
		l := compactedLog(t, filepath.Join(t.TempDir(), "t-0"), false, func(c *Config) { c.Compression = target })
		sent := append(append([]byte(nil), kvBatch(t, record.CodecLZ4, kv{"a", "1"}, kv{"b", "2"})...), kvBatch(t, target, kv{"c", "3"})...)
		info, err := l.AppendAsLeader(sent, 4)
		if err != nil || info.FirstOffset != 0 || info.LastOffset != 2 {
			t.Fatalf("%s: %+v %v", target, info, err)
		}
		first, rest, _ := record.Split(sent)
		if first.BaseOffset() != 0 || first.PartitionLeaderEpoch() != 4 || record.Batch(rest).BaseOffset() != 2 {
			t.Errorf("%s: the sent batches were told offsets %d and %d", target, first.BaseOffset(), record.Batch(rest).BaseOffset())
		}
		var keys []string
		for rest := readAll(t, l); len(rest) > 0; {
			b, r, ok := record.Split(rest)
			if !ok {
				t.Fatalf("%s: torn read", target)
			}
			if err := record.Validate(b, record.FromReplica, record.Limits{}); err != nil || b.Codec() != target {
				t.Fatalf("%s: stored batch of codec %s: %v", target, b.Codec(), err)
			}
			recs, err := b.DecodeRecords()
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range recs {
				keys = append(keys, fmt.Sprintf("%d:%s", b.RecordOffset(&r), r.Key))
			}
			rest = r
		}
		if fmt.Sprint(keys) != "[0:a 1:b 2:c]" {
			t.Errorf("%s: stored %v", target, keys)
		}
		l.Close()
	}
}

func readAll(t *testing.T, l *Log) []byte {
	t.Helper()
	s, err := l.Read(0, ReadOptions{MaxBytes: 1 << 20, UpTo: -1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
