package log

import (
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The benchmarks in this file write gigabytes: -short skips them, and
// TRIBUTARY_BENCH_LARGE sets the size of BenchmarkLogSize's large log
// (default 1GiB, so that `make bench` stays short; docs/PERFORMANCE.md uses
// 10GiB), TRIBUTARY_BENCH_SMALL that of its small one (default 10MiB).

const benchRecoveryBytes = 1 << 30

var benchCastagnoli = crc32.MakeTable(crc32.Castagnoli)

// BenchmarkRecovery is Open of a 1 GiB log after an unclean shutdown
// (recovery point 0, no clean-shutdown marker), which scans and checks every
// batch and rebuilds the indexes, from the page cache. References: reading
// the same .log files sequentially (1 MiB preads), and reading them plus a
// CRC-32C over every byte, the least any validating scan does.
func BenchmarkRecovery(b *testing.B) {
	if testing.Short() {
		b.Skip("writes 1 GiB; skipped in -short mode")
	}
	dir := benchDir(b)
	if free := benchFreeBytes(dir); free < benchRecoveryBytes+(2<<30) {
		b.Skipf("needs %s free in %s, has %s", benchSizeName(benchRecoveryBytes+(2<<30)), dir, benchSizeName(free))
	}
	logDir := filepath.Join(dir, "recover-0")
	l := benchOpenLog(b, logDir, Options{CleanShutdown: true})
	benchFillLog(b, l, benchRepeat(benchBatch(b, benchFetchBatch, benchValueSize), 64), benchRecoveryBytes)
	size := l.Size()
	if err := l.Close(); err != nil { // fsyncs: no writeback during the measurement
		b.Fatal(err)
	}
	logs, err := filepath.Glob(filepath.Join(logDir, "*"+logSuffix))
	if err != nil || len(logs) == 0 {
		b.Fatalf("no segments in %s: %v", logDir, err)
	}
	buf := make([]byte, 1<<20)
	readAll := func(sum bool) error {
		for _, name := range logs {
			f, err := os.Open(name)
			if err != nil {
				return err
			}
			for pos := int64(0); ; {
				n, err := f.ReadAt(buf, pos)
				if sum {
					crc32.Update(0, benchCastagnoli, buf[:n])
				}
				pos += int64(n)
				if err == io.EOF {
					break
				}
				if err != nil {
					f.Close()
					return err
				}
			}
			f.Close()
		}
		return nil
	}
	if err := readAll(false); err != nil { // warm
		b.Fatal(err)
	}

	b.Run("size="+benchSizeName(size)+"/batch=16KiB", func(b *testing.B) {
		var opened *Log
		trib := &benchSide{name: "tributary", op: func() error {
			var err error
			opened, err = Open(logDir, benchConfig(), Options{CleanShutdown: false, RecoveryPoint: 0, Logger: benchDiscardLogger()})
			if err == nil && opened.Size() != size {
				err = fmt.Errorf("recovered %d bytes of %d", opened.Size(), size)
			}
			return err
		}}
		read := &benchSide{name: "read", op: func() error { return readAll(false) }}
		readCRC := &benchSide{name: "read+crc", op: func() error { return readAll(true) }}
		closeOpened := func() error {
			if opened == nil {
				return nil
			}
			err := opened.Close()
			opened = nil
			return err
		}
		b.SetBytes(size)
		benchAlternate(b, 1, closeOpened, trib, read, readCRC)
		benchReport(b, size, false, trib, read, readCRC)
	})
}

// BenchmarkLogSize checks that appends and reads are O(1) in the size of
// the log: the same operations on a small log (TRIBUTARY_BENCH_SMALL,
// default 10MiB) and a large one (TRIBUTARY_BENCH_LARGE, default 1GiB),
// alternated; ratio is the large log's speed over the small one's. Both
// logs have Kafka's default 1 GiB segments and 16 KiB batches; the large
// log's segments are all full and the last one is still active, as just
// before a roll, and the small log is one active segment. Random reads
// pick a uniformly random offset of the whole log and Read 16 KiB from it,
// then copy the slice (random-read) or not (random-lookup).
func BenchmarkLogSize(b *testing.B) {
	if testing.Short() {
		b.Skip("writes the large log; skipped in -short mode")
	}
	largeSize := int64(1 << 30)
	if v := os.Getenv("TRIBUTARY_BENCH_LARGE"); v != "" {
		n, err := benchParseSize(v)
		if err != nil {
			b.Fatalf("TRIBUTARY_BENCH_LARGE: %v", err)
		}
		largeSize = n
	}
	smallSize := int64(10 << 20)
	if v := os.Getenv("TRIBUTARY_BENCH_SMALL"); v != "" {
		n, err := benchParseSize(v)
		if err != nil {
			b.Fatalf("TRIBUTARY_BENCH_SMALL: %v", err)
		}
		smallSize = n
	}
	dir := benchDir(b)
	if need := largeSize + smallSize + largeSize/8 + (2 << 30); benchFreeBytes(dir) < need {
		b.Skipf("needs %s free in %s, has %s; set TRIBUTARY_BENCH_LARGE lower", benchSizeName(need), dir, benchSizeName(benchFreeBytes(dir)))
	}
	batch := benchBatch(b, benchFetchBatch, benchValueSize)
	payload := benchRepeat(batch, 64)
	small := benchOpenLog(b, filepath.Join(dir, "small-0"), Options{CleanShutdown: true})
	b.Cleanup(func() { small.Close() })
	benchFillLog(b, small, payload, smallSize)
	large := benchOpenLog(b, filepath.Join(dir, "large-0"), Options{CleanShutdown: true})
	b.Cleanup(func() { large.Close() })
	t0 := time.Now()
	benchFillLog(b, large, payload, largeSize)
	built := time.Since(t0)
	t0 = time.Now()
	// Written back now rather than during the measurement.
	if err := large.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := small.Flush(); err != nil {
		b.Fatal(err)
	}
	// Printed, not logged: a parent benchmark's log shows only with -v.
	fmt.Printf("# large log: %s in %d segments, appended in %v (%.0f MB/s), fsynced in %v\n",
		benchSizeName(large.Size()), large.SegmentCount(), built.Round(time.Millisecond),
		float64(large.Size())/built.Seconds()/1e6, time.Since(t0).Round(time.Millisecond))

	buf := make([]byte, 1<<20)
	for i := range buf {
		buf[i] = 1
	}
	// One pass over both logs, so that every page is warm.
	for _, l := range []*Log{small, large} {
		for _, s := range l.segments() {
			for pos, end := int64(0), s.size.Load(); pos < end; pos += int64(len(buf)) {
				if _, err := s.log.ReadAt(buf[:min(int64(len(buf)), end-pos)], pos); err != nil {
					b.Fatal(err)
				}
			}
		}
	}

	// Reads first: the first append to the large log rolls its full last
	// segment, and the reads are meant to see it active. -count repeats
	// each sub-benchmark in place, so this order holds with it too.
	name := "small=" + benchSizeName(smallSize) + "/large=" + benchSizeName(largeSize)
	b.Run(name+"/random-read/fetch=16KiB", func(b *testing.B) {
		benchRandomRead(b, buf, large, small, true)
	})
	// Read alone: finding the batch, without copying it.
	b.Run(name+"/random-lookup", func(b *testing.B) {
		benchRandomRead(b, buf, large, small, false)
	})
	b.Run(name+"/append/batch=16KiB", func(b *testing.B) {
		benchSizeAppend(b, dir, batch, large, small)
	})
}

func benchSizeAppend(b *testing.B, dir string, batch []byte, large, small *Log) {
	appender := func(name string, l *Log) *benchSide {
		return &benchSide{name: name, op: func() error {
			_, err := l.AppendAsLeader(batch, 0)
			return err
		}}
	}
	trib, ref := appender("large", large), appender("small", small)
	largeEnd, smallEnd := large.LogEndOffset(), small.LogEndOffset()
	var grown int64
	truncate := func() error {
		grown = 0
		if err := large.TruncateTo(largeEnd); err != nil {
			return err
		}
		return small.TruncateTo(smallEnd)
	}
	perChunk := benchChunk / len(batch)
	between := func() error {
		if grown += int64(perChunk * len(batch)); grown >= benchGeneration {
			return truncate()
		}
		return nil
	}
	work := min(int64(b.N)*int64(len(batch)), benchGeneration)
	benchWarmUp(b, dir, 2*work)
	for i := int64(0); i < work; i += int64(len(batch)) {
		if err := trib.op(); err != nil {
			b.Fatal(err)
		}
		if err := ref.op(); err != nil {
			b.Fatal(err)
		}
	}
	if err := truncate(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(batch)))
	benchAlternate(b, perChunk, between, trib, ref)
	if err := truncate(); err != nil {
		b.Fatal(err)
	}
	benchReport(b, int64(len(batch)), false, trib, ref)
}

