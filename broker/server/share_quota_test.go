package server

import (
	"context"
	"math/rand"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type shareThrottles struct{ n, ms atomic.Int64 }

func (h *shareThrottles) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	h.n.Add(1)
	h.ms.Add(d.Milliseconds())
}

// TestShareFetchQuota: a share consumer under consumer_byte_rate is
// throttled by its ShareFetch bytes, and told so in the answers (review
// L1: share bytes were not charged at all). 600 KB of incompressible
// records at 100 KB/s with a 2 × 1 s window: the client is told throttle
// times, and reading everything takes seconds rather than the moment it
// takes unthrottled.
func TestShareFetchQuota(t *testing.T) {
	t.Parallel()
	props := map[string]string{"quota.window.num": "2", "quota.window.size.seconds": "1"}
	for k, v := range shareProps {
		props[k] = v
	}
	s := startAdminBroker(t, props)
	const topic = "share-quota"
	admCreateTopic(t, s, topic, 1, nil)
	setShareEarliest(t, s, "sq")
	admin := admClient(t, s, kgo.ProducerLinger(0), kgo.MaxBufferedRecords(4))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 152 // 4 KiB each
	for i := 0; i < n; i += 4 {
		var rs []*kgo.Record
		for j := i; j < i+4; j++ {
			b := make([]byte, 4096)
			rand.New(rand.NewSource(int64(j))).Read(b)
			rs = append(rs, &kgo.Record{Topic: topic, Partition: 0, Value: b})
		}
		if err := admin.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	name := "slow-share"
	qr := kmsg.NewPtrAlterClientQuotasRequest()
	qr.Entries = []kmsg.AlterClientQuotasRequestEntry{{
		Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "client-id", Name: &name}},
		Ops:    []kmsg.AlterClientQuotasRequestEntryOp{{Key: "consumer_byte_rate", Value: 100_000}},
	}}
	if qresp, err := qr.RequestWith(ctx, admin); err != nil || qresp.Entries[0].ErrorCode != 0 {
		t.Fatalf("alter quotas: %v %+v", err, qresp)
	}
	h := &shareThrottles{}
	cl := admClient(t, s, kgo.ClientID("slow-share"), kgo.WithHooks(h), kgo.ShareGroup("sq"), kgo.ConsumeTopics(topic),
		kgo.ShareMaxRecords(20))
	start := time.Now()
	got := map[int64]bool{}
	for len(got) < n && ctx.Err() == nil {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cl.PollRecords(pctx, 20)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) {
			got[r.Offset] = true
			cl.MarkAcks(kgo.AckAccept, r)
		})
		if err := cl.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
	}
	took := time.Since(start)
	t.Logf("600 KB at 100 KB/s: %v, %d throttles told, %d ms in total", took.Round(time.Millisecond), h.n.Load(), h.ms.Load())
	if len(got) != n {
		t.Fatalf("got %d of %d records", len(got), n)
	}
	if h.n.Load() == 0 || took < 2*time.Second {
		t.Fatalf("a share consumer at 600 KB over a 100 KB/s consumer_byte_rate: %d throttles told, read in %v", h.n.Load(), took)
	}
}
