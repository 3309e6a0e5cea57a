package loader_test

import (
	"bytes"
	"fmt"
	"os/exec"
	"sort"
	"testing"
	"time"

	"github.com/tributary-io/tributary/formats/decode"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testhdfs"
)

// tableBenchEvents is how many activity events BenchmarkLoadTableFormat
// loads per run.
const tableBenchEvents = 200_000

// BenchmarkLoadTableFormat measures end-to-end events/s of `load run` from
// the broker into an Iceberg table against plain Parquet (issue 24's
// target: at least 90% of the plain rate), on the same topic, on local
// disk and on the test HDFS. The two formats alternate, three runs each
// into fresh targets, so that the load of a shared machine falls on both;
// it reports the median rates and their ratio. A third format, iceberg
// with --partition-by type,event (15 combinations of values, rows
// interleaved, so split with Arrow's Take), measures identity partitioning
// against the hour alone.
//
//	go test -run '^$' -bench BenchmarkLoadTableFormat -benchtime 1x ./loader
func BenchmarkLoadTableFormat(b *testing.B) {
	br := testbroker.Start(b)
	bin := testbroker.Binary(b)
	var in bytes.Buffer
	var line []byte
	for i := range tableBenchEvents {
		line = decode.ActivityEvent(line[:0], i)
		in.Write(line)
		in.WriteByte('\n')
	}
	if out, err := exec.Command(bin, "topic", "create", "bench", "-b", br.Addr(), "-p", "4").CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	cmd := exec.Command(bin, "produce", "bench", "-b", br.Addr(), "--compression", "lz4")
	cmd.Stdin = bytes.NewReader(in.Bytes())
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("produce: %v: %s", err, out)
	}

	for _, where := range []string{"file", "hdfs"} {
		b.Run(where, func(b *testing.B) {
			var target func() string
			var extra []string
			if where == "file" {
				target = func() string { return "file://" + b.TempDir() }
			} else {
				nn := testhdfs.Get(b)
				target = func() string { return fmt.Sprintf("hdfs://%s%s", nn.NameNode, testhdfs.Dir(b)) }
				extra = []string{"--hdfs-user", nn.User}
			}
			rates := map[string][]float64{}
			for round := range 3 {
				for _, format := range []string{"parquet", "iceberg", "identity"} {
					tableFormat, more := format, extra
					if format == "identity" {
						tableFormat, more = "iceberg", append([]string{"--partition-by", "type,event"}, extra...)
					}
					args := append([]string{"load", "run", "-b", br.Addr(), "--topics", "bench", "--schema", activitySchema,
						"--time-field", "timestamp", "--target", target(), "--table-format", tableFormat,
						"--parallelism", "2", "--max-records-per-unit", "50000"}, more...)
					start := time.Now()
					if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
						b.Fatalf("load %s: %v\n%s", format, err, out)
					}
					rate := tableBenchEvents / time.Since(start).Seconds()
					rates[format] = append(rates[format], rate)
					b.Logf("round %d %s: %.0f events/s", round, format, rate)
				}
			}
			median := func(xs []float64) float64 {
				sort.Float64s(xs)
				return xs[len(xs)/2]
			}
			p, i, id := median(rates["parquet"]), median(rates["iceberg"]), median(rates["identity"])
			b.ReportMetric(p, "parquet-events/s")
			b.ReportMetric(i, "iceberg-events/s")
			b.ReportMetric(i/p, "iceberg/parquet")
			b.ReportMetric(id, "identity-events/s")
			b.ReportMetric(id/i, "identity/iceberg")
		})
	}
}
