package parquet

// Benchmarks (make bench): 1,000,000 generated activity events
// (decode.ActivityEvent, about 415 bytes of JSON each) measured side by
// side in one run, per codec:
//
//	a           Tributary end to end: JSON → decode.JSON → Arrow → Writer
//	a-pqarrow   the same with Options.Engine = PQArrow
//	w           Writer alone (the default engine) from ready Arrow batches
//	b           arrow v15 pqarrow (Writer with PQArrow) from ready batches
//	b-tuned     the same, dictionaries on hand-picked columns (activityDictColumns)
//	c           xitongsys/parquet-go from ready structs
//	d           parquet-go/parquet-go from ready structs
//
// All write the 52 columns of schema.Activity(). Then the peak heap of
// Writer producing a 2 GiB file of the flatter events of events_test.go.
// TRIBUTARY_BENCH_EVENTS and TRIBUTARY_BENCH_HEAP_BYTES scale them down.
//
//	go test -run '^$' -bench . -benchtime 1x ./formats/parquet

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/memory"
	pgo "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/tributary-io/tributary/formats/decode"
	"github.com/tributary-io/tributary/formats/schema"
	xparquet "github.com/xitongsys/parquet-go/parquet"
	xwriter "github.com/xitongsys/parquet-go/writer"
)

const benchBatch = 10000

func envInt(name string, def int64) int64 {
	if v, err := strconv.ParseInt(os.Getenv(name), 10, 64); err == nil && v > 0 {
		return v
	}
	return def
}

// benchData are the events of the writer benchmarks as JSON records and
// as decoded Arrow batches. The rows as Go structs, for (c) and (d), are
// built just before those run and dropped after: a heap of a million
// structs full of pointers would make the garbage collector's work, which
// counts in CPU time, weigh on every other writer.
type benchData struct {
	recs    []decode.Record
	batches []arrow.Record
	jsonB   float64 // mean JSON size of an event
}

var (
	benchOnce sync.Once
	bench     *benchData
)

