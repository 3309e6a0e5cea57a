package log

// Storage benchmarks. Each one measures Tributary against its physical
// reference in the same run, alternating the two in short chunks so that
// both see the same page cache, the same memory and the same noise, and
// reports the reference's figures and the ratio as extra metrics:
//
//	BenchmarkAppend    AppendAsLeader vs os.File.Write of the same buffers
//	BenchmarkRead      Read + ReadAt / sendfile / read+write vs the same from the file
//	BenchmarkRecovery  Open after an unclean shutdown vs reading the files
//	BenchmarkLogSize   appends and random reads on a 10 MiB vs a large log
//
// The last two are in bench_large_test.go, which says how to size or skip
// them. The data lives in $TRIBUTARY_BENCH_DIR, or ./tributary-data/bench at
// the root of the repository (git-ignored), never in os.TempDir, which may be
// a tmpfs; everything a benchmark writes is removed when it ends.
// docs/PERFORMANCE.md has the numbers and the command that produced them;
// scripts/bench-storage.sh reruns them.
//
// Metrics: ns/op and MB/s are Tributary's; "<ref>-MB/s" or "<ref>-ns/op" are
// the reference's. "ratio" is Tributary's speed over the reference's in wall
// time (1.0: as fast; below: slower). "cpu-ratio" is the same in CPU time of
// the benchmark's thread (clock_gettime(CLOCK_THREAD_CPUTIME_ID)), which
// other processes competing for the CPUs disturb much less than wall time:
// on a busy machine it is the steadier estimate of the software's cost.
// "cpu-ms/GB" is the CPU time of the thread that did the work per 10^9
// bytes, and "proc-cpu-ms/GB" that of the whole process (getrusage
// RUSAGE_SELF), which includes the reader at the other end of a loopback
// connection.

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/tributary-io/tributary/broker/record"
)

const (
	// benchValueSize is the value of every record: 1000 bytes, as in the
	// common kafka-producer-perf-test runs (--record-size 1000).
	benchValueSize = 1000
	// benchChunk is how many bytes each side moves before the other takes
	// its turn: small, so that both sides share every slow or busy moment
	// of the machine, yet long against the ~25µs that the timer's
	// Stop/StartTimer pair costs between turns.
	benchChunk = 2 << 20
	// benchGeneration is how much a write benchmark lets each side grow
	// before truncating it back. Freed page cache is reused at once, so the
	// pages stay warm (see benchWarmUp), and dirty pages stay far below the
	// kernel's writeback thresholds: the benchmarks measure the software
	// path into the page cache, the same one the reference takes.
	benchGeneration = 256 << 20
)

var benchRootOnce sync.Once

// benchDir makes a fresh directory for one benchmark under the bench root
// and removes it when the benchmark ends.
func benchDir(b *testing.B) string {
	root := os.Getenv("TRIBUTARY_BENCH_DIR")
	if root == "" {
		root = filepath.Join(benchRepoRoot(b), "tributary-data", "bench")
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		b.Fatal(err)
	}
	dir, err := os.MkdirTemp(root, "run-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			b.Errorf("removing bench data: %v", err)
		}
	})
	benchRootOnce.Do(func() {
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err == nil && st.Type == 0x01021994 { // TMPFS_MAGIC
			b.Logf("warning: %s is a tmpfs; set TRIBUTARY_BENCH_DIR to a directory on a disk", root)
		}
	})
	return dir
}

// benchRepoRoot is the directory holding go.mod, above the package directory
// that go test runs in.
func benchRepoRoot(b *testing.B) string {
	wd, err := os.Getwd()
	if err != nil {
		b.Fatal(err)
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return wd
		}
		dir = parent
	}
}

// benchFreeBytes is the space available to us on dir's file system.
func benchFreeBytes(dir string) int64 {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0
	}
	return int64(st.Bavail) * st.Bsize
}

// benchConfig is Kafka's defaults (1 GiB segments, an index entry every
// 4 KiB), with deleted segments removed at once so that truncations give
// their space back within the benchmark.
func benchConfig() Config {
	cfg := DefaultConfig()
	cfg.FileDeleteDelayMs = 0
	return cfg
}

