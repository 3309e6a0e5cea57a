package txn_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testcluster"
	"github.com/tributary-io/tributary/internal/txncheck"
)

// TestTransactionalMessageCopier runs Apache Kafka's own
// TransactionalMessageCopier (kafka-tools 4.4), as Kafka's
// transactions_test does, with random aborts and the group metadata
// commit API (KIP-447): the output read_committed is exactly the input,
// with no duplicate.
func TestTransactionalMessageCopier(t *testing.T) {
	t.Parallel()
	testbroker.KafkaLib(t)
	b := testbroker.Start(t, txnProps...)
	createTopic(t, b.Addr(), "copy-in", 1)
	createTopic(t, b.Addr(), "copy-out", 2)
	in := values("in-", 600)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic("copy-in"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, v := range in {
		cl.Produce(ctx, &kgo.Record{Value: []byte(v)}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := testbroker.RunKafkaTool(t, "org.apache.kafka.tools.TransactionalMessageCopier",
		"--broker-list", b.Addr(), "--input-topic", "copy-in", "--input-partition", "0", "--output-topic", "copy-out",
		"--transactional-id", "copier-1", "--consumer-group", "copier", "--transaction-size", "50",
		"--enable-random-aborts", "--use-group-metadata", "--max-messages", "-1")
	if err != nil {
		t.Fatalf("TransactionalMessageCopier: %v\nstdout (tail): %s\nstderr: %s", err, tail(stdout), stderr)
	}
	if !strings.Contains(stdout, `"stage":"ShutdownComplete"`) || !strings.Contains(stdout, `"remaining":0}`) {
		t.Fatalf("the copier did not finish:\n%s\nstderr: %s", stdout, stderr)
	}
	t.Logf("copier: %d lines, last: %s", strings.Count(stdout, "\n"), tail(stdout))
	sameSet(t, "the copier's output, read_committed", consumeAll(t, b.Addr(), "copy-out", true, len(in)), in)
}

func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-3):], "\n")
}

// TestTransactionalMessageCopierRestarts (make test-long) is Kafka's
// transactions_test with bounced brokers: the copier copies a topic on a
// 3-node cluster while each node in turn is killed with kill -9 and
// restarted; the output read_committed is exactly the input.
func TestTransactionalMessageCopierRestarts(t *testing.T) {
	if os.Getenv("TRIBUTARY_TEST_LONG") == "" {
		t.Skip("TRIBUTARY_TEST_LONG: a long fault test")
	}
	testbroker.KafkaLib(t)
	c := testcluster.Start(t, 3, "transaction.state.log.replication.factor=3", "transaction.state.log.num.partitions=5",
		"offsets.topic.replication.factor=3", "group.initial.rebalance.delay.ms=0", "offsets.topic.num.partitions=5")
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for topic, parts := range map[string]int32{"copy-in": 1, "copy-out": 3} {
		resp, err := adm.CreateTopic(ctx, parts, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	in := values("in-", 20000)
	cl, err := kgo.NewClient(seeds(c.Bootstrap()), kgo.DefaultProduceTopic("copy-in"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, v := range in {
		cl.Produce(ctx, &kgo.Record{Value: []byte(v)}, nil)
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	type result struct {
		stdout, stderr string
		err            error
	}
	done := make(chan result, 1)
	began := time.Now()
	go func() {
		o, e, err := testbroker.RunKafkaTool(t, "org.apache.kafka.tools.TransactionalMessageCopier",
			"--broker-list", c.Bootstrap(), "--input-topic", "copy-in", "--input-partition", "0", "--output-topic", "copy-out",
			"--transactional-id", "copier-r", "--consumer-group", "copier-r", "--transaction-size", "10",
			"--enable-random-aborts", "--use-group-metadata", "--max-messages", "-1")
		done <- result{o, e, err}
	}()
	for _, n := range c.Nodes {
		time.Sleep(2 * time.Second)
		t.Logf("kill -9 node %d", n.ID)
		n.Kill()
		time.Sleep(time.Second)
		n.Restart()
	}
	killed := time.Since(began)
	r := <-done
	t.Logf("the copier ran %v; the last node was back after %v; its output ends:\n%s", time.Since(began), killed, tail(r.stdout))
	if time.Since(began) < killed {
		t.Log("the copier finished before the last restart: fewer faults than meant")
	}
	if r.err != nil || !strings.Contains(r.stdout, `"stage":"ShutdownComplete"`) {
		t.Fatalf("TransactionalMessageCopier: %v\nstdout (tail): %s\nstderr: %s", r.err, tail(r.stdout), r.stderr)
	}
	// The LSO reaches the high watermark once every transaction is
	// decided; how long that takes after the copier ends is logged (a
	// transaction left open would take its 60 s timeout).
	admin, err := kgo.NewClient(seeds(c.Bootstrap()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	settled := time.Now()
	for {
		admin.ForceMetadataRefresh()
		hw, lso := endOffsets(t, admin, "copy-out", 3, false), endOffsets(t, admin, "copy-out", 3, true)
		if hw == lso {
			break
		}
		if time.Since(settled) > 90*time.Second {
			t.Fatalf("the LSO stays at %d, the high watermark is %d", lso, hw)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("LSO = high watermark %v after the copier ended", time.Since(settled))
	reads := consumeReads(t, c.Bootstrap(), "copy-out", true, len(in))
	if res := txncheck.Check([]txncheck.Txn{{ID: "all", Values: in, Outcome: txncheck.Committed}}, reads); !res.Ok() {
		t.Fatalf("the copier's output: %v", res)
	}
}
