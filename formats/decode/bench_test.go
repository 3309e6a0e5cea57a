package decode

import (
	"encoding/json"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/valyala/fastjson"

	"github.com/tributary-io/tributary/formats/schema"
)

const benchEvents = 1_000_000

var (
	benchOnce  sync.Once
	benchRecs  []Record
	benchBytes int64
)

func activityRecords() ([]Record, int64) {
	benchOnce.Do(func() {
		benchRecs = make([]Record, benchEvents)
		buf := make([]byte, 0, benchEvents*420)
		for i := range benchRecs {
			start := len(buf)
			buf = ActivityEvent(buf, i)
			benchRecs[i] = Record{Topic: "events", Offset: int64(i), Value: buf[start:len(buf):len(buf)]}
			benchBytes += int64(len(buf) - start)
		}
	})
	return benchRecs, benchBytes
}

// BenchmarkDecodeActivity decodes 1,000,000 generated activity events per
// iteration, in batches of 10,000, with Tributary's JSON decoder and, for
// comparison in the same run, with encoding/json into map[string]any and
// with fastjson's parser alone (the floor for this design).
func BenchmarkDecodeActivity(b *testing.B) {
	recs, size := activityRecords()
	const batch = 10_000
	b.Run("tributary", func(b *testing.B) {
		d, err := NewJSON(schema.Activity(), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer d.Release()
		b.SetBytes(size)
		b.ResetTimer()
		start := cpuTime()
		for range b.N {
			for i := 0; i < len(recs); i += batch {
				if errs := d.Decode(recs[i : i+batch]); errs != nil {
					b.Fatal(errs[0])
				}
				d.Flush().Release()
			}
		}
		reportRate(b, start)
	})
	b.Run("encoding_json_map", func(b *testing.B) {
		b.SetBytes(size)
		start := cpuTime()
		for range b.N {
			for i := range recs {
				var m map[string]any
				if err := json.Unmarshal(recs[i].Value, &m); err != nil {
					b.Fatal(err)
				}
			}
		}
		reportRate(b, start)
	})
	b.Run("fastjson_parse_only", func(b *testing.B) {
		var p fastjson.Parser
		b.SetBytes(size)
		start := cpuTime()
		for range b.N {
			for i := range recs {
				if _, err := p.ParseBytes(recs[i].Value); err != nil {
					b.Fatal(err)
				}
			}
		}
		reportRate(b, start)
	})
}

func TestActivityEventDeterministic(t *testing.T) {
	a, b := ActivityEvent(nil, 12345), ActivityEvent(nil, 12345)
	if string(a) != string(b) {
		t.Fatal("not deterministic")
	}
	if !json.Valid(a) || len(a) < 350 || len(a) > 450 {
		t.Fatalf("%d bytes: %s", len(a), a)
	}
	d, err := NewJSON(schema.Activity(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Release()
	if errs := d.Decode([]Record{{Value: a}}); errs != nil {
		t.Fatal(errs)
	}
	rec := d.Flush()
	defer rec.Release()
	t.Log(rowsJSON(t, rec)[0])
}

// cpuTime is the process's user+system CPU time: on a shared machine,
// events per CPU second is a steadier "per core" figure than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportRate(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(b.N)*benchEvents/b.Elapsed().Seconds(), "events/s")
	if cpu := cpuTime() - start; cpu > 0 {
		b.ReportMetric(float64(b.N)*benchEvents/cpu.Seconds(), "events/cpu-s")
	}
}
