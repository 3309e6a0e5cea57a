package log

import (
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// TestTruncateThroughCorruptionFails: a truncation whose target lies past
// bytes that are not batches cannot find where to cut. It used to report
// success and leave the divergent records in place, so a follower went on
// appending after records its leader never had.
func TestTruncateThroughCorruptionFails(t *testing.T) {
	cfg := DefaultConfig()
	cfg.IndexIntervalBytes = 1 << 30 // no index entry: the cut is found by walking headers
	l, err := Open(t.TempDir()+"/t-0", cfg, Options{Now: func() time.Time { return cleanerTestNow }, Logger: benchDiscardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	fillCompacted(t, l, 20)
	mid, err := l.Read(20, ReadOptions{MaxBytes: 1, MinOneBatch: true, UpTo: -1})
	if err != nil {
		t.Fatal(err)
	}
	// The magic byte of the batch holding offset 20.
	if _, err := mid.File.WriteAt([]byte{7}, mid.Pos+16); err != nil {
		t.Fatal(err)
	}
	mid.Release()
	end := l.LogEndOffset()
	err = l.TruncateTo(30)
	if !errors.Is(err, kerr.CorruptMessage) {
		t.Fatalf("truncating past a corrupt batch: %v, want CORRUPT_MESSAGE", err)
	}
	if l.LogEndOffset() != end {
		t.Fatalf("log end moved from %d to %d on a failed truncation", end, l.LogEndOffset())
	}
	// Before the corruption the cut is found.
	if err := l.TruncateTo(10); err != nil {
		t.Fatal(err)
	}
	if l.LogEndOffset() != 10 {
		t.Fatalf("log end %d after truncating to 10", l.LogEndOffset())
	}
}
