package server

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func setShareGroupConfig(t *testing.T, s *Server, group, name, value string) {
	t.Helper()
	req := kmsg.NewPtrIncrementalAlterConfigsRequest()
	rr := kmsg.NewIncrementalAlterConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeGroupConfig, group
	c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	c.Name, c.Value = name, strPtr(value)
	rr.Configs = append(rr.Configs, c)
	req.Resources = append(req.Resources, rr)
	resp := admSend[*kmsg.IncrementalAlterConfigsResponse](t, s, req, 1)
	if code := resp.Resources[0].ErrorCode; code != 0 {
		t.Fatalf("%s=%s: %v %s", name, value, kerr.ErrorForCode(code), admShow(resp.Resources[0].ErrorMessage))
	}
}

// shareDrain reads the group's records with one share consumer until
// want values arrived or quiet passed with nothing new, accepting each.
func shareDrain(t *testing.T, s *Server, group, topic string, want int, quiet time.Duration) []string {
	t.Helper()
	cl := admClient(t, s, kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ShareMaxRecords(50))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []string
	// The quiet period counts from the first record: joining the group
	// can take seconds on a loaded machine.
	var last time.Time
	for ctx.Err() == nil && len(got) < want && (last.IsZero() || time.Since(last) < quiet) {
		pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond)
		fs := cl.PollRecords(pctx, 50)
		pcancel()
		fs.EachRecord(func(r *kgo.Record) {
			got = append(got, string(r.Value))
			cl.MarkAcks(kgo.AckAccept, r)
			last = time.Now()
		})
	}
	if err := cl.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	return got
}

// shareNone polls the group for d and returns what it was given, which
// the caller expects to be nothing.
func shareNone(t *testing.T, s *Server, group, topic string, d time.Duration) []string {
	t.Helper()
	cl := admClient(t, s, kgo.ShareGroup(group), kgo.ConsumeTopics(topic), kgo.ShareMaxRecords(50))
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var got []string
	for ctx.Err() == nil {
		cl.PollRecords(ctx, 50).EachRecord(func(r *kgo.Record) {
			got = append(got, string(r.Value))
			cl.MarkAcks(kgo.AckAccept, r)
		})
	}
	fctx, fcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer fcancel()
	if err := cl.FlushAcks(fctx); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestShareGroupReadCommitted: share.isolation.level=read_committed
// delivers committed transactions and plain records only (never an
// aborted transaction's records, which are archived), and nothing at or
// past an open transaction until it ends; the same log read
// read_uncommitted (the default) delivers everything.
func TestShareGroupReadCommitted(t *testing.T) {
	t.Parallel()
	s := startAdminBroker(t, shareProps)
	admCreateTopic(t, s, "txn-share", 1, nil)
	for _, g := range []string{"rc", "ru"} {
		setShareEarliest(t, s, g)
	}
	setShareGroupConfig(t, s, "rc", "share.isolation.level", "read_committed")
	bad := kmsg.NewPtrIncrementalAlterConfigsRequest()
	br := kmsg.NewIncrementalAlterConfigsRequestResource()
	br.ResourceType, br.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "rc"
	bc := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
	bc.Name, bc.Value = "share.isolation.level", strPtr("serializable")
	br.Configs = append(br.Configs, bc)
	bad.Resources = append(bad.Resources, br)
	if r := admSend[*kmsg.IncrementalAlterConfigsResponse](t, s, bad, 1).Resources[0]; r.ErrorCode != kerr.InvalidConfig.Code || !strings.Contains(admShow(r.ErrorMessage), "serializable") {
		t.Errorf("share.isolation.level=serializable: %v %s, want INVALID_CONFIG naming the value", kerr.ErrorForCode(r.ErrorCode), admShow(r.ErrorMessage))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tx := admClient(t, s, kgo.TransactionalID("share-rc"), kgo.DefaultProduceTopic("txn-share"))
	plain := admClient(t, s, kgo.DefaultProduceTopic("txn-share"))
	txn := func(prefix string, n int, commit bool) {
		t.Helper()
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i++ {
			if err := tx.ProduceSync(ctx, kgo.StringRecord(fmt.Sprintf("%s-%d", prefix, i))).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := tx.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	produce := func(v string) {
		t.Helper()
		if err := plain.ProduceSync(ctx, kgo.StringRecord(v)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	txn("c1", 3, true)
	txn("a1", 4, false)
	produce("p1")
	txn("c2", 2, true)
	txn("a2", 2, false)
	produce("p2")
	committed := []string{"c1-0", "c1-1", "c1-2", "c2-0", "c2-1", "p1", "p2"}

	if got := shareDrain(t, s, "rc", "txn-share", len(committed), 3*time.Second); strings.Join(got, " ") != strings.Join(committed, " ") {
		t.Errorf("read_committed got %v, want %v", got, committed)
	}
	all := append([]string{"a1-0", "a1-1", "a1-2", "a1-3", "a2-0", "a2-1"}, committed...)
	sort.Strings(all)
	if got := shareDrain(t, s, "ru", "txn-share", len(all), 3*time.Second); strings.Join(got, " ") != strings.Join(all, " ") {
		t.Errorf("read_uncommitted got %v, want %v", got, all)
	}

	// An open transaction holds back what follows it (the LSO), until it
	// commits.
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(ctx, kgo.StringRecord("open-0")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	produce("p3")
	if got := shareNone(t, s, "rc", "txn-share", 5*time.Second); len(got) != 0 {
		t.Errorf("read_committed got %v while the transaction was open, want nothing", got)
	}
	if err := tx.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	if got := shareDrain(t, s, "rc", "txn-share", 2, 3*time.Second); strings.Join(got, " ") != "open-0 p3" {
		t.Errorf("read_committed after the commit got %v, want [open-0 p3]", got)
	}
	// The aborted records were archived, not left in flight: nothing is
	// redelivered to the group, and its start offset is past the end.
	if got := shareNone(t, s, "rc", "txn-share", 5*time.Second); len(got) != 0 {
		t.Errorf("read_committed redelivered %v", got)
	}
}
