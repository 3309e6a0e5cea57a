package server

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestShareFetchCopiedOver1MiB fetches more than 1 MiB of incompressible
// records in one copied answer: read_committed answers are always copied,
// and so are answers of more than 64 batches. The copy reads 1 MiB at a
// time and such a read ends inside a batch; each record must come once,
// on its first delivery, with no corrupt batch reported.
func TestShareFetchCopiedOver1MiB(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, group string
		perBatch    int
		rc          bool
	}{
		{"read_committed", "copyrc", 10, true},
		{"read_uncommitted_many_batches", "copyru", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startAdminBroker(t, shareProps)
			topic := "copy-" + tc.group
			admCreateTopic(t, s, topic, 1, nil)
			setShareEarliest(t, s, tc.group)
			if tc.rc {
				setShareGroupConfig(t, s, tc.group, "share.isolation.level", "read_committed")
			}
			pcl := admClient(t, s, kgo.ProducerLinger(0), kgo.MaxBufferedRecords(tc.perBatch))
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			const n = 300 // 8 KiB each: 2.4 MiB
			value := func(i int) []byte {
				b := make([]byte, 8192)
				rand.New(rand.NewSource(int64(i))).Read(b)
				return append([]byte(fmt.Sprintf("%06d:", i)), b...)
			}
			for i := 0; i < n; i += tc.perBatch {
				var rs []*kgo.Record
				for j := i; j < i+tc.perBatch; j++ {
					rs = append(rs, &kgo.Record{Topic: topic, Partition: 0, Value: value(j)})
				}
				if err := pcl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			cl := admClient(t, s, kgo.ShareGroup(tc.group), kgo.ConsumeTopics(topic), kgo.ShareMaxRecords(n), kgo.FetchMaxBytes(8<<20))
			got := map[int64]int{}
			for len(got) < n && ctx.Err() == nil {
				pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
				fs := cl.PollRecords(pctx, n)
				pcancel()
				fs.EachError(func(_ string, _ int32, err error) {
					if err != context.DeadlineExceeded {
						t.Errorf("fetch error: %v", err)
					}
				})
				fs.EachRecord(func(r *kgo.Record) {
					if !bytes.Equal(r.Value, value(int(r.Offset))) {
						t.Errorf("offset %d: wrong value", r.Offset)
					}
					if dc := r.DeliveryCount(); dc != 1 {
						t.Errorf("offset %d: delivery count %d, want 1", r.Offset, dc)
					}
					got[r.Offset]++
					cl.MarkAcks(kgo.AckAccept, r)
				})
				if err := cl.FlushAcks(ctx); err != nil {
					t.Fatal(err)
				}
				if t.Failed() {
					t.FailNow()
				}
			}
			if len(got) != n {
				t.Fatalf("got %d of %d records", len(got), n)
			}
			for o, c := range got {
				if c != 1 {
					t.Errorf("offset %d delivered %d times", o, c)
				}
			}
		})
	}
}
