package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker/record"
)

// closeWatch records the segments whose files were closed, through the
// Log's test hook rather than by waiting.
type closeWatch struct {
	mu     sync.Mutex
	closed map[*segment]bool
}

func watchCloses(l *Log) *closeWatch {
	w := &closeWatch{closed: map[*segment]bool{}}
	l.testSegmentClosed = func(s *segment) {
		w.mu.Lock()
		w.closed[s] = true
		w.mu.Unlock()
	}
	return w
}

func (w *closeWatch) isClosed(s *segment) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed[s]
}

// lifetimeLog is a log of many small segments whose deleted files are
// removed at once: file.delete.delay.ms=0, which a topic may set.
func lifetimeLog(t *testing.T, batches int, tweak ...func(*Config)) *Log {
	t.Helper()
	cfg := DefaultConfig()
	cfg.SegmentBytes = 600
	cfg.IndexIntervalBytes = 100
	cfg.FileDeleteDelayMs = 0
	for _, f := range tweak {
		f(&cfg)
	}
	l, err := Open(t.TempDir()+"/t-0", cfg, Options{Now: func() time.Time { return cleanerTestNow }, Logger: benchDiscardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	fillCompacted(t, l, batches)
	if l.SegmentCount() < 4 {
		t.Fatalf("%d segments, want several", l.SegmentCount())
	}
	return l
}

// holdFirst reads the first segment and checks the bytes are whole batches.
func holdFirst(t *testing.T, l *Log, offset int64) (Slice, []byte) {
	t.Helper()
	s, err := l.Read(offset, ReadOptions{MaxBytes: 1 << 20, UpTo: -1})
	if err != nil || s.Size == 0 || s.seg == nil {
		t.Fatalf("read %d: %+v, %v", offset, s, err)
	}
	data, err := s.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	checkBatches(t, data)
	return s, data
}

func checkBatches(t testing.TB, data []byte) {
	t.Helper()
	n := 0
	for b, rest, ok := record.Split(data); ok; b, rest, ok = record.Split(rest) {
		if b.CRC() != b.ComputeCRC() {
			t.Fatalf("batch at offset %d: CRC %x, computed %x", b.BaseOffset(), b.CRC(), b.ComputeCRC())
		}
		n++
	}
	if n == 0 {
		t.Fatalf("no whole batch in %d bytes", len(data))
	}
}

// waitDeletes waits until the delayed deletes (timers of 0 ms, run on
// their own goroutines) have retired their segments.
func waitDeletes(t *testing.T, l *Log) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		n := len(l.pendingDeletes)
		l.mu.Unlock()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d deletes still pending", n)
		}
		time.Sleep(time.Millisecond)
	}
}

