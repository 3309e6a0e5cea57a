package log

import (
	"errors"
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
