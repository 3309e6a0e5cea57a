package txn_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testbroker"
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
