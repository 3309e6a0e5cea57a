package loader

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tributary-io/tributary/formats/decode"
	"github.com/tributary-io/tributary/formats/parquet"
	"github.com/tributary-io/tributary/internal/fsys"
)

// BenchmarkGroupWriter measures splitting decoded activity events by
// hour alone and by hour, type and event (--partition-by), writing the
// Parquet files to a local disk: the cost identity partitioning adds to a
// unit.
//
//	go test -run '^$' -bench BenchmarkGroupWriter ./loader
func BenchmarkGroupWriter(b *testing.B) {
	text, err := os.ReadFile(filepath.Join("..", "formats", "schema", "activity.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	p := &Plan{Run: "bench", Settings: Settings{Format: FormatJSON, TableFormat: TableIceberg}, Schemas: map[string]string{"t": string(text)}}
	const n = 20_000
	recs := make([]decode.Record, n)
	for i := range recs {
		recs[i] = decode.Record{Topic: "t", Offset: int64(i), Value: decode.ActivityEvent(nil, i), Timestamp: 1714521600000}
	}
	for _, cols := range [][]string{nil, {"type", "event"}} {
		name := "hour"
		if cols != nil {
			name = "hour+type+event"
		}
		b.Run(name, func(b *testing.B) {
			fs, err := fsys.Open(b.TempDir(), fsys.Options{})
			if err != nil {
				b.Fatal(err)
			}
			for range b.N {
				dec, err := newDecoder(p, "t")
				if err != nil {
					b.Fatal(err)
				}
				schema := tableSchema(p, "t", outputSchema(dec, false))
				hw := &hourWriters{fs: fs, dir: "s", topic: "t", schema: schema,
					opts: parquet.Options{RowGroupBytes: 64 << 20}, target: 256 << 20, maxMemory: 512 << 20, loc: time.UTC, open: map[writerKey]*hourFile{}}
				gw := &groupWriter{hw: hw, loc: time.UTC, cols: cols}
				for lo := 0; lo < n; lo += 2000 {
					batch := recs[lo : lo+2000]
					failed := dec.Decode(batch)
					rec := dec.Flush()
					offsets, stamps := goodRows(batch, failed)
					times, err := eventTimes(rec, "timestamp", stamps)
					if err != nil {
						b.Fatal(err)
					}
					rec = withEventTime(withSource(rec, 0, offsets), times, schema)
					if err := gw.write(rec, offsets, times); err != nil {
						b.Fatal(err)
					}
					rec.Release()
				}
				if _, err := hw.close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}