// benchRandomRead reads at random offsets of both logs: Read, then, when
// withCopy is set, ReadAt of the slice into buf. With it, two more sides pread
// 16 KiB at random batch positions of each log's files: the physical
// reference, which slows down on the large log too, as its pages are spread
// over far more memory than the caches hold; "pread-ratio" is its large/small
// speed ratio, to hold "ratio" against.
func benchRandomRead(b *testing.B, buf []byte, large, small *Log, withCopy bool) {
	const fetch = benchFetchBatch
	rng := rand.New(rand.NewPCG(1, 2))
	us := make([]float64, 1<<16)
	for i := range us {
		us[i] = rng.Float64()
	}
	reader := func(name string, l *Log) *benchSide {
		i, start, end := 0, l.LogStartOffset(), l.LogEndOffset()
		return &benchSide{name: name, op: func() error {
			off := start + int64(us[i%len(us)]*float64(end-start))
			i++
			s, err := l.Read(off, ReadOptions{MaxBytes: fetch, MinOneBatch: true, UpTo: -1})
			if err != nil {
				return err
			}
			defer s.Release()
			if s.Size != fetch {
				return fmt.Errorf("read at %d: %d bytes, want %d", off, s.Size, fetch)
			}
			if withCopy {
				_, err = s.File.ReadAt(buf[:s.Size], s.Pos)
			}
			return err
		}}
	}
	preader := func(name string, l *Log) *benchSide {
		segs := l.segments()
		var ends []int64 // cumulative sizes
		var total int64
		for _, s := range segs {
			total += s.size.Load()
			ends = append(ends, total)
		}
		i := 0
		return &benchSide{name: name, op: func() error {
			at := int64(us[i%len(us)] * float64(total))
			i++
			k := sort.Search(len(ends), func(k int) bool { return ends[k] > at })
			pos := (at - (ends[k] - segs[k].size.Load())) / fetch * fetch
			_, err := segs[k].log.ReadAt(buf[:fetch], pos)
			return err
		}}
	}
	sides := []*benchSide{reader("large", large), reader("small", small)}
	if withCopy {
		sides = append(sides, preader("pread-large", large), preader("pread-small", small))
	}
	benchAlternate(b, 256, nil, sides...)
	benchReport(b, 0, false, sides...)
	if withCopy {
		b.ReportMetric(sides[3].nsPerOp()/sides[2].nsPerOp(), "pread-ratio")
	}
}

// benchParseSize reads 10GiB, 512MiB, 64KiB or a number of bytes.
func benchParseSize(s string) (int64, error) {
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q: want a size such as 10GiB or 512MiB", s)
	}
	return n * mult, nil
}
