package log

import (
	"path/filepath"
	"testing"
	"time"
)

// A read served from the kept tail batches is the read the offset index and
// batch headers give: for every offset, upper bound, byte limit and
// MinOneBatch, over a log of small batches with offset gaps (as a
// compacted topic's) across two segments.
func TestReadFromTheTailAgreesWithTheIndex(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SegmentBytes = 24 << 10 // so that the log has a sealed segment too
	l, err := Open(filepath.Join(t.TempDir(), "t-0"), cfg, Options{CleanShutdown: true})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	next := int64(0)
	for i := range 300 {
		b := testBatch(t, 1+i%5, 40+i%7*30, time.Now().UnixMilli(), "none")
		if i%11 == 0 {
			next += 3 // a gap the cleaner could have left
		}
		b.SetBaseOffset(next)
		if _, err := l.AppendAsFollower(b); err != nil {
			t.Fatal(err)
		}
		next = b.LastOffset() + 1
	}
	segs := l.segments()
	if len(segs) < 2 || segs[len(segs)-1].tail.Load() == nil {
		t.Fatalf("%d segments, active tail %v: the test needs a sealed segment and kept tail batches", len(segs), segs[len(segs)-1].tail.Load())
	}
	active := segs[len(segs)-1]
	kept := active.tail.Load()
	fromTail := 0
	for offset := l.LogStartOffset(); offset <= l.LogEndOffset(); offset++ {
		for _, upTo := range []int64{-1, offset + 1, offset + 7, l.LogEndOffset() - 2} {
			for _, maxBytes := range []int{1, 300, 1 << 20} {
				for _, minOne := range []bool{true, false} {
					opt := ReadOptions{MaxBytes: maxBytes, MinOneBatch: minOne, UpTo: upTo}
					got, gotErr := l.Read(offset, opt)
					active.tail.Store(nil)
					want, wantErr := l.Read(offset, opt)
					active.tail.Store(kept)
					if got != want || (gotErr == nil) != (wantErr == nil) {
						t.Fatalf("Read(%d, %+v) = %+v, %v from the tail; %+v, %v by the index", offset, opt, got, gotErr, want, wantErr)
					}
				}
			}
		}
		if _, _, known := kept.holding(offset, active.size.Load()); known {
			fromTail++
		}
	}
	if fromTail == 0 {
		t.Fatal("no offset was served from the tail batches")
	}
}
