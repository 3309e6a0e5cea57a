package txn_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestTransactionsCompaction: on a compacted topic, an aborted
// transaction's record of a key never makes the cleaner remove the
// committed one before it, and the cleaner removes the aborted records.
func TestTransactionsCompaction(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t, append(txnProps, "log.cleaner.backoff.ms=100")...)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, map[string]*string{
		"cleanup.policy": kadm.StringPtr("compact"), "segment.bytes": kadm.StringPtr("2048"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
	}, "ctopic")
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	p := txnProducer(t, b.Addr(), "compact-tx")
	keyed := func(prefix string, n int, commit bool) {
		t.Helper()
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			p.Produce(ctx, &kgo.Record{Topic: "ctopic", Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}, nil)
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := p.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	keyed("committed", 20, true)
	keyed("aborted", 20, false)
	// Other keys, so that segments roll and the dirty ones get cleaned.
	for round := range 10 {
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := range 20 {
			p.Produce(ctx, &kgo.Record{Topic: "ctopic", Key: []byte(fmt.Sprintf("filler-%d", i)), Value: []byte(fmt.Sprintf("round-%d-%s", round, strings.Repeat("x", 40)))}, nil)
		}
		if err := p.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := p.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
	}
	// The cleaner removes the aborted records...
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := consumeAll(t, b.Addr(), "ctopic", false, 1)
		aborted := 0
		for _, v := range got {
			if strings.HasPrefix(v, "aborted-") {
				aborted++
			}
		}
		if aborted == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cleaner left %d aborted records", aborted)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// ...and every committed value of k0..k19 is still there.
	var committed []string
	for _, v := range consumeAll(t, b.Addr(), "ctopic", true, 1) {
		if strings.HasPrefix(v, "committed-") {
			committed = append(committed, v)
		}
	}
	sameSet(t, "committed values after cleaning", committed, values("committed-", 20))
}
