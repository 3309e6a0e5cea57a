package tier_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testhdfs"
)

// BenchmarkConsumeRemoteVsLocal measures a franz-go consumer reading the
// part of a topic that only HDFS holds against the part on the broker's
// disk, in one broker and one real HDFS on this machine. 48 MiB of 1 KiB
// incompressible records in 1 MiB segments, 8 MiB kept locally; the remote
// read cache is 8 MiB, so that every pass reads HDFS again.
//
//	go test -run '^$' -bench ConsumeRemoteVsLocal -benchtime 3x ./broker/tier/
func BenchmarkConsumeRemoteVsLocal(b *testing.B) {
	hd := testhdfs.Get(b)
	uri := "hdfs://" + hd.NameNode + testhdfs.Dir(b)
	br := testbroker.Start(b,
		"remote.log.storage.system.enable=true",
		"rsm.config.storage.uri="+uri,
		"rsm.config.storage.hdfs.user="+hd.User,
		"rsm.config.fetch.chunk.cache.size=8388608",
		"remote.log.manager.task.interval.ms=200",
		"log.retention.check.interval.ms=200",
		"log.segment.delete.delay.ms=0",
	)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const topic = "bench"
	cl, err := kgo.NewClient(kgo.SeedBrokers(br.Addr()), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"remote.storage.enable": ptr("true"), "segment.bytes": ptr("1048576"), "local.retention.bytes": ptr("8388608"),
	}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		b.Fatal(err)
	}
	const n, size = 48 << 10, 1 << 10
	recs := make([]*kgo.Record, 0, 4096)
	for i := 0; i < n; i++ {
		v := make([]byte, size)
		rand.Read(v)
		recs = append(recs, &kgo.Record{Value: v})
		if len(recs) == cap(recs) || i == n-1 {
			if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				b.Fatal(err)
			}
			recs = recs[:0]
		}
	}
	var localStart int64
	for {
		res, err := adm.ListLocalLogStartOffsets(ctx, topic)
		if err != nil {
			b.Fatal(err)
		}
		o, _ := res.Lookup(topic, 0)
		if localStart = o.Offset; localStart >= n-10<<10 {
			break
		}
		select {
		case <-ctx.Done():
			b.Fatalf("local log start %d after 5 minutes", localStart)
		case <-time.After(200 * time.Millisecond):
		}
	}
	consume := func(b *testing.B, from, to int64) {
		b.SetBytes((to - from) * size)
		for i := 0; i < b.N; i++ {
			c, err := kgo.NewClient(kgo.SeedBrokers(br.Addr()),
				kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(from)}}))
			if err != nil {
				b.Fatal(err)
			}
			for next := from; next < to; {
				fs := c.PollFetches(ctx)
				if ctx.Err() != nil {
					b.Fatal(ctx.Err())
				}
				fs.EachRecord(func(r *kgo.Record) { next = r.Offset + 1 })
			}
			c.Close()
		}
	}
	b.Run("remote", func(b *testing.B) { consume(b, 0, localStart) })
	b.Run("local", func(b *testing.B) { consume(b, localStart, n) })
}