func loadBenchData(b *testing.B) *benchData {
	benchOnce.Do(func() {
		n := int(envInt("TRIBUTARY_BENCH_EVENTS", 1_000_000))
		d := &benchData{recs: make([]decode.Record, n)}
		buf := make([]byte, 0, n*420)
		for i := range d.recs {
			start := len(buf)
			buf = decode.ActivityEvent(buf, i)
			d.recs[i] = decode.Record{Offset: int64(i), Value: buf[start:len(buf):len(buf)]}
		}
		d.jsonB = float64(len(buf)) / float64(n)
		dec, err := decode.NewJSON(schema.Activity(), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer dec.Release()
		for i := 0; i < n; i += benchBatch {
			if errs := dec.Decode(d.recs[i:min(i+benchBatch, n)]); errs != nil {
				b.Fatal(errs[0])
			}
			d.batches = append(d.batches, dec.Flush())
		}
		bench = d
	})
	fmt.Printf("formats/parquet: %d activity events, %.0f bytes of JSON each on average, %d Arrow batches\n",
		len(bench.recs), bench.jsonB, len(bench.batches))
	return bench
}

// structs are the events as activityP rows.
func (d *benchData) structs() []activityP {
	ps := make([]activityP, 0, len(d.recs))
	for _, rec := range d.batches {
		ps = activityRows(ps, rec)
	}
	return ps
}

// countWriter discards what it is given and counts it.
type countWriter struct{ n int64 }

func (w *countWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// result is one writer and codec's measurement.
type result struct {
	evPerSec, evPerCPUSec, bytesPerEvent float64
}

// run measures write(out) writing all events b.N times, after one
// unmeasured write: the first write of a writer in the process grows the
// heap and fills the pools of the writers that have them, and how much
// that costs depended on which writers ran before (pqarrow from ready
// batches measured 0.74M and 1.1M events per CPU second on its own and
// after the others).
func run(b *testing.B, d *benchData, write func(io.Writer) error) result {
	if err := write(&countWriter{}); err != nil {
		b.Fatal(err)
	}
	runtime.GC()
	var out countWriter
	b.ResetTimer()
	cpu0, t0 := cpuTime(), time.Now()
	for range b.N {
		out = countWriter{}
		if err := write(&out); err != nil {
			b.Fatal(err)
		}
	}
	wall, cpu := time.Since(t0), cpuTime()-cpu0
	b.StopTimer()
	events := float64(len(d.recs) * b.N)
	r := result{events / wall.Seconds(), events / cpu.Seconds(), float64(out.n) / float64(len(d.recs))}
	b.ReportMetric(r.evPerSec, "events/s")
	b.ReportMetric(r.evPerCPUSec, "events/cpu-s")
	b.ReportMetric(r.bytesPerEvent, "B/event")
	b.ReportMetric(0, "ns/op")
	return r
}

func BenchmarkWriters(b *testing.B) {
	d := loadBenchData(b)
	xcodec := map[Codec]xparquet.CompressionCodec{
		Snappy: xparquet.CompressionCodec_SNAPPY, Zstd: xparquet.CompressionCodec_ZSTD,
		Gzip: xparquet.CompressionCodec_GZIP, None: xparquet.CompressionCodec_UNCOMPRESSED,
	}
	pcodec := map[Codec]compress.Codec{Snappy: &pgo.Snappy, Zstd: &pgo.Zstd, Gzip: &pgo.Gzip, None: &pgo.Uncompressed}
	// endToEnd decodes the JSON records batch by batch and writes each
	// batch as it is decoded, as a loader worker does.
	endToEnd := func(opts Options) func(io.Writer) error {
		return func(out io.Writer) error {
			dec, err := decode.NewJSON(schema.Activity(), nil)
			if err != nil {
				return err
			}
			defer dec.Release()
			w, err := NewWriter(out, dec.Schema(), opts)
			if err != nil {
				return err
			}
			for i := 0; i < len(d.recs); i += benchBatch {
				if errs := dec.Decode(d.recs[i:min(i+benchBatch, len(d.recs))]); errs != nil {
					return errs[0]
				}
				rec := dec.Flush()
				err := w.Write(rec)
				rec.Release()
				if err != nil {
					return err
				}
			}
			_, err = w.Close()
			return err
		}
	}
	fromBatches := func(opts Options) func(io.Writer) error {
		return func(out io.Writer) error {
			w, err := NewWriter(out, d.batches[0].Schema(), opts)
			if err != nil {
				return err
			}
			for _, rec := range d.batches {
				if err := w.Write(rec); err != nil {
					return err
				}
			}
			_, err = w.Close()
			return err
		}
	}
	var (
		xs []activityX
		ps []activityP
	)
	writers := []struct {
		name    string
		prepare func() // builds the writer's input before it is measured
		write   func(c Codec) func(io.Writer) error
	}{
		{"a", nil, func(c Codec) func(io.Writer) error { return endToEnd(Options{Codec: c}) }},
		{"a-pqarrow", nil, func(c Codec) func(io.Writer) error { return endToEnd(Options{Codec: c, Engine: PQArrow}) }},
		{"w", nil, func(c Codec) func(io.Writer) error { return fromBatches(Options{Codec: c}) }},
		{"b", nil, func(c Codec) func(io.Writer) error { return fromBatches(Options{Codec: c, Engine: PQArrow}) }},
		{"b-tuned", nil, func(c Codec) func(io.Writer) error {
			return fromBatches(Options{Codec: c, Engine: PQArrow, DictionaryColumns: activityDictColumns})
		}},
		{"c", func() {
			ps := d.structs()
			xs = make([]activityX, len(ps))
			for i := range ps {
				xs[i] = activityX(ps[i])
			}
		}, func(c Codec) func(io.Writer) error {
			return func(out io.Writer) error {
				pw, err := xwriter.NewParquetWriterFromWriter(out, new(activityX), 1)
				if err != nil {
					return err
				}
				pw.CompressionType = xcodec[c]
				pw.RowGroupSize = DefaultRowGroupBytes
				pw.PageSize = DefaultArrowPageBytes
				for i := range xs {
					if err := pw.Write(&xs[i]); err != nil {
						return err
					}
				}
				return pw.WriteStop()
			}
		}},
		{"d", func() { xs, ps = nil, d.structs() }, func(c Codec) func(io.Writer) error {
			return func(out io.Writer) error {
				w := pgo.NewGenericWriter[activityP](out, pgo.Compression(pcodec[c]))
				const rowGroup = 100_000 // about the rows of Writer's 48 MiB of Arrow
				for i := 0; i < len(ps); i += benchBatch {
					if _, err := w.Write(ps[i:min(i+benchBatch, len(ps))]); err != nil {
						return err
					}
					if (i+benchBatch)%rowGroup == 0 {
						if err := w.Flush(); err != nil {
							return err
						}
					}
				}
				return w.Close()
			}
		}},
	}
	results := map[string]result{}
	for _, v := range writers {
		prepared := false
		for _, c := range Codecs {
			b.Run(v.name+"/"+string(c), func(b *testing.B) {
				if !prepared && v.prepare != nil {
					v.prepare()
					prepared = true
				}
				results[v.name+"/"+string(c)] = run(b, d, v.write(c))
			})
		}
	}
	xs, ps = nil, nil
	names := []string{"a", "a-pqarrow", "w", "b", "b-tuned", "c", "d"}
	for _, c := range Codecs {
		r := func(name string) result { return results[name+"/"+string(c)] }
		if r("a").evPerCPUSec == 0 || r("b").evPerCPUSec == 0 || r("c").evPerCPUSec == 0 || r("d").evPerCPUSec == 0 {
			continue // filtered out
		}
		best := max(r("b").evPerCPUSec, r("b-tuned").evPerCPUSec, r("c").evPerCPUSec, r("d").evPerCPUSec)
		fmt.Printf("%-6s events/cpu-s:", c)
		for _, n := range names {
			fmt.Printf(" %s %.0f,", n, r(n).evPerCPUSec)
		}
		fmt.Printf(" a/max(b,b-tuned,c,d) %.2f, a/c %.2f; B/event:", r("a").evPerCPUSec/best, r("a").evPerCPUSec/r("c").evPerCPUSec)
		for _, n := range names {
			fmt.Printf(" %s %.1f", n, r(n).bytesPerEvent)
		}
		fmt.Println()
	}
}

// BenchmarkPeakHeap writes one file of TRIBUTARY_BENCH_HEAP_BYTES (2 GiB)
// with the default options, from batches generated as it goes, and reports
// the largest heap sampled every 2 ms: heap objects (live and not yet
// swept garbage, what GOGC lets grow) and live heap as of the last GC
// (runtime/metrics), the generator's current batch included.
func BenchmarkPeakHeap(b *testing.B) {
	target := envInt("TRIBUTARY_BENCH_HEAP_BYTES", 2<<30)
	// Drop BenchmarkWriters' events (over a GiB) so that they do not
	// count, and measure what is left as the baseline.
	bench, benchOnce = nil, sync.Once{}
	runtime.GC()
	base := heapObjects()
	for range b.N {
		runtime.GC()
		var peak, peakLive atomic.Uint64
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
			tick := time.NewTicker(2 * time.Millisecond)
			defer tick.Stop()
			for {
				metrics.Read(s)
				if v := s[0].Value.Uint64(); v > peak.Load() {
					peak.Store(v)
				}
				if v := s[1].Value.Uint64(); v > peakLive.Load() {
					peakLive.Store(v)
				}
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		}()
		var out countWriter
		w, err := NewWriter(&out, eventSchema, Options{})
		if err != nil {
			b.Fatal(err)
		}
		g := newEventGen(2)
		evs := make([]event, benchBatch)
		t0 := time.Now()
		for out.n+w.Buffered() < target {
			for i := range evs {
				evs[i] = g.next()
			}
			rec := eventBatch(memory.DefaultAllocator, evs)
			if err := w.Write(rec); err != nil {
				b.Fatal(err)
			}
			rec.Release()
		}
		st, err := w.Close()
		close(stop)
		<-done
		if err != nil {
			b.Fatal(err)
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(base)/(1<<20), "baseline-heap-MiB")
		b.ReportMetric(float64(peakLive.Load())/(1<<20), "peak-live-heap-MiB")
		b.ReportMetric(float64(st.Bytes)/(1<<20), "file-MiB")
		b.ReportMetric(float64(st.Rows), "rows")
		b.ReportMetric(float64(st.RowGroups), "row-groups")
		b.ReportMetric(0, "ns/op")
		b.Logf("%s: %d rows in %d row groups, %.1f MiB, peak heap %.1f MiB, peak live heap %.1f MiB (baseline before writing %.1f MiB, HeapSys %.0f MiB), %s",
			Options{}, st.Rows, st.RowGroups, float64(st.Bytes)/(1<<20), float64(peak.Load())/(1<<20),
			float64(peakLive.Load())/(1<<20), float64(base)/(1<<20),
			float64(ms.HeapSys)/(1<<20), time.Since(t0).Round(time.Millisecond))
	}
}

func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
