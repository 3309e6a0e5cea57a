package txn_test

import (
	"context"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/txncheck"
)

// txnProps make transactions time out fast enough for a test to see it.
var txnProps = []string{
	"transaction.abort.timed.out.transaction.cleanup.interval.ms=200",
	"group.initial.rebalance.delay.ms=0",
}

func createTopic(t *testing.T, addr, topic string, partitions int32) {
	t.Helper()
	cl, err := kgo.NewClient(seeds(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
}

func txnProducer(t *testing.T, addr, id string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{seeds(addr), kgo.TransactionalID(id),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner())}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produceTxn writes values in one transaction and ends it.
func produceTxn(t *testing.T, cl *kgo.Client, topic string, values []string, commit bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	for _, v := range values {
		cl.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("end transaction (commit %v): %v", commit, err)
	}
}

// consumeAll reads a topic from the start until n records or a quiet
// second past the end, at an isolation level.
func consumeAll(t *testing.T, addr, topic string, committed bool, n int) []string {
	t.Helper()
	var out []string
	for _, r := range consumeReads(t, addr, topic, committed, n) {
		out = append(out, r.Value)
	}
	return out
}

// consumeReads is consumeAll with where each value was read.
func consumeReads(t *testing.T, addr, topic string, committed bool, n int) []txncheck.Read {
	t.Helper()
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl, err := kgo.NewClient(seeds(addr), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []txncheck.Read
	deadline := time.Now().Add(60 * time.Second)
	quiet := 0
	for time.Now().Before(deadline) && quiet < 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		fs := cl.PollFetches(ctx)
		cancel()
		got := 0
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, txncheck.Read{Value: string(r.Value), Partition: r.Partition, Offset: r.Offset})
			got++
		})
		if got == 0 && len(out) >= n {
			quiet += 3 // one quiet poll past the end is enough
		}
	}
	return out
}

func values(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix + strconv.Itoa(i)
	}
	return out
}

// endOffsets is ListOffsets latest of every partition, summed, at an
// isolation level.
func endOffsets(t *testing.T, cl *kgo.Client, topic string, partitions int32, committed bool) int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	if committed {
		req.IsolationLevel = 1
	}
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, p := range resp.Topics[0].Partitions {
		if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
			t.Fatal(err)
		}
		sum += p.Offset
	}
	return sum
}

func set(vs []string) map[string]int {
	m := map[string]int{}
	for _, v := range vs {
		m[v]++
	}
	return m
}

func sameSet(t *testing.T, what string, got, want []string) {
	t.Helper()
	g, w := set(got), set(want)
	for v, n := range g {
		if n > 1 {
			t.Errorf("%s: %q read %d times", what, v, n)
		}
		if w[v] == 0 {
			t.Errorf("%s: %q read, not expected", what, v)
		}
	}
	for v := range w {
		if g[v] == 0 {
			t.Errorf("%s: %q expected, not read", what, v)
		}
	}
	if t.Failed() {
		t.Fatalf("%s: read %d records, want %d", what, len(got), len(want))
	}
}

// TestTransactionsSingleNode: committed transactions are read by a
// read_committed consumer, aborted ones are not, an open one holds the
// last stable offset back, and after kill -9 the broker recovers all of
// it and aborts the open transaction when it times out.
func TestTransactionsSingleNode(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t, txnProps...)
	createTopic(t, b.Addr(), "txn-out", 3)

	var want, all []string
	t.Run("commit and abort", func(t *testing.T) {
		p := txnProducer(t, b.Addr(), "tx-a")
		c1, a1, c2 := values("c1-", 90), values("a1-", 60), values("c2-", 30)
		produceTxn(t, p, "txn-out", c1, true)
		produceTxn(t, p, "txn-out", a1, false)
		produceTxn(t, p, "txn-out", c2, true)
		want = append(append(want, c1...), c2...)
		all = append(append(append(all, c1...), a1...), c2...)
		sameSet(t, "read_committed", consumeAll(t, b.Addr(), "txn-out", true, len(want)), want)
		sameSet(t, "read_uncommitted", consumeAll(t, b.Addr(), "txn-out", false, len(all)), all)
		// tributary consume --isolation read_committed.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, testbroker.Binary(t), "consume", "txn-out", "-b", b.Addr(), "--from-beginning",
			"--isolation", "read_committed", "--count", strconv.Itoa(len(want))).Output()
		if err != nil {
			t.Fatalf("tributary consume --isolation read_committed: %v", err)
		}
		sameSet(t, "tributary consume --isolation read_committed", strings.Fields(string(out)), want)
	})

	t.Run("open transaction holds the LSO through kill -9", func(t *testing.T) {
		// Long enough that a loaded machine still finds it open below,
		// short enough that the abort by timeout comes within the test.
		p := txnProducer(t, b.Addr(), "tx-open", kgo.TransactionTimeout(8*time.Second))
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for _, v := range values("open-", 30) {
			p.Produce(ctx, &kgo.Record{Topic: "txn-out", Value: []byte(v)}, nil)
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		admin, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
		if err != nil {
			t.Fatal(err)
		}
		hw, lso := endOffsets(t, admin, "txn-out", 3, false), endOffsets(t, admin, "txn-out", 3, true)
		admin.Close()
		if lso >= hw {
			t.Fatalf("with a transaction open, LSO sum %d is not below HW sum %d", lso, hw)
		}
		// tributary txn list and describe show it open.
		out, err := exec.Command(testbroker.Binary(t), "txn", "list", "-b", b.Addr(), "--state", "Ongoing").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "tx-open") || strings.Contains(string(out), "tx-a") {
			t.Fatalf("tributary txn list --state Ongoing: %v\n%s", err, out)
		}
		out, err = exec.Command(testbroker.Binary(t), "txn", "describe", "tx-open", "-b", b.Addr()).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "Ongoing") || !strings.Contains(string(out), "txn-out-") {
			t.Fatalf("tributary txn describe: %v\n%s", err, out)
		}
		t.Logf("tributary txn describe tx-open:\n%s", out)
		b.Kill()
		b.Restart()
		admin, err = kgo.NewClient(kgo.SeedBrokers(b.Addr()))
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()
		// hw - open writes + a marker per partition
		if got := endOffsets(t, admin, "txn-out", 3, true); got != lso {
			// The timeout may already have aborted it: then the LSO is
			// the high watermark.
			if got != endOffsets(t, admin, "txn-out", 3, false) {
				t.Fatalf("after kill -9, LSO sum %d, was %d", got, lso)
			}
		}
		deadline := time.Now().Add(30 * time.Second)
		for endOffsets(t, admin, "txn-out", 3, true) != endOffsets(t, admin, "txn-out", 3, false) {
			if time.Now().After(deadline) {
				t.Fatal("the open transaction was not aborted after its timeout")
			}
			time.Sleep(100 * time.Millisecond)
		}
		sameSet(t, "read_committed after the abort", consumeAll(t, b.Addr(), "txn-out", true, len(want)), want)
	})
	_ = fmt.Sprint
}

