package txn_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestTransactionsJava runs Kafka's own clients and tools (4.4 jars)
// against the broker: the Java producer fenced by a second instance with
// the same transactional.id (testdata/TxnFencing.java), then
// kafka-transactions.sh list and describe, and kafka-dump-log.sh on the
// .txnindex files.
func TestTransactionsJava(t *testing.T) {
	t.Parallel()
	k := testbroker.FindJDK(t)
	classes := compileTxnJava(t, k, "TxnFencing")
	b := testbroker.Start(t, txnProps...)
	createTopic(t, b.Addr(), "jtx", 2)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.Java, append(k.JVMArgs(k.Classpath(classes)), "TxnFencing", b.Addr(), "jtx", "java-tx", b.DataDir())...)
	out, err := cmd.Output()
	stdout := string(out)
	if err != nil || !strings.Contains(stdout, "TXN DONE") {
		t.Fatalf("TxnFencing: %v\n%s", err, stdout)
	}
	if !strings.Contains(stdout, "FENCED ProducerFencedException") && !strings.Contains(stdout, "FENCED InvalidProducerEpochException") {
		t.Errorf("the first producer was not fenced:\n%s", stdout)
	}
	var want []string
	for i := range 10 {
		want = append(want, "a-"+string(rune('0'+i)))
	}
	for i := range 7 {
		want = append(want, "b-"+string(rune('0'+i)))
	}
	slices.Sort(want)
	if !strings.Contains(stdout, "READ "+strings.Join(want, ",")+"\n") {
		t.Errorf("read_committed did not read exactly the committed transactions:\n%s", stdout)
	}

	// kafka-transactions.sh list, describe and describe-producers.
	tool := func(name string) string {
		_, rest, _ := strings.Cut(stdout, "TOOL "+name+"\n")
		out, exit, _ := strings.Cut(rest, "EXIT ")
		if !strings.HasPrefix(exit, "0\n") {
			t.Errorf("kafka-transactions %s exited %q:\n%s", name, strings.SplitN(exit, "\n", 2)[0], out)
		}
		t.Logf("kafka-transactions %s:\n%s", name, out)
		return out
	}
	if out := tool("list"); !strings.Contains(out, "java-tx") || !strings.Contains(out, "CompleteCommit") {
		t.Errorf("kafka-transactions list does not show java-tx committed")
	}
	if out := tool("describe"); !strings.Contains(out, "java-tx") || !strings.Contains(out, "CompleteCommit") {
		t.Errorf("kafka-transactions describe does not show java-tx committed")
	}
	// The zombie's aborted transaction is in the .txnindex of the
	// partitions it wrote to, which Kafka's DumpLogSegments reads.
	if out := tool("dump-log"); !strings.Contains(out, "producerId: 0") || !strings.Contains(out, "lastStableOffset") {
		t.Errorf("kafka-dump-log does not show the aborted transaction in the .txnindex files")
	}
	if out := tool("describe-producers"); !strings.Contains(out, "CurrentTransactionStartOffset") || !strings.Contains(out, "None") {
		t.Errorf("kafka-transactions describe-producers shows no producer without an open transaction")
	}
}

// compileTxnJava compiles testdata/<name>.java, one of the transactional
// test programs, with testdata/TxnClients.java, the setup they share, and
// returns the class directory.
func compileTxnJava(t *testing.T, k testbroker.JDK, name string) string {
	t.Helper()
	dir := filepath.Join(testbroker.RepoRoot(), "broker", "txn", "testdata")
	return k.Compile(t, filepath.Join(dir, name+".java"), filepath.Join(dir, "TxnClients.java"))
}
