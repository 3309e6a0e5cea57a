package record

import (
	"fmt"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkValidate is what the broker pays per produced batch before it
// appends: a 64 KiB (uncompressed) batch of text-like values of each codec.
// Bytes are the uncompressed records, so codecs compare by what they carry.
func BenchmarkValidate(b *testing.B) {
	for _, c := range allCodecs {
		for _, value := range []int{100, 1 << 10} {
			b.Run(fmt.Sprintf("codec=%s/value=%dB", c, value), func(b *testing.B) {
				recs, raw := benchRecords(64<<10, value)
				opts := DefaultBuildOptions()
				opts.Codec = c
				batch := mustBuild(b, opts, recs)
				warmUp()
				b.SetBytes(int64(raw))
				b.ReportAllocs()
				cpu := processCPU()
				b.ResetTimer()
				for range b.N {
					if err := Validate(batch, FromClient, Limits{MaxBytes: 1 << 20}); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				// CPU time, which a loaded machine does not inflate as
				// it does the wall time of ns/op.
				b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
			})
			// The floor any validating broker pays: decompressing the
			// records whole, without looking at them.
			b.Run(fmt.Sprintf("codec=%s/value=%dB/decompress-only", c, value), func(b *testing.B) {
				recs, raw := benchRecords(64<<10, value)
				opts := DefaultBuildOptions()
				opts.Codec = c
				batch := mustBuild(b, opts, recs)
				warmUp()
				b.SetBytes(int64(raw))
				b.ReportAllocs()
				cpu := processCPU()
				b.ResetTimer()
				for range b.N {
					if _, err := Decompress(c, batch.Records()); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchRecords are about size bytes of keyed records with values that
// compress as real events do (3-5x).
func benchRecords(size, value int) ([]kmsg.Record, int) {
	n := max(1, size/(value+10))
	recs := make([]kmsg.Record, n)
	words := []string{"page_view", "click", "search", "user", "session", "/products/", "referrer", "https://example.com/", "Mozilla/5.0"}
	seed := uint32(1)
	raw := 0
	for i := range recs {
		v := make([]byte, 0, value)
		for len(v) < value {
			seed = seed*1664525 + 1013904223
			v = append(v, words[seed>>28%uint32(len(words))]...)
			v = strconv.AppendUint(v, uint64(seed>>12), 10)
			v = append(v, ' ')
		}
		recs[i] = kmsg.Record{OffsetDelta: int32(i), Key: []byte(strconv.Itoa(i % 97)), Value: v[:value]}
		raw += value + 10
	}
	return recs, raw
}
