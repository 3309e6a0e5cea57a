package server

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareGroupOversubscribed: five franz-go share consumers on a
// 2-partition topic. The simple assignor gives each partition
// ceil(5/2) = 3 readers and each member one or two partitions
// (ShareGroupDescribe), and every member receives records: none idles
// because members outnumber partitions.
func TestShareGroupOversubscribed(t *testing.T) {
	t.Parallel()
	s := startAdminBroker(t, shareProps)
	admCreateTopic(t, s, "over", 2, nil)
	setShareEarliest(t, s, "over-g")
	const members = 5
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	got := make([]int, members)
	all := func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range got {
			if n == 0 {
				return false
			}
		}
		return true
	}
	var wg sync.WaitGroup
	for i := 0; i < members; i++ {
		cl := admClient(t, s, kgo.ShareGroup("over-g"), kgo.ConsumeTopics("over"), kgo.ShareMaxRecords(5))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && !all() {
				pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
				fs := cl.PollRecords(pctx, 5)
				pcancel()
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					got[i]++
					mu.Unlock()
					cl.MarkAcks(kgo.AckAccept, r)
				})
			}
		}()
	}
	// Wait until all five are members, so that the assignment below is
	// the five-member one.
	describe := func() kmsg.ShareGroupDescribeResponseGroup {
		d := kmsg.NewPtrShareGroupDescribeRequest()
		d.GroupIDs = []string{"over-g"}
		return admSend[*kmsg.ShareGroupDescribeResponse](t, s, d, 1).Groups[0]
	}
	assignedAll := func(g kmsg.ShareGroupDescribeResponseGroup) bool {
		for _, m := range g.Members {
			if len(m.Assignment.TopicPartitions) == 0 {
				return false
			}
		}
		return len(g.Members) >= members
	}
	var g kmsg.ShareGroupDescribeResponseGroup
	for g = describe(); !assignedAll(g) && ctx.Err() == nil; g = describe() {
		time.Sleep(100 * time.Millisecond)
	}
	readers := map[int32]int{}
	for _, m := range g.Members {
		n := 0
		for _, tp := range m.Assignment.TopicPartitions {
			for _, p := range tp.Partitions {
				readers[p]++
				n++
			}
		}
		if n < 1 || n > 2 {
			t.Errorf("member %s has %d partitions, want 1 or 2", m.MemberID, n)
		}
	}
	if len(g.Members) != members || readers[0] != 3 || readers[1] != 3 {
		t.Errorf("%d members, readers per partition %v, want %d members and 3 readers each", len(g.Members), readers, members)
	}
	// Small batches on both partitions until every member has had some.
	pcl := admClient(t, s)
	for ctx.Err() == nil && !all() {
		admProduce(t, pcl, "over", 0, 10)
		admProduce(t, pcl, "over", 1, 10)
		time.Sleep(50 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for i, n := range got {
		if n == 0 {
			t.Errorf("member %d received no record: %v", i, got)
		}
	}
	t.Logf("records per member %v", got)
}
