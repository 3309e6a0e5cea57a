package spool

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"
)

func openT(t *testing.T, dir string, o Options) *Spool {
	t.Helper()
	s, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func payload(i int) []byte { return []byte(fmt.Sprintf("event-%06d", i)) }

// readAll reads every readable entry without waiting.
func readAll(t *testing.T, s *Spool) []Entry {
	t.Helper()
	stop := make(chan struct{})
	close(stop)
	var out []Entry
	for {
		es, err := s.Next(stop, 1000, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if len(es) == 0 {
			return out
		}
		out = append(out, es...)
	}
}

func checkOrder(t *testing.T, es []Entry, from, to int) {
	t.Helper()
	if len(es) != to-from {
		t.Fatalf("read %d entries, want %d", len(es), to-from)
	}
	for i, e := range es {
		if want := payload(from + i); !bytes.Equal(e.Data, want) {
			t.Fatalf("entry %d is %q, want %q", i, e.Data, want)
		}
	}
}

func TestReplayOrderAcrossSegments(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{SegmentBytes: 1 << 10})
	for i := 0; i < 500; i++ {
		if err := s.Append(payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	if st := s.Stats(); st.Segments < 5 {
		t.Fatalf("%d segments, want several", st.Segments)
	}
	checkOrder(t, readAll(t, s), 0, 500)
	s.Close()

	// Nothing committed: a reopened spool replays all of it, in order.
	s = openT(t, dir, Options{SegmentBytes: 1 << 10})
	defer s.Close()
	es := readAll(t, s)
	checkOrder(t, es, 0, 500)
	if es[0].AppendedAt.IsZero() || time.Since(es[0].AppendedAt) > time.Minute {
		t.Fatalf("appended at %v", es[0].AppendedAt)
	}
}

func TestPositionCheckpoint(t *testing.T) {
	dir := t.TempDir()
	o := Options{SegmentBytes: 1 << 10}
	s := openT(t, dir, o)
	for i := 0; i < 300; i++ {
		if err := s.Append(payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	es := readAll(t, s)
	before := s.Stats().Segments
	if err := s.Commit(es[199].Next); err != nil {
		t.Fatal(err)
	}
	if after := s.Stats().Segments; after >= before {
		t.Fatalf("delivered segments not deleted: %d before, %d after", before, after)
	}
	// Rewind goes back to the commit, not to the start.
	s.Rewind()
	checkOrder(t, readAll(t, s), 200, 300)
	s.Close()

	s = openT(t, dir, o)
	checkOrder(t, readAll(t, s), 200, 300)
	// Commit exactly at a segment's end, then everything.
	for i := 300; i < 1000; i++ {
		if err := s.Append(payload(i)); err != nil {
			t.Fatal(err)
		}
	}
	es = readAll(t, s)
	checkOrder(t, es, 300, 1000)
	if err := s.Commit(es[len(es)-1].Next); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Segments != 1 || st.Committed != 1000 || st.Appended != 1000 {
		t.Fatalf("after committing everything: %+v", st)
	}
	s.Close()
	s = openT(t, dir, o)
	defer s.Close()
	if es := readAll(t, s); len(es) != 0 {
		t.Fatalf("replayed %d delivered entries", len(es))
	}
	if err := s.Append(payload(1000)); err != nil {
		t.Fatal(err)
	}
	checkOrder(t, readAll(t, s), 1000, 1001)
}

func lastSegment(t *testing.T, dir string) string {
	names, _ := filepath.Glob(filepath.Join(dir, "*.seg"))
	sort.Strings(names)
	return names[len(names)-1]
}

func TestTornTail(t *testing.T) {
	for _, cut := range []int{1, 5, entryHeaderSize, entryHeaderSize + 3} {
		t.Run(fmt.Sprint(cut), func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, dir, Options{})
			for i := 0; i < 10; i++ {
				s.Append(payload(i))
			}
			s.Close()
			seg := lastSegment(t, dir)
			fi, _ := os.Stat(seg)
			// A torn last entry: only part of it reached the disk.
			if err := os.Truncate(seg, fi.Size()-int64(cut)); err != nil {
				t.Fatal(err)
			}
			s = openT(t, dir, Options{})
			defer s.Close()
			r := s.Recovery()
			if r.TruncatedSegments != 1 || r.Entries != 9 || r.TruncatedBytes != int64(entryHeaderSize+len(payload(9))-cut) {
				t.Fatalf("recovery %+v", r)
			}
			checkOrder(t, readAll(t, s), 0, 9)
			// Appends continue after the cut.
			s.Append(payload(9))
			checkOrder(t, readAll(t, s), 9, 10)
		})
	}
	t.Run("garbage", func(t *testing.T) {
		dir := t.TempDir()
		s := openT(t, dir, Options{})
		s.Append(payload(0), payload(1))
		s.Close()
		f, _ := os.OpenFile(lastSegment(t, dir), os.O_APPEND|os.O_WRONLY, 0)
		f.Write(make([]byte, 100)) // a file that grew but was never written
		f.Close()
		s = openT(t, dir, Options{})
		defer s.Close()
		if r := s.Recovery(); r.TruncatedBytes != 100 || r.Entries != 2 {
			t.Fatalf("recovery %+v", r)
		}
		checkOrder(t, readAll(t, s), 0, 2)
	})
}

func TestFlippedByte(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	for i := 0; i < 10; i++ {
		s.Append(payload(i))
	}
	s.Close()
	seg := lastSegment(t, dir)
	b, _ := os.ReadFile(seg)
	entry := entryHeaderSize + len(payload(0))
	b[headerSize+6*entry+entryHeaderSize+2] ^= 0x40 // in entry 6's payload
	os.WriteFile(seg, b, 0o644)
	s = openT(t, dir, Options{})
	defer s.Close()
	if r := s.Recovery(); r.TruncatedSegments != 1 || r.Entries != 6 || r.TruncatedBytes != int64(4*entry) {
		t.Fatalf("recovery %+v", r)
	}
	checkOrder(t, readAll(t, s), 0, 6)
}

func TestTornSegmentHeader(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	s.Append(payload(0))
	s.Close()
	// A crash right after creating the next segment file.
	os.WriteFile(segmentName(dir, 1), []byte("TSP"), 0o644)
	s = openT(t, dir, Options{})
	defer s.Close()
	if r := s.Recovery(); r.TruncatedSegments != 1 || r.TruncatedBytes != 3 {
		t.Fatalf("recovery %+v", r)
	}
	s.Append(payload(1))
	checkOrder(t, readAll(t, s), 0, 2)
}

func TestCorruptPosition(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	s.Append(payload(0))
	s.Close()
	p := filepath.Join(dir, positionFile)
	b, _ := os.ReadFile(p)
	b[10] ^= 1
	os.WriteFile(p, b, 0o644)
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorruptPosition) {
		t.Fatalf("Open: %v, want ErrCorruptPosition", err)
	}
}

func TestFull(t *testing.T) {
	dir := t.TempDir()
	o := Options{SegmentBytes: 1 << 10, MaxBytes: 4 << 10}
	s := openT(t, dir, o)
	defer s.Close()
	n := 0
	var err error
	for ; n < 1000; n++ {
		if err = s.Append(payload(n)); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrSpoolFull) {
		t.Fatalf("after %d appends: %v, want ErrSpoolFull", n, err)
	}
	if st := s.Stats(); st.Bytes > o.MaxBytes {
		t.Fatalf("spool holds %d bytes, over its %d", st.Bytes, o.MaxBytes)
	}
	// Delivering frees whole segments, and appends work again.
	es := readAll(t, s)
	checkOrder(t, es, 0, n)
	if err := s.Commit(es[len(es)-1].Next); err != nil {
		t.Fatal(err)
	}
	if err := s.Append(payload(n)); err != nil {
		t.Fatalf("after delivering everything: %v", err)
	}
	checkOrder(t, readAll(t, s), n, n+1)
}

func TestNextWaitsForAppend(t *testing.T) {
	s := openT(t, t.TempDir(), Options{})
	defer s.Close()
	got := make(chan []Entry)
	go func() {
		es, _ := s.Next(nil, 10, 1<<20)
		got <- es
	}()
	time.Sleep(20 * time.Millisecond)
	s.Append(payload(0))
	select {
	case es := <-got:
		checkOrder(t, es, 0, 1)
	case <-time.After(5 * time.Second):
		t.Fatal("Next did not wake up")
	}
	// A closed stop channel ends a wait.
	stop := make(chan struct{})
	go func() { time.Sleep(20 * time.Millisecond); close(stop) }()
	if es, err := s.Next(stop, 10, 1<<20); es != nil || err != nil {
		t.Fatalf("Next after stop: %v %v", es, err)
	}
}

func TestConcurrentAppends(t *testing.T) {
	s := openT(t, t.TempDir(), Options{SegmentBytes: 64 << 10})
	defer s.Close()
	const writers, each = 16, 200
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := s.Append(payload(w*each + i)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	es := readAll(t, s)
	if len(es) != writers*each {
		t.Fatalf("read %d entries, want %d", len(es), writers*each)
	}
	seen := map[string]bool{}
	for i, e := range es {
		if e.Seq != uint64(i) || seen[string(e.Data)] {
			t.Fatalf("entry %d: seq %d, %q (seen before: %v)", i, e.Seq, e.Data, seen[string(e.Data)])
		}
		seen[string(e.Data)] = true
	}
}

// BenchmarkAppend measures entries/s into the spool, each Append fsynced,
// with 1, 16 and 128 appenders per CPU sharing fsyncs, appending one entry
// or a batch of 100 (as the collector does for /v1/batch).
func BenchmarkAppend(b *testing.B) {
	for _, c := range []struct{ par, batch int }{{1, 1}, {16, 1}, {128, 1}, {1, 100}, {16, 100}} {
		par, batch := c.par, c.batch
		b.Run(fmt.Sprintf("appenders=%dxCPU/batch=%d", par, batch), func(b *testing.B) {
			s, err := Open(b.TempDir(), Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			p := bytes.Repeat([]byte("x"), 300) // a typical enriched event
			ps := make([][]byte, batch)
			for i := range ps {
				ps[i] = p
			}
			b.SetBytes(int64(len(p) * batch))
			b.SetParallelism(par)
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := s.Append(ps...); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N*batch)/time.Since(start).Seconds(), "entries/s")
			b.ReportMetric(float64(b.N)/float64(s.Stats().Syncs), "appends/fsync")
		})
	}
}

func TestLocked(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{})
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: %v, want ErrLocked", err)
	}
	s.Close()
	openT(t, dir, Options{}).Close()
}
