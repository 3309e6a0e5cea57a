package loader_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/formats/decode"
	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestLoadSkipsAbortedTransactions: a topic written by a transactional
// producer, with committed, aborted and (at the first load) open
// transactions. The lake gets exactly the committed records: not one
// aborted record, and the open transaction's records only after it
// commits, at the next load (the plan stops at the last stable offset).
func TestLoadSkipsAbortedTransactions(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	target := "file://" + t.TempDir()
	testbroker.CreateTopic(t, b.Addr(), "txw", 2)
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.TransactionalID("loader-tx"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	committed := map[string]bool{}
	next := 0
	txn := func(n int, end *bool) {
		t.Helper()
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var line []byte
		for range n {
			line = decode.ActivityEvent(line[:0], next)
			next++
			var e struct {
				MessageID string `json:"messageId"`
			}
			json.Unmarshal(line, &e)
			if end == nil || *end {
				committed[e.MessageID] = true
			}
			cl.Produce(ctx, &kgo.Record{Topic: "txw", Value: append([]byte(nil), line...)}, nil)
		}
		if err := cl.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if end != nil {
			if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(*end)); err != nil {
				t.Fatal(err)
			}
		}
	}
	yes, no := true, false
	txn(300, &yes)
	txn(200, &no)
	txn(100, &yes)
	decided := map[string]bool{}
	for id := range committed {
		decided[id] = true
	}
	txn(50, nil) // open during the first load
	check := func(want map[string]bool) {
		t.Helper()
		l := readLake(t, target, "txw")
		got := map[string]bool{}
		for _, r := range l.rows {
			if got[r.MessageID] {
				t.Fatalf("%s loaded twice", r.MessageID)
			}
			got[r.MessageID] = true
			if !want[r.MessageID] {
				t.Fatalf("%s (%d/%d) is in the lake but was not committed (aborted, or open at the plan)", r.MessageID, r.Partition, r.Offset)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("the lake has %d records, %d were committed", len(got), len(want))
		}
	}
	args := []string{"-b", b.Addr(), "--topics", "txw", "--schema", activitySchema, "--time-field", "timestamp", "--target", target, "--max-records-per-unit", "120"}
	mustLoad(t, args...)
	check(decided) // without the 50 of the open transaction
	// load status: the open transaction holds the last stable offset
	// where the load stopped, below the high watermark.
	status, err := tributary(t, nil, "load", "status", "-b", b.Addr(), "--target", target)
	if err != nil {
		t.Fatalf("load status: %v\n%s", err, status)
	}
	held := 0
	for _, l := range strings.Split(status, "\n") {
		// TOPIC PARTITION COMMITTED HIGH-WATERMARK LAG LAST-STABLE-OFFSET
		if f := strings.Fields(l); len(f) == 6 && f[0] == "txw" {
			if f[5] != f[2] {
				t.Errorf("load status: partition %s committed %s, last stable offset %s: the load stops at the LSO\n%s", f[1], f[2], f[5], status)
			}
			if f[3] != f[5] {
				held++
			}
		}
	}
	if held == 0 {
		t.Errorf("load status shows no partition held back by the open transaction:\n%s", status)
	}
	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	// The 50 count now: committed holds them (end == nil).
	mustLoad(t, args...)
	check(committed)
}