// TestTransactionsGroupSession is consume-transform-produce with franz-go's
// GroupTransactSession, two members (the second joins midway, a
// rebalance), every fourth transaction aborted: the output a
// read_committed consumer sees is exactly the committed input,
// transformed, once each.
func TestTransactionsGroupSession(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t, txnProps...)
	createTopic(t, b.Addr(), "etl-in", 3)
	createTopic(t, b.Addr(), "etl-out", 3)
	p := txnProducer(t, b.Addr(), "etl-feed")
	var input []string
	for i := range 6 {
		vs := values(fmt.Sprintf("in%d-", i), 100)
		commit := i != 2
		produceTxn(t, p, "etl-in", vs, commit)
		if commit {
			input = append(input, vs...)
		}
	}

	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var mu sync.Mutex
	done, aborted := 0, 0
	byWorker := map[string]int{}
	finished := make(chan struct{})
	worker := func(id string) error {
		sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(b.Addr()), kgo.TransactionalID(id),
			kgo.ConsumerGroup("etl"), kgo.ConsumeTopics("etl-in"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
			kgo.RequireStableFetchOffsets(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.FetchMaxWait(200*time.Millisecond), kgo.TransactionTimeout(10*time.Second),
			// A batch a fetch: many small transactions.
			kgo.FetchMaxBytes(1), kgo.FetchMaxPartitionBytes(1),
			kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
		if err != nil {
			return err
		}
		defer sess.Close()
		n := 0
		for {
			select {
			case <-finished:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			default:
			}
			pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
			fs := sess.PollFetches(pctx)
			pcancel()
			recs := fs.Records()
			if len(recs) == 0 {
				continue
			}
			if err := sess.Begin(); err != nil {
				return err
			}
			for _, r := range recs {
				sess.Produce(ctx, &kgo.Record{Topic: "etl-out", Value: append([]byte("x-"), r.Value...)}, nil)
			}
			n++
			commit := n%4 != 0
			committed, err := sess.End(ctx, kgo.TransactionEndTry(commit))
			if err != nil {
				return fmt.Errorf("%s: end: %w", id, err)
			}
			mu.Lock()
			if !committed {
				aborted++
			}
			mu.Unlock()
			if committed {
				mu.Lock()
				byWorker[id]++
				done += len(recs)
				if done >= len(input) {
					select {
					case <-finished:
					default:
						close(finished)
					}
				}
				mu.Unlock()
			}
		}
	}
	errs := make(chan error, 2)
	go func() { errs <- worker("etl-1") }()
	go func() {
		// The second member joins once the first has committed some.
		for {
			mu.Lock()
			d := done
			mu.Unlock()
			if d > 0 {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		errs <- worker("etl-2")
	}()
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("transactions committed by worker %v, aborted %d, in %v", byWorker, aborted, time.Since(t0))
	if aborted == 0 {
		t.Fatal("no transaction was aborted: the test did not test aborts")
	}
	var want []string
	for _, v := range input {
		want = append(want, "x-"+v)
	}
	sameSet(t, "etl output, read_committed", consumeAll(t, b.Addr(), "etl-out", true, len(want)), want)
}

// seeds are the seed brokers of a comma-separated bootstrap list.
func seeds(addr string) kgo.Opt { return kgo.SeedBrokers(strings.Split(addr, ",")...) }
