package server

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestShareFetchSendfileEdges: the sendfile path where it cuts. Segments
// of 256 KiB (an answer takes bytes from one segment only, the rest comes
// with the next fetch) and a 100 KB fetch budget that ends inside a batch
// (the slice is trimmed to whole batches and the acquired offsets past it
// go back); answers over 64 KiB go by sendfile. 300 incompressible records of 2 KiB in batches of 10: each
// comes once, on its first delivery, with its own value, and the open
// files of the partition's directory are back to what they were. (More
// than 64 batches in an answer, the copied fallback, is in
// TestShareFetchCopiedOver1MiB.)
func TestShareFetchSendfileEdges(t *testing.T) {
	t.Parallel()
	s := startAdminBroker(t, shareProps)
	const topic = "share-edge"
	admCreateTopic(t, s, topic, 1, map[string]string{"segment.bytes": "262144"})
	setShareEarliest(t, s, "edge")
	pcl := admClient(t, s, kgo.ProducerLinger(0), kgo.MaxBufferedRecords(10))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n = 300
	value := func(i int) []byte {
		b := make([]byte, 2048)
		rand.New(rand.NewSource(int64(i))).Read(b)
		return append([]byte(fmt.Sprintf("%06d:", i)), b...)
	}
	for i := 0; i < n; i += 10 {
		var rs []*kgo.Record
		for j := i; j < i+10; j++ {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: 0, Value: value(j)})
		}
		if err := pcl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	openFiles := func() int {
		fds, _ := os.ReadDir("/proc/self/fd")
		k := 0
		for _, fd := range fds {
			if to, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name())); err == nil && strings.Contains(to, topic+"-0") {
				k++
			}
		}
		return k
	}
	before := openFiles()
	cl := admClient(t, s, kgo.ShareGroup("edge"), kgo.ConsumeTopics(topic), kgo.ShareMaxRecords(n), kgo.FetchMaxBytes(100_000))
	got := map[int64]int{}
	polls := 0
	for len(got) < n && ctx.Err() == nil {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cl.PollRecords(pctx, n)
		pcancel()
		polls++
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
	if polls < 6 {
		t.Errorf("%d polls for 600 KiB with 100 KB answers: the budget or the segments did not cut", polls)
	}
	if after := openFiles(); after > before {
		t.Errorf("%d files of the partition open after the fetches, %d before", after, before)
	}
	t.Logf("%d polls; partition files open: %d before, %d after", polls, before, openFiles())
}
