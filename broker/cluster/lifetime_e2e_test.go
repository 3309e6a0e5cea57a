package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testcluster"
)

// TestFaultStorageLifetimeUnderFetch deletes topics, reassigns partitions
// and runs retention with file.delete.delay.ms=0 and small segments while 8
// consumers fetch as fast as they can (issue 20). Every one of these
// removes segment files that a fetch may be reading or sending with
// sendfile; before segments were reference-counted, the result was a
// SIGSEGV on an unmapped index, or another file's bytes sent under a reused
// descriptor. It passes when every fetched batch's CRC checks (kgo checks
// each), offsets only grow per partition, and every broker is still
// running at the end, stops cleanly on SIGTERM and logged no panic or data
// race (the brokers are built with -race under go test -race). 20 s; 2 min
// with TRIBUTARY_TEST_LONG=1.
func TestFaultStorageLifetimeUnderFetch(t *testing.T) {
	length := 20 * time.Second
	if long() {
		length = 2 * time.Minute
	}
	c := testcluster.Start(t, 3,
		"log.retention.check.interval.ms=100",
		"log.segment.delete.delay.ms=0",
	)
	c.Controller(15 * time.Second)
	adm := c.Admin()
	waitBrokers(t, adm, 3)
	// Replication factor 2 of 3 brokers: a reassignment moves a replica,
	// deleting a log on the broker it leaves.
	small := map[string]*string{
		"file.delete.delay.ms": kadm.StringPtr("0"),
		"segment.bytes":        kadm.StringPtr("16384"),
		"retention.bytes":      kadm.StringPtr("65536"),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	if _, err := adm.CreateTopic(ctx, 3, 2, small, "ret"); err != nil {
		t.Fatal(err)
	}
	cancel()
	c.Leaders("ret", 15*time.Second)

	run, stop := context.WithTimeout(context.Background(), length)
	defer stop()
	var wg sync.WaitGroup
	var failures atomic.Int64
	fail := func(format string, args ...any) {
		if failures.Add(1) <= 20 {
			t.Errorf(format, args...)
		}
	}

	prod, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.MetadataMaxAge(500*time.Millisecond), kgo.MetadataMinAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()

	// 8 consumers of every topic, reading from the log start, with no wait.
	var batches, records atomic.Int64
	for i := range 8 {
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...),
			kgo.ConsumeRegex(),
			kgo.ConsumeTopics(`^(ret|churn-\d+)$`),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(10*time.Millisecond),
			kgo.MetadataMaxAge(500*time.Millisecond),
			kgo.MetadataMinAge(100*time.Millisecond),
		)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := map[string]int64{} // topic/partition → last offset seen
			for run.Err() == nil {
				fs := cl.PollFetches(run)
				if fs.IsClientClosed() {
					return
				}
				for _, fe := range fs.Errors() {
					if errors.Is(fe.Err, context.Canceled) || errors.Is(fe.Err, context.DeadlineExceeded) {
						continue
					}
					var ke *kerr.Error
					if errors.As(fe.Err, &ke) && ke != kerr.CorruptMessage {
						continue // leadership moved, topic deleted: retried
					}
					fail("consumer %d: %s-%d: %v", i, fe.Topic, fe.Partition, fe.Err)
				}
				fs.EachPartition(func(p kgo.FetchTopicPartition) {
					if len(p.Records) == 0 {
						return
					}
					key := fmt.Sprintf("%s/%d", p.Topic, p.Partition)
					prev, seen := last[key]
					for _, r := range p.Records {
						if seen && r.Offset <= prev {
							fail("consumer %d: %s offset %d after %d", i, key, r.Offset, prev)
						}
						if !strings.HasPrefix(string(r.Value), p.Topic+" ") {
							fail("consumer %d: %s offset %d holds %.40q, a record of another topic", i, key, r.Offset, r.Value)
						}
						prev, seen = r.Offset, true
					}
					last[key] = prev
					batches.Add(1)
					records.Add(int64(len(p.Records)))
				})
			}
		}()
	}

	// A producer into ret, as fast as acks allow: what retention deletes.
	var acked atomic.Int64
	value := strings.Repeat("x", 200)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for run.Err() == nil {
			rs := make([]*kgo.Record, 64)
			for k := range rs {
				rs[k] = &kgo.Record{Topic: "ret", Key: []byte("k"), Value: []byte("ret " + value)}
			}
			ctx, cancel := context.WithTimeout(run, 5*time.Second)
			for _, r := range prod.ProduceSync(ctx, rs...) {
				if r.Err == nil {
					acked.Add(1)
				}
			}
			cancel()
		}
	}()

	// Topics created, filled, read and deleted, one after another.
	var churned atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := 0; run.Err() == nil; n++ {
			name := fmt.Sprintf("churn-%d", n)
			err := retry(run, func(ctx context.Context) error {
				_, err := adm.CreateTopic(ctx, 3, 2, small, name)
				if errors.Is(err, kerr.TopicAlreadyExists) {
					err = nil // a retry of a request that was applied
				}
				return err
			})
			if err != nil {
				if run.Err() == nil {
					fail("creating %s: %v", name, err)
				}
				return
			}
			rs := make([]*kgo.Record, 300)
			for k := range rs {
				rs[k] = &kgo.Record{Topic: name, Key: []byte("k"), Value: []byte(name + " " + value)}
			}
			ctx, cancel := context.WithTimeout(run, 10*time.Second)
			prod.ProduceSync(ctx, rs...)
			cancel()
			// Long enough for the consumers to find it and be mid-read.
			select {
			case <-run.Done():
			case <-time.After(700 * time.Millisecond):
			}
			// Deleted even after the run's end: deleting is the point.
			err = retry(context.Background(), func(ctx context.Context) error {
				resp, err := adm.DeleteTopics(ctx, name)
				if err == nil {
					err = resp.Error()
				}
				if errors.Is(err, kerr.UnknownTopicOrPartition) {
					err = nil // a retry of a request that was applied
				}
				return err
			})
			if err != nil {
				fail("deleting %s: %v", name, err)
				return
			}
			churned.Add(1)
		}
	}()

	// Reassignments: each partition of ret moves to the broker pair it
	// is not on, in turn.
	var moved atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		pairs := [][]int32{{1, 2}, {2, 3}, {3, 1}}
		for n := 1; run.Err() == nil; n++ {
			var req kadm.AlterPartitionAssignmentsReq
			for p := range int32(3) {
				req.Assign("ret", p, pairs[(int(p)+n)%3])
			}
			err := retry(run, func(ctx context.Context) error {
				resp, err := adm.AlterPartitionAssignments(ctx, req)
				if err == nil {
					err = resp.Error()
				}
				return err
			})
			if err != nil {
				if run.Err() == nil {
					fail("reassigning ret: %v", err)
				}
				return
			}
			moved.Add(3)
			select {
			case <-run.Done():
			case <-time.After(2 * time.Second):
			}
		}
	}()

	wg.Wait()
	t.Logf("%d records acked into ret, %d topics created and deleted, %d reassignments; consumers read %d records in %d partition fetches",
		acked.Load(), churned.Load(), moved.Load(), records.Load(), batches.Load())
	if acked.Load() < 1000 || churned.Load() < 3 || moved.Load() < 6 || records.Load() < 10000 {
		t.Errorf("too little happened to prove anything")
	}
	for _, n := range c.Nodes {
		if !n.Running() {
			t.Fatalf("broker %d is no longer running:\n%s", n.ID, tail(n.Log()))
		}
	}
	for _, n := range c.Nodes {
		n.Stop() // SIGTERM; fails the test on a non-zero exit
		for _, bad := range []string{"panic:", "DATA RACE", "SIGSEGV"} {
			if strings.Contains(n.Log(), bad) {
				t.Errorf("broker %d logged %q:\n%s", n.ID, bad, tail(n.Log()))
			}
		}
	}
}

// retry runs op until it succeeds, fails with an error that a retry does
// not cure, or ctx ends; a controller moving or a request timing out is
// retried, as an operator's tool would.
func retry(ctx context.Context, op func(context.Context) error) error {
	for {
		octx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err := op(octx)
		cancel()
		if err == nil || !(kerr.IsRetriable(err) || errors.Is(err, kerr.NotController) || errors.Is(err, context.DeadlineExceeded)) || ctx.Err() != nil {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// tail is the end of a broker's log, enough to see why it failed.
func tail(log string) string {
	const keep = 20000
	if len(log) > keep {
		return "...\n" + log[len(log)-keep:]
	}
	return log
}