func benchOpenLog(b *testing.B, dir string, opt Options) *Log {
	opt.Logger = benchDiscardLogger()
	l, err := Open(dir, benchConfig(), opt)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

func benchDiscardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// benchBatch is one uncompressed producer batch of exactly size bytes, of
// records with valueSize-byte values (the last one adjusted to hit size) and
// incompressible contents.
func benchBatch(b testing.TB, size, valueSize int) []byte {
	const key = "key-00000000"
	n := max(1, (size-record.HeaderSize)/(valueSize+len(key)+12))
	last := valueSize
	rng := rand.New(rand.NewPCG(uint64(size), uint64(valueSize)))
	values := make([]byte, n*valueSize+size)
	for i := range values {
		values[i] = byte(rng.Uint32())
	}
	opts := record.DefaultBuildOptions()
	opts.BaseTimestamp = time.Now().UnixMilli()
	for range 8 {
		kvs := make([]record.KV, n)
		for i := range kvs {
			v := valueSize
			if i == n-1 {
				v = last
			}
			kvs[i] = record.KV{Key: []byte(key), Value: values[i*valueSize : i*valueSize+v]}
		}
		batch, err := record.Build(opts, record.NewRecords(kvs...))
		if err != nil {
			b.Fatal(err)
		}
		if len(batch) == size {
			return batch
		}
		last += size - len(batch)
		if last < 0 {
			b.Fatalf("cannot build a %d-byte batch of %d-byte values", size, valueSize)
		}
	}
	b.Fatalf("cannot build a batch of exactly %d bytes", size)
	return nil
}

// benchRepeat is count copies of batch back to back: one AppendAsLeader call
// that appends count batches, to build big logs quickly.
func benchRepeat(batch []byte, count int) []byte {
	out := make([]byte, 0, len(batch)*count)
	for range count {
		out = append(out, batch...)
	}
	return out
}

// benchFillLog appends payload (whole batches) until the log holds at least
// size bytes.
func benchFillLog(b *testing.B, l *Log, payload []byte, size int64) {
	for l.Size() < size {
		if _, err := l.AppendAsLeader(payload, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// benchWarmUp writes n bytes to a scratch file in dir and deletes it. This
// machine is a VM whose free memory is handed back to the host after about
// two seconds idle; the first touch of such a page costs a fault on the host
// and writes into fresh page cache run at a tenth of their speed. Pages freed
// just before a measurement are reused first, so this makes the page cache a
// benchmark is about to fill warm for whichever side gets it.
func benchWarmUp(b *testing.B, dir string, n int64) {
	f, err := os.Create(filepath.Join(dir, "warmup"))
	if err != nil {
		b.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	for i := int64(0); i < n; i += int64(len(buf)) {
		if _, err := f.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	f.Close()
	os.Remove(f.Name())
}

// benchSide is one contender of an alternating measurement.
type benchSide struct {
	name string
	op   func() error // one operation
	ops  int
	wall time.Duration
	cpu  time.Duration // CPU time of the benchmark's thread
	proc time.Duration // CPU time of the process: with the TCP sink's reader
}

func (s *benchSide) nsPerOp() float64 { return float64(s.wall.Nanoseconds()) / float64(s.ops) }

// benchAlternate runs b.N operations of every side, in rounds of chunk
// operations per side, rotating which side goes first. sides[0] is
// Tributary: only its operations run under the benchmark timer, so ns/op,
// MB/s and allocs/op are its own. between runs untimed after every round
// (truncations). The goroutine is locked to its thread so that the thread's
// CPU time is the work's.
func benchAlternate(b *testing.B, chunk int, between func() error, sides ...*benchSide) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	chunk = max(chunk, 1)
	b.ResetTimer()
	b.StopTimer()
	for done, round := 0, 0; done < b.N; round++ {
		n := min(chunk, b.N-done)
		for k := range sides {
			s := sides[(k+round)%len(sides)]
			if s == sides[0] {
				b.StartTimer()
			}
			p0, c0, t0 := benchProcessCPU(), benchThreadCPU(), time.Now()
			for range n {
				if err := s.op(); err != nil {
					b.Fatalf("%s: %v", s.name, err)
				}
			}
			s.wall += time.Since(t0)
			s.cpu += benchThreadCPU() - c0
			s.proc += benchProcessCPU() - p0
			s.ops += n
			if s == sides[0] {
				b.StopTimer()
			}
		}
		done += n
		if between != nil {
			if err := between(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// benchReport adds the references' figures and the ratios. bytesPerOp > 0
// reports throughput, otherwise latency; cpu adds CPU time per GB, of the
// benchmark's thread and of the whole process.
func benchReport(b *testing.B, bytesPerOp int64, cpu bool, sides ...*benchSide) {
	subj := sides[0]
	for i, s := range sides {
		name := s.name + "-"
		if i == 0 {
			name = ""
		} else if bytesPerOp > 0 {
			b.ReportMetric(float64(bytesPerOp)*1e3/s.nsPerOp(), name+"MB/s")
		} else {
			b.ReportMetric(s.nsPerOp(), name+"ns/op")
		}
		if cpu {
			gb := float64(bytesPerOp) * float64(s.ops) / 1e9
			b.ReportMetric(float64(s.cpu)/1e6/gb, name+"cpu-ms/GB")
			b.ReportMetric(float64(s.proc)/1e6/gb, name+"proc-cpu-ms/GB")
		}
		switch {
		case i == 1:
			b.ReportMetric(s.nsPerOp()/subj.nsPerOp(), "ratio")
			b.ReportMetric(float64(s.cpu)/float64(s.ops)/(float64(subj.cpu)/float64(subj.ops)), "cpu-ratio")
		case i > 1:
			b.ReportMetric(s.nsPerOp()/subj.nsPerOp(), "ratio-vs-"+s.name)
		}
	}
}

// benchProcessCPU is the user and system time of the process, threads that
// are not running rounded to the scheduler's last tick.
func benchProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchThreadCPU is the CPU time of the calling thread, exact to the
// nanosecond: clock_gettime(CLOCK_THREAD_CPUTIME_ID). getrusage(RUSAGE_THREAD)
// would not do: it leaves out the running thread's time since the last
// scheduler tick, which is all of a short chunk's.
func benchThreadCPU() time.Duration {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	if _, _, errno := syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); errno != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}

// BenchmarkAppend is AppendAsLeader of one producer batch per call, against
// os.File.Write of the same buffer to a file in the same directory.
func BenchmarkAppend(b *testing.B) {
	for _, c := range []struct {
		name         string
		batch, value int
	}{
		{"batch=1KiB", 1 << 10, benchValueSize},
		{"batch=16KiB", 16 << 10, benchValueSize},
		{"batch=1MiB", 1 << 20, benchValueSize},
		// Small records: the cost of walking record framing in Validate.
		{"batch=16KiB/value=100B", 16 << 10, 100},
	} {
		b.Run(c.name, func(b *testing.B) { benchAppend(b, c.batch, c.value) })
	}
}

func benchAppend(b *testing.B, size, valueSize int) {
	dir := benchDir(b)
	batch := benchBatch(b, size, valueSize)
	l := benchOpenLog(b, filepath.Join(dir, "bench-0"), Options{CleanShutdown: true})
	plain, err := os.Create(filepath.Join(dir, "plain"))
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		// Emptied first, so that closing fsyncs nothing.
		if err := errors.Join(l.TruncateTo(0), plain.Truncate(0), l.Close(), plain.Close()); err != nil {
			b.Error(err)
		}
	}()

	trib := &benchSide{name: "tributary", op: func() error {
		_, err := l.AppendAsLeader(batch, 0)
		return err
	}}
	ref := &benchSide{name: "plain", op: func() error {
		_, err := plain.Write(batch)
		return err
	}}
	var grown int64
	truncate := func() error {
		grown = 0
		if err := l.TruncateTo(0); err != nil {
			return err
		}
		if err := plain.Truncate(0); err != nil {
			return err
		}
		if _, err := plain.Seek(0, io.SeekStart); err != nil {
			return err
		}
		// The first append after a truncation writes the leader-epoch
		// checkpoint; keep that out of the measurement.
		_, err := l.AppendAsLeader(batch, 0)
		return err
	}
	perChunk := max(1, benchChunk/size)
	between := func() error {
		grown += int64(perChunk * size)
		if grown >= benchGeneration {
			return truncate()
		}
		return nil
	}
	// Warm the pages this run will use, then fill one generation of each
	// side untimed: the measured writes go into recycled, warm page cache.
	work := min(int64(b.N)*int64(size), benchGeneration)
	benchWarmUp(b, dir, 2*work)
	for i := int64(0); i < work; i += int64(size) {
		if err := errors.Join(trib.op(), ref.op()); err != nil {
			b.Fatal(err)
		}
	}
	if err := truncate(); err != nil {
		b.Fatal(err)
	}

	b.SetBytes(int64(size))
	benchAlternate(b, perChunk, between, trib, ref)
	benchReport(b, int64(size), false, trib, ref)
}

// benchSizeName names a size the way the benchmark names do: 16KiB, 1MiB.
func benchSizeName(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}
