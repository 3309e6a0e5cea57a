package loader_test

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"testing"
	"time"

	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/tributary-io/tributary/formats/decode"
	"github.com/tributary-io/tributary/formats/parquet"
	"github.com/tributary-io/tributary/formats/schema"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testhdfs"
)

// benchEvents is how many activity events the load benchmark moves.
const benchEvents = 500_000

// BenchmarkLoad measures the loader from the broker into Parquet on HDFS
// with 1, 2 and 4 workers, next to the formats-only rate of the same events
// (JSON → Arrow → Parquet into io.Discard, one goroutine) measured in the
// same run: the gap is the cost of fetching and of HDFS. Run it with
// -benchtime 1x; every sub-benchmark moves all the events once.
//
//	go test -run '^$' -bench BenchmarkLoad -benchtime 1x ./loader
func BenchmarkLoad(b *testing.B) {
	br := testbroker.Start(b)
	nn := testhdfs.Get(b)
	var in bytes.Buffer
	var line []byte
	var jsonBytes int64
	for i := range benchEvents {
		line = decode.ActivityEvent(line[:0], i)
		jsonBytes += int64(len(line))
		in.Write(line)
		in.WriteByte('\n')
	}
	bin := testbroker.Binary(b)
	if out, err := exec.Command(bin, "topic", "create", "bench", "-b", br.Addr(), "-p", "4").CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	cmd := exec.Command(bin, "produce", "bench", "-b", br.Addr(), "--compression", "lz4")
	cmd.Stdin = bytes.NewReader(in.Bytes())
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("produce: %v: %s", err, out)
	}
	mb := float64(jsonBytes) / 1e6

	var formatsRate float64
	b.Run("formats-only", func(b *testing.B) {
		s := schema.Activity()
		dec, err := decode.NewJSON(s, memory.DefaultAllocator)
		if err != nil {
			b.Fatal(err)
		}
		recs := make([]decode.Record, 0, 4096)
		lines := bytes.Split(bytes.TrimSpace(in.Bytes()), []byte("\n"))
		b.ResetTimer()
		start := time.Now()
		w, err := parquet.NewWriter(io.Discard, dec.Schema(), parquet.Options{})
		if err != nil {
			b.Fatal(err)
		}
		for i, l := range lines {
			recs = append(recs, decode.Record{Topic: "bench", Offset: int64(i), Value: l})
			if len(recs) == cap(recs) || i == len(lines)-1 {
				if errs := dec.Decode(recs); len(errs) > 0 {
					b.Fatal(errs[0])
				}
				rec := dec.Flush()
				if err := w.Write(rec); err != nil {
					b.Fatal(err)
				}
				rec.Release()
				recs = recs[:0]
			}
		}
		if _, err := w.Close(); err != nil {
			b.Fatal(err)
		}
		secs := time.Since(start).Seconds()
		formatsRate = float64(len(lines)) / secs
		b.ReportMetric(formatsRate, "records/s")
		b.ReportMetric(mb/secs, "MB/s")
	})

	for _, workers := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("hdfs/workers=%d", workers), func(b *testing.B) {
			target := fmt.Sprintf("hdfs://%s%s", nn.NameNode, testhdfs.Dir(b))
			start := time.Now()
			out, err := exec.Command(bin, "load", "run", "-b", br.Addr(), "--topics", "bench", "--schema", activitySchema,
				"--time-field", "timestamp", "--target", target, "--hdfs-user", nn.User,
				"--parallelism", fmt.Sprint(workers), "--max-records-per-unit", "50000").CombinedOutput()
			if err != nil {
				b.Fatalf("load: %v\n%s", err, out)
			}
			secs := time.Since(start).Seconds()
			rate := benchEvents / secs
			b.ReportMetric(rate, "records/s")
			b.ReportMetric(mb/secs, "MB/s")
			if formatsRate > 0 {
				b.ReportMetric(rate/formatsRate, "x-formats-only")
			}
		})
	}
}
