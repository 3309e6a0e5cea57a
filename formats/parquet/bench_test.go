package parquet

// Benchmarks (make bench): the same 1,000,000 deterministic activity events
// written by (b) arrow v15 pqarrow through Writer from ready Arrow batches,
// (c) xitongsys/parquet-go from ready structs, (d) parquet-go/parquet-go
// from ready structs, per codec; then the peak heap of Writer producing a
// 2 GiB file. TRIBUTARY_BENCH_EVENTS and TRIBUTARY_BENCH_HEAP_BYTES scale
// them down. (a), JSON → Arrow → Parquet end to end, belongs with the JSON
// decoder (formats/decode).
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

// benchData are the events of the writer benchmarks in each writer's form.
type benchData struct {
	events  []event
	batches []arrow.Record
	xs      []eventX
	ps      []eventP
	jsonB   float64 // mean JSON size of an event
}

var (
	benchOnce sync.Once
	bench     *benchData
)

func loadBenchData(b *testing.B) *benchData {
	benchOnce.Do(func() {
		n := int(envInt("TRIBUTARY_BENCH_EVENTS", 1_000_000))
		d := &benchData{events: make([]event, n), xs: make([]eventX, n), ps: make([]eventP, n)}
		g := newEventGen(1)
		var jsonBytes int
		for i := range d.events {
			e := g.next()
			d.events[i], d.xs[i], d.ps[i] = e, eventX(e), eventP(e)
			if i < 10000 {
				jsonBytes += jsonSize(e)
			}
		}
		d.jsonB = float64(jsonBytes) / float64(min(n, 10000))
		for i := 0; i < n; i += benchBatch {
			d.batches = append(d.batches, eventBatch(memory.DefaultAllocator, d.events[i:min(i+benchBatch, n)]))
		}
		bench = d
	})
	fmt.Printf("formats/parquet: %d activity events, %.0f bytes of JSON each on average, %d Arrow batches\n",
		len(bench.events), bench.jsonB, len(bench.batches))
	return bench
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

// run measures write(out) writing all events b.N times.
func run(b *testing.B, d *benchData, write func(io.Writer) error) result {
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
	events := float64(len(d.events) * b.N)
	r := result{events / wall.Seconds(), events / cpu.Seconds(), float64(out.n) / float64(len(d.events))}
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
	results := map[string]result{}
	for _, c := range Codecs {
		b.Run("b-pqarrow/"+string(c), func(b *testing.B) {
			results["b/"+string(c)] = run(b, d, func(out io.Writer) error {
				w, err := NewWriter(out, eventSchema, Options{Codec: c})
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
			})
		})
		// The same, with dictionaries only where (c) and (d) have them.
		b.Run("b-pqarrow-dictcols/"+string(c), func(b *testing.B) {
			results["b2/"+string(c)] = run(b, d, func(out io.Writer) error {
				w, err := NewWriter(out, eventSchema, Options{Codec: c, DictionaryColumns: eventDictColumns,
					PageBytes: envInt("TRIBUTARY_BENCH_PAGE_BYTES", 0)})
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
			})
		})
		b.Run("c-xitongsys/"+string(c), func(b *testing.B) {
			results["c/"+string(c)] = run(b, d, func(out io.Writer) error {
				pw, err := xwriter.NewParquetWriterFromWriter(out, new(eventX), 1)
				if err != nil {
					return err
				}
				pw.CompressionType = xcodec[c]
				pw.RowGroupSize = DefaultRowGroupBytes
				pw.PageSize = DefaultPageBytes
				for i := range d.xs {
					if err := pw.Write(&d.xs[i]); err != nil {
						return err
					}
				}
				return pw.WriteStop()
			})
		})
		b.Run("d-parquet-go/"+string(c), func(b *testing.B) {
			results["d/"+string(c)] = run(b, d, func(out io.Writer) error {
				w := pgo.NewGenericWriter[eventP](out, pgo.Compression(pcodec[c]), pgo.PageBufferSize(DefaultPageBytes))
				const rowGroup = 500_000 // about 64 MiB of snappy output, as the other two
				for i := 0; i < len(d.ps); i += benchBatch {
					if _, err := w.Write(d.ps[i:min(i+benchBatch, len(d.ps))]); err != nil {
						return err
					}
					if (i+benchBatch)%rowGroup == 0 {
						if err := w.Flush(); err != nil {
							return err
						}
					}
				}
				return w.Close()
			})
		})
	}
	for _, c := range Codecs {
		rb, rb2, rc, rd := results["b/"+string(c)], results["b2/"+string(c)], results["c/"+string(c)], results["d/"+string(c)]
		if rb.evPerCPUSec == 0 || rc.evPerCPUSec == 0 || rd.evPerCPUSec == 0 {
			continue // filtered out
		}
		fmt.Printf("%-6s events/cpu-s: (b) pqarrow %.0f, dictcols %.0f, (c) xitongsys %.0f, (d) parquet-go %.0f; (d)/(b) %.2f, (d)/(b dictcols) %.2f, (b)/(c) %.2f, (b dictcols)/(c) %.2f; B/event %.1f %.1f %.1f %.1f",
			c, rb.evPerCPUSec, rb2.evPerCPUSec, rc.evPerCPUSec, rd.evPerCPUSec, rd.evPerCPUSec/rb.evPerCPUSec, rd.evPerCPUSec/rb2.evPerCPUSec,
			rb.evPerCPUSec/rc.evPerCPUSec, rb2.evPerCPUSec/rc.evPerCPUSec,
			rb.bytesPerEvent, rb2.bytesPerEvent, rc.bytesPerEvent, rd.bytesPerEvent)
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
