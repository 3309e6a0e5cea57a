package tier_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareConsumeAll reads the topic as a new share group starting at the
// earliest offset and checks that every record comes, those only in
// remote storage included: the share-partition start must not jump to
// the local log start (review M4 of the share groups).
func shareConsumeAll(t *testing.T, ctx context.Context, addr string, n int) {
	t.Helper()
	start := time.Now()
	const group = "tiered-share"
	admin := newClient(t, addr)
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	earliest := "earliest"
	c.Name, c.Value = "share.auto.offset.reset", &earliest
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, admin)
	if err == nil && resp.Resources[0].ErrorCode != 0 {
		err = kerr.ErrorForCode(resp.Resources[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("share.auto.offset.reset: %v", err)
	}
	cl := newClient(t, addr, kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
	seen := make([]bool, n)
	got := 0
	for got < n {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollRecords(pctx, 500)
		cancel()
		if err := ctx.Err(); err != nil {
			t.Fatalf("a share group read %d of %d records: %v (the first missing ones were only in remote storage?)", got, n, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < 0 || r.Offset >= int64(n) || string(r.Value) != string(value(int(r.Offset))) {
				t.Fatalf("share record at offset %d = %q", r.Offset, r.Value)
			}
			if !seen[r.Offset] {
				seen[r.Offset] = true
				got++
			}
			cl.MarkAcks(kgo.AckAccept, r)
		})
	}
	cl.Close()
	t.Logf("a share group read %d records from offset 0 in %v", n, time.Since(start))
}
