package tier_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testhdfs"
)

// BenchmarkUploadVsProduce measures, on one broker and one real HDFS on
// this machine, what uploads cost producers and whether they keep up: a
// franz-go producer (acks=all, 1 KiB incompressible records, a fixed rate
// of 8 MB/s: about half of what this machine's loopback broker takes
// with tiering off) writes 96 MiB to a topic with tiering off, then to one
// with tiering on (1 MiB segments, 8 MiB kept locally, uploads checked
// every 200 ms), then with 16 MiB segments (32 MiB kept locally), then
// with tiering off again. It reports each run's produce p99 and, for the tiered
// one, the upload throughput: the bytes uploaded over the time from the
// first record to the last closed segment's upload.
//
//	go test -run '^$' -bench UploadVsProduce -benchtime 1x ./broker/tier/
func BenchmarkUploadVsProduce(b *testing.B) {
	hd := testhdfs.Get(b)
	uri := "hdfs://" + hd.NameNode + testhdfs.Dir(b)
	br := testbroker.Start(b,
		"remote.log.storage.system.enable=true",
		"rsm.config.storage.uri="+uri,
		"rsm.config.storage.hdfs.user="+hd.User,
		"remote.log.manager.task.interval.ms=200",
		"log.retention.check.interval.ms=200",
		"log.segment.delete.delay.ms=0",
	)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	fs, err := fsys.Open(uri, fsys.Options{User: hd.User})
	if err != nil {
		b.Fatal(err)
	}
	defer fs.Close()
	const size, total, rate = 1 << 10, 96 << 20, 8 << 20
	run := func(b *testing.B, topic string, tiered bool, segment int64) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addr()), kgo.DefaultProduceTopic(topic),
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(time.Millisecond))
		if err != nil {
			b.Fatal(err)
		}
		defer cl.Close()
		cfg := map[string]*string{"segment.bytes": ptr(fmt.Sprint(segment))}
		if tiered {
			cfg["remote.storage.enable"], cfg["local.retention.bytes"] = ptr("true"), ptr(fmt.Sprint(max(8<<20, 2*segment)))
		}
		resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, cfg, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			b.Fatal(err)
		}
		value := make([]byte, size)
		rand.Read(value)
		var (
			mu   sync.Mutex
			lats []time.Duration
			wg   sync.WaitGroup
		)
		start := time.Now()
		n := total / size
		for i := 0; i < n; i++ {
			// Paced: record i leaves at i*size/rate.
			if d := time.Until(start.Add(time.Duration(i) * time.Second * size / rate)); d > 0 {
				time.Sleep(d)
			}
			v := append([]byte(nil), value...)
			v[0], v[1], v[2] = byte(i), byte(i>>8), byte(i>>16)
			sent := time.Now()
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Value: v}, func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err != nil {
					b.Error(err)
				}
				mu.Lock()
				lats = append(lats, time.Since(sent))
				mu.Unlock()
			})
		}
		wg.Wait()
		produced := time.Since(start)
		sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
		p := func(q float64) float64 { return float64(lats[int(q*float64(len(lats)-1))].Microseconds()) / 1000 }
		b.ReportMetric(float64(total)/produced.Seconds()/1e6, "produce-MB/s")
		b.ReportMetric(p(0.5), "p50-ms")
		b.ReportMetric(p(0.99), "p99-ms")
		b.ReportMetric(p(0.999), "p99.9-ms")
		if !tiered {
			return
		}
		// Uploads: everything but the active segment (the last MiB).
		var dir string
		for dir == "" {
			ents, _ := fs.ReadDir(".")
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), topic+"-") {
					dir = e.Name() + "/0"
				}
			}
		}
		var remote int64
		for {
			m := readManifest(b, fs, dir)
			if m != nil && int64(n)-m.UploadedEnd() < 2*segment/size {
				remote = m.Size()
				break
			}
			if ctx.Err() != nil {
				b.Fatalf("uploads did not catch up: %v", ctx.Err())
			}
			time.Sleep(50 * time.Millisecond)
		}
		caught := time.Since(start)
		b.ReportMetric(float64(remote)/caught.Seconds()/1e6, "upload-MB/s")
		b.ReportMetric((caught - produced).Seconds(), "upload-lag-s")
	}
	for i := 0; i < b.N; i++ {
		b.Run("tiering-off", func(b *testing.B) { run(b, fmt.Sprintf("plain-%d", i), false, 1<<20) })
		b.Run("tiering-on/segment=1MiB", func(b *testing.B) { run(b, fmt.Sprintf("tiered-%d", i), true, 1<<20) })
		b.Run("tiering-on/segment=16MiB", func(b *testing.B) { run(b, fmt.Sprintf("tiered16-%d", i), true, 16<<20) })
		// Again at the end: the first run follows the broker's and
		// HDFS's start, and pays for their warm-up.
		b.Run("tiering-off-again", func(b *testing.B) { run(b, fmt.Sprintf("plain-again-%d", i), false, 1<<20) })
	}
}
