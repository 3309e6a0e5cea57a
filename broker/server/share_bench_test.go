package server

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BenchmarkShareGroup measures share-group throughput: n franz-go share
// consumers of a fresh group take and accept every record of a 1-partition
// topic of 20,000 100-byte records (docs/PERFORMANCE.md).
//
//	go test -run XXX -bench BenchmarkShareGroup -benchtime 1x ./broker/server/
func BenchmarkShareGroup(b *testing.B) {
	// The helpers take a *testing.T; the broker lives until the
	// benchmark process ends.
	t := &testing.T{}
	s := startAdminBroker(t, nil)
	const topic, n = "bench-share", 20000
	admCreateTopic(t, s, topic, 1, nil)
	pcl := admClient(t, s)
	ctx := context.Background()
	val := make([]byte, 100)
	var rs []*kgo.Record
	for i := 0; i < n; i++ {
		rs = append(rs, &kgo.Record{Topic: topic, Partition: 0, Value: val})
	}
	if err := pcl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		b.Fatal(err)
	}
	for _, consumers := range []int{1, 5, 20} {
		b.Run(fmt.Sprintf("consumers=%d", consumers), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				group := fmt.Sprintf("bench-%d-%d", consumers, i)
				setShareEarliest(t, s, group)
				var done, first atomic.Int64 // first: unix ns of the first record
				cctx, cancel := context.WithTimeout(ctx, 120*time.Second)
				var wg sync.WaitGroup
				start := time.Now()
				for c := 0; c < consumers; c++ {
					cl := admClient(t, s, kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
					wg.Add(1)
					go func() {
						defer wg.Done()
						defer cl.Close()
						for done.Load() < n && cctx.Err() == nil {
							pctx, pcancel := context.WithTimeout(cctx, 200*time.Millisecond)
							fs := cl.PollRecords(pctx, 500)
							pcancel()
							cl.MarkAcks(kgo.AckAccept)
							if fs.NumRecords() > 0 {
								first.CompareAndSwap(0, time.Now().UnixNano())
							}
							done.Add(int64(fs.NumRecords()))
						}
					}()
				}
				wg.Wait()
				end := time.Now()
				cancel()
				if done.Load() < n {
					b.Fatalf("consumed %d of %d", done.Load(), n)
				}
				// The first records come once the coordinator has
				// initialized the partition's share state and a member's
				// next heartbeat is assigned it (group.share.heartbeat.interval.ms,
				// 5 s): reported apart, so that records/s is the work.
				firstAt := time.Unix(0, first.Load())
				b.ReportMetric(firstAt.Sub(start).Seconds(), "s-to-first-record")
				b.ReportMetric(float64(n)/end.Sub(firstAt).Seconds(), "records/s")
			}
		})
	}
}