// checkHeld checks that a held slice still reads the bytes it read first,
// that its segment is open, and that Release closes it then and only then.
func checkHeld(t *testing.T, w *closeWatch, s Slice, want []byte) {
	t.Helper()
	seg := s.seg
	if w.isClosed(seg) {
		t.Fatalf("segment %d closed while a reader holds it", seg.base)
	}
	got, err := s.ReadAll()
	if err != nil {
		t.Fatalf("reading a held slice: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("a held slice's bytes changed")
	}
	// The index is still mapped: a lookup reads it.
	seg.offsets.lookup(seg.base + 1)
	file := s.File
	s.Release()
	if !w.isClosed(seg) {
		t.Fatalf("segment %d not closed by its last release", seg.base)
	}
	if _, err := file.ReadAt(make([]byte, 1), 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("file of a released segment: %v, want closed", err)
	}
	s.Release() // a second release does nothing
}

func TestReaderHoldsSegmentAcrossDelete(t *testing.T) {
	l := lifetimeLog(t, 40)
	w := watchCloses(l)
	s, data := holdFirst(t, l, 0)
	other := l.segments()[1]
	if err := l.Delete(); err != nil {
		t.Fatal(err)
	}
	if !w.isClosed(other) {
		t.Fatal("an unheld segment of a deleted log stayed open")
	}
	// A reader of a deleted log gets an error, not a loop looking for a
	// live segment in a list that has none.
	if _, err := l.Read(other.base, ReadOptions{MaxBytes: 1 << 20, UpTo: -1}); !errors.Is(err, ErrClosed) {
		t.Fatalf("read of a deleted log: %v, want ErrClosed", err)
	}
	if _, _, _, err := l.OffsetForTimestamp(0); !errors.Is(err, ErrClosed) {
		t.Fatalf("ListOffsets of a deleted log: %v, want ErrClosed", err)
	}
	checkHeld(t, w, s, data)
}

func TestReaderHoldsSegmentAcrossClose(t *testing.T) {
	l := lifetimeLog(t, 40)
	w := watchCloses(l)
	s, data := holdFirst(t, l, 0)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	checkHeld(t, w, s, data)
}

func TestReaderHoldsSegmentAcrossRetention(t *testing.T) {
	l := lifetimeLog(t, 40, func(c *Config) { c.RetentionBytes = 1200 })
	w := watchCloses(l)
	first := l.segments()[0]
	s, data := holdFirst(t, l, 0)
	n, err := l.EnforceRetention()
	if err != nil || n == 0 {
		t.Fatalf("retention deleted %d segments, %v", n, err)
	}
	waitDeletes(t, l)
	if _, err := os.Stat(first.path(logSuffix + deletedSuffix)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the deleted segment's file is still there after file.delete.delay.ms=0: %v", err)
	}
	if l.segments()[0] == first {
		t.Fatal("retention kept the first segment")
	}
	checkHeld(t, w, s, data)
}

func TestReaderHoldsSegmentAcrossDeleteRecords(t *testing.T) {
	l := lifetimeLog(t, 40)
	w := watchCloses(l)
	s, data := holdFirst(t, l, 0)
	if err := l.DeleteRecordsBefore(l.segments()[2].base); err != nil {
		t.Fatal(err)
	}
	waitDeletes(t, l)
	checkHeld(t, w, s, data)
}

func TestReaderHoldsSegmentAcrossTruncation(t *testing.T) {
	l := lifetimeLog(t, 40)
	w := watchCloses(l)
	segs := l.segments()
	s, data := holdFirst(t, l, segs[2].base)
	if s.seg != segs[2] {
		t.Fatalf("read segment %d, want %d", s.seg.base, segs[2].base)
	}
	if err := l.TruncateTo(segs[1].base + 1); err != nil {
		t.Fatal(err)
	}
	waitDeletes(t, l)
	if l.SegmentCount() != 2 {
		t.Fatalf("%d segments after truncating into the second", l.SegmentCount())
	}
	checkHeld(t, w, s, data)
}

func TestReaderHoldsSegmentAcrossCompactionSwap(t *testing.T) {
	l := lifetimeLog(t, 60, func(c *Config) { c.Compact, c.Delete = true, false })
	w := watchCloses(l)
	old := l.segments()[0]
	s, data := holdFirst(t, l, 0)
	res, err := l.Clean(context.Background(), cleanerTestNow, 0, -1)
	if err != nil || res.SegmentsBefore == 0 {
		t.Fatalf("clean: %+v, %v", res, err)
	}
	waitDeletes(t, l)
	if l.segments()[0] == old {
		t.Fatal("the cleaning did not replace the first segment")
	}
	// The new segment serves the same offsets, with fewer records.
	if r, err := l.Read(0, ReadOptions{MaxBytes: 1 << 20, UpTo: -1}); err != nil || r.seg == old {
		t.Fatalf("read after the swap: %+v, %v", r, err)
	} else {
		r.Release()
	}
	checkHeld(t, w, s, data)
}

// TestConcurrentReadersAndDeletes reads as fast as it can while segments
// roll, expire, are truncated away and compacted, with no delete delay.
// Without reference counts, a reader's pread or index lookup lands on a
// closed file, a reused descriptor (another file's bytes) or an unmapped
// index (SIGSEGV); with them, every batch read checks.
func TestConcurrentReadersAndDeletes(t *testing.T) {
	l := lifetimeLog(t, 40, func(c *Config) { c.Compact, c.Delete = true, true; c.RetentionBytes = 3000 })
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	var reads atomic.Int64
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(r), 1))
			for !stop.Load() {
				start, end := l.LogStartOffset(), l.LogEndOffset()
				if end <= start {
					continue
				}
				off := start + rng.Int64N(end-start)
				s, err := l.Read(off, ReadOptions{MaxBytes: 1 << 20, MinOneBatch: true, UpTo: -1})
				if errors.Is(err, ErrOffsetOutOfRange) {
					continue // retention passed it
				}
				if err != nil {
					errs <- err
					return
				}
				data, err := s.ReadAll()
				s.Release()
				if err != nil {
					errs <- err
					return
				}
				for b, rest, ok := record.Split(data); ok; b, rest, ok = record.Split(rest) {
					if b.CRC() != b.ComputeCRC() {
						errs <- fmt.Errorf("read at %d: batch at %d fails its CRC", off, b.BaseOffset())
						return
					}
				}
				if _, _, _, err := l.OffsetForTimestamp(cleanerTestNow.UnixMilli()); err != nil {
					errs <- err
					return
				}
				reads.Add(1)
			}
		}()
	}
	// A cleaning fsyncs its output: a few are enough.
	for i := range 80 {
		fillCompacted(t, l, 5)
		var err error
		switch i % 4 {
		case 0:
			_, err = l.EnforceRetention()
		case 1:
			if i%16 != 1 {
				break
			}
			_, err = l.Clean(context.Background(), cleanerTestNow, l.LogStartOffset(), -1)
			if errors.Is(err, ErrCleanAborted) {
				err = nil
			}
		case 2:
			err = l.TruncateTo(l.LogEndOffset() - 3)
		case 3:
			err = l.Roll()
		}
		if err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("round %d: %v", i, err)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if reads.Load() == 0 {
		t.Fatal("no read completed")
	}
	t.Logf("%d reads", reads.Load())
}

// BenchmarkSegmentRef is what reference counting adds to every read: one
// acquire and one release of the segment, alone and from every CPU at once
// on the same segment (a hot partition's readers).
func BenchmarkSegmentRef(b *testing.B) {
	s := &segment{}
	s.refs.Store(1)
	b.Run("serial", func(b *testing.B) {
		for range b.N {
			if !s.acquire() {
				b.Fatal("closed")
			}
			s.release()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if !s.acquire() {
					b.Fatal("closed")
				}
				s.release()
			}
		})
	})
}

// BenchmarkReadTail is Log.Read at the end of the active segment, the
// caught-up consumer's read, without the send: where the reference count's
// share of the read path is largest.
func BenchmarkReadTail(b *testing.B) {
	cfg := DefaultConfig()
	l, err := Open(b.TempDir()+"/t-0", cfg, Options{Logger: benchDiscardLogger()})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	batch := benchBatch(b, 500, 100)
	for range 1000 {
		if _, err := l.AppendAsLeader(append([]byte(nil), batch...), 0); err != nil {
			b.Fatal(err)
		}
	}
	off := l.LogEndOffset() - 1
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s, err := l.Read(off, ReadOptions{MaxBytes: 1 << 20, UpTo: -1})
		if err != nil || s.Size == 0 {
			b.Fatal(s, err)
		}
		s.Release()
	}
}
