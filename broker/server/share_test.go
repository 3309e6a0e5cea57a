package server

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareProps are share-group settings short enough for tests.
var shareProps = map[string]string{
	"group.share.min.record.lock.duration.ms": "1000",
	"group.share.record.lock.duration.ms":     "1500",
	"group.share.min.heartbeat.interval.ms":   "200",
	"group.share.heartbeat.interval.ms":       "500",
	"group.share.min.session.timeout.ms":      "3000",
	"group.share.session.timeout.ms":          "6000",
}

func setShareEarliest(t *testing.T, s *Server, group string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = "share.auto.offset.reset", strPtr("earliest")
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	resp := admSend[*kmsg.IncrementalAlterConfigsResponse](t, s, req, 1)
	if code := resp.Resources[0].ErrorCode; code != 0 {
		t.Fatalf("share.auto.offset.reset: %v", kerr.ErrorForCode(code))
	}
}

// TestShareGroupFranzGo: three franz-go share consumers on a 1-partition
// topic take every record once between them (each accepted once), and
// records one of them releases come back to someone with a higher
// delivery count.
func TestShareGroupFranzGo(t *testing.T) {
	t.Parallel()
	s := startAdminBroker(t, shareProps)
	admCreateTopic(t, s, "work", 1, nil)
	setShareEarliest(t, s, "workers")
	const n = 300
	admProduce(t, admClient(t, s), "work", 0, n)

	var mu sync.Mutex
	accepted := map[int64]int{}
	released := map[int64]bool{}
	redelivered := 0
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		cl := admClient(t, s, kgo.ShareGroup("workers"), kgo.ConsumeTopics("work"), kgo.ShareMaxRecords(20))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				done := len(accepted) == n
				mu.Unlock()
				if done || ctx.Err() != nil {
					return
				}
				pctx, pcancel := context.WithTimeout(ctx, 500*time.Millisecond)
				fs := cl.PollRecords(pctx, 20)
				pcancel()
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					defer mu.Unlock()
					// Every 10th record is released once: it must come
					// back with delivery count 2.
					if r.Offset%10 == 0 && !released[r.Offset] {
						released[r.Offset] = true
						cl.MarkAcks(kgo.AckRelease, r)
						return
					}
					if released[r.Offset] {
						redelivered++
					}
					accepted[r.Offset]++
					cl.MarkAcks(kgo.AckAccept, r)
				})
			}
		}()
	}
	wg.Wait()
	if len(accepted) != n {
		t.Fatalf("accepted %d of %d records", len(accepted), n)
	}
	for off, c := range accepted {
		if c != 1 {
			t.Errorf("offset %d accepted %d times", off, c)
		}
	}
	if redelivered != n/10 {
		t.Errorf("%d released records redelivered, want %d", redelivered, n/10)
	}
}
