package server

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestShareFetchSendfile: answers large enough to go by sendfile (over
// copyBelow, 64 KiB) carry the right bytes: 400 records of 2 KiB in
// batches of 10, read by one franz-go share consumer fetching up to 200
// records at a time, each arrive once with its own value. (Small answers
// take the copied path; the other share tests cover it.)
func TestShareFetchSendfile(t *testing.T) {
	t.Parallel()
	s := startAdminBroker(t, shareProps)
	admCreateTopic(t, s, "share-big", 1, nil)
	setShareEarliest(t, s, "big")
	pcl := admClient(t, s, kgo.ProducerLinger(0), kgo.MaxBufferedRecords(10))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 400
	value := func(i int) []byte {
		return append([]byte(fmt.Sprintf("%06d:", i)), bytes.Repeat([]byte{byte('a' + i%26)}, 2048)...)
	}
	for i := 0; i < n; i += 10 {
		var rs []*kgo.Record
		for j := i; j < i+10; j++ {
			rs = append(rs, &kgo.Record{Topic: "share-big", Partition: 0, Value: value(j)})
		}
		if err := pcl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	cl := admClient(t, s, kgo.ShareGroup("big"), kgo.ConsumeTopics("share-big"), kgo.ShareMaxRecords(200))
	got := map[int64]int{}
	for len(got) < n && ctx.Err() == nil {
		fs := cl.PollRecords(ctx, 200)
		fs.EachRecord(func(r *kgo.Record) {
			if !bytes.Equal(r.Value, value(int(r.Offset))) {
				t.Errorf("offset %d: value %.20q..., want %.20q...", r.Offset, r.Value, value(int(r.Offset)))
			}
			got[r.Offset]++
			cl.MarkAcks(kgo.AckAccept, r)
		})
	}
	if err := cl.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	for off, c := range got {
		if c != 1 {
			t.Errorf("offset %d delivered %d times", off, c)
		}
	}
	if len(got) != n {
		t.Fatalf("got %d of %d records", len(got), n)
	}
}
