package txn_test

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestTransactionsAdminAbort aborts transactions left open on a partition
// from outside, as an operator does with a hanging one: `tributary txn
// abort --start-offset` on one topic, Kafka's own `kafka-transactions.sh
// abort` on another. Each open transaction holds the partition's last
// stable offset, and so every read_committed consumer, behind a committed
// transaction written after it; the abort marker releases them, and the
// aborted records are never read. Kafka's find-hanging, run before its
// abort, must not call the open transaction hanging: its coordinator still
// knows it. Before the aborts, tributary topic describe and group describe
// show the last stable offset held back. Kafka's tools run in one JVM
// (testdata/TxnTools.java).
func TestTransactionsAdminAbort(t *testing.T) {
	t.Parallel()
	k := testbroker.FindJDK(t)
	classes := compileTxnJava(t, k, "TxnTools")
	b := testbroker.Start(t, txnProps...)
	bin := testbroker.Binary(t)
	for _, topic := range []string{"hang-t", "hang-k"} {
		createTopic(t, b.Addr(), topic, 1)
	}
	admin, err := kgo.NewClient(seeds(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()

	// One producer per topic leaves its transaction open (a long timeout,
	// so that nothing but the abort ends it); then another commits after it.
	for _, topic := range []string{"hang-t", "hang-k"} {
		p := txnProducer(t, b.Addr(), "open-"+topic, kgo.TransactionTimeout(10*time.Minute))
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		for _, v := range values("open-", 5) {
			p.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}, nil)
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		produceTxn(t, txnProducer(t, b.Addr(), "done-"+topic), topic, values("done-", 3), true)
		if hw, lso := endOffsets(t, admin, topic, 1, false), endOffsets(t, admin, topic, 1, true); lso != 0 || hw == 0 {
			t.Fatalf("%s: with a transaction open at offset 0, LSO %d HW %d", topic, lso, hw)
		}
	}

	// The open transactions show as a last stable offset of 0 in topic
	// describe, and in group describe of a group that committed offset 0.
	adm := kadm.NewClient(admin)
	var offs kadm.Offsets
	offs.AddOffset("hang-t", 0, 0, -1)
	if err := adm.CommitAllOffsets(context.Background(), "hang-readers", offs); err != nil {
		t.Fatal(err)
	}
	hw := endOffsets(t, admin, "hang-t", 1, false)
	lsoRow := regexp.MustCompile(`(?m)^0 +1 +\d+ +1 +1 +- +0 +` + fmt.Sprint(hw) + ` +0$`)
	if got, err := exec.Command(bin, "topic", "describe", "hang-t", "-b", b.Addr()).CombinedOutput(); err != nil || !lsoRow.Match(got) {
		t.Errorf("tributary topic describe: no partition row with HIGH-WATERMARK %d and LAST-STABLE-OFFSET 0: %v\n%s", hw, err, got)
	}
	heldRow := regexp.MustCompile(`(?m)^hang-t +0 +0 +0 +` + fmt.Sprint(hw) + ` +0$`)
	if got, err := exec.Command(bin, "group", "describe", "hang-readers", "-b", b.Addr()).CombinedOutput(); err != nil || !heldRow.Match(got) {
		t.Errorf("tributary group describe: no held-back row (CURRENT-OFFSET 0, LSO 0, LOG-END-OFFSET %d, STABLE-LAG 0): %v\n%s", hw, err, got)
	}

	released := func(topic string) {
		t.Helper()
		if hw, lso := endOffsets(t, admin, topic, 1, false), endOffsets(t, admin, topic, 1, true); lso != hw {
			t.Errorf("%s: after the abort LSO %d, HW %d", topic, lso, hw)
		}
		sameSet(t, topic+" read_committed", consumeAll(t, b.Addr(), topic, true, 3), values("done-", 3))
	}

	// tributary txn describe-producers shows where the open one starts;
	// tributary txn abort --start-offset ends it.
	got, err := exec.Command(bin, "txn", "describe-producers", "-b", b.Addr(), "--topic", "hang-t", "--partition", "0").CombinedOutput()
	if err != nil || !strings.Contains(string(got), "TXN-START-OFFSET") {
		t.Fatalf("tributary txn describe-producers: %v\n%s", err, got)
	}
	t.Logf("tributary txn describe-producers:\n%s", got)
	if got, err := exec.Command(bin, "txn", "abort", "-b", b.Addr(), "--topic", "hang-t", "--partition", "0", "--start-offset", "5").CombinedOutput(); err == nil {
		t.Errorf("tributary txn abort at an offset where no transaction starts succeeded:\n%s", got)
	}
	got, err = exec.Command(bin, "txn", "abort", "-b", b.Addr(), "--topic", "hang-t", "--partition", "0", "--start-offset", "0").CombinedOutput()
	if err != nil {
		t.Fatalf("tributary txn abort: %v\n%s", err, got)
	}
	released("hang-t")
	if got, err := exec.Command(bin, "group", "describe", "hang-readers", "-b", b.Addr()).CombinedOutput(); err != nil || strings.Contains(string(got), "LAST-STABLE-OFFSET") {
		t.Errorf("tributary group describe after the abort still shows a held-back partition: %v\n%s", err, got)
	}

	// Kafka's kafka-transactions.sh, in one JVM: find-hanging first (the
	// open transaction on hang-k is known to its coordinator, Ongoing with
	// the partition, so it is not hanging), then abort.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, k.Java, append(k.JVMArgs(k.Classpath(classes)), "TxnTools", b.Addr(),
		"find-hanging", "--topic", "hang-k", "--max-transaction-timeout", "0", "--",
		"abort", "--topic", "hang-k", "--partition", "0", "--start-offset", "0")...).CombinedOutput()
	if err != nil {
		t.Fatalf("kafka-transactions: %v\n%s", err, out)
	}
	tool := func(name string) string {
		_, rest, _ := strings.Cut(string(out), "TOOL "+name+"\n")
		got, exit, _ := strings.Cut(rest, "EXIT ")
		if !strings.HasPrefix(exit, "0\n") {
			t.Errorf("kafka-transactions %s exited %q:\n%s", name, strings.SplitN(exit, "\n", 2)[0], got)
		}
		return got
	}
	if got := tool("find-hanging"); !strings.Contains(got, "Topic") || strings.Contains(got, "hang-k") {
		t.Errorf("kafka-transactions find-hanging: no table, or the open transaction called hanging:\n%s", got)
	}
	tool("abort")
	released("hang-k")
}
