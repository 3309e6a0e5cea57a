package txn_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestTransactionsLibrdkafka: librdkafka's transactional producer
// (confluent-kafka) commits, aborts and commits; a librdkafka
// read_committed consumer reads exactly the committed records.
func TestTransactionsLibrdkafka(t *testing.T) {
	t.Parallel()
	py := testbroker.Python(t, "confluent_kafka")
	b := testbroker.Start(t, txnProps...)
	createTopic(t, b.Addr(), "rdtx", 2)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, filepath.Join(testbroker.RepoRoot(), "broker", "txn", "testdata", "txn_librdkafka.py"), b.Addr(), "rdtx").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "TXN OK") {
		t.Fatalf("librdkafka transactions: %v\n%s", err, out)
	}
}
