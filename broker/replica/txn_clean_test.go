package replica

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker/record"
)

// abortTxn appends a transaction of producer pid and its abort marker;
// it returns the marker's offset.
func abortTxn(t *testing.T, p *Partition, pid int64, seq int32) int64 {
	t.Helper()
	opts := record.DefaultBuildOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = pid, 0, seq, true
	opts.BaseTimestamp = testNow.UnixMilli()
	b, err := record.Build(opts, record.NewRecords(record.KV{Value: []byte("aborted")}))
	if err != nil {
		t.Fatal(err)
	}
	_, g := p.BeginTxnVerification(pid, 0)
	if _, err := p.AppendTxnAsLeader(b, nil, g); err != nil {
		t.Fatal(err)
	}
	at := p.Log.LogEndOffset()
	if _, err := p.AppendMarker(pid, 0, false, 0); err != nil {
		t.Fatal(err)
	}
	return at
}

func txnIndexFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), txnIndexSuffix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestForgetAbortedOffTheLock: while the cleaner's forgetAborted rewrites
// the .txnindex files (directory scan, fsyncs), fetches (the LSO, the
// aborted transactions) and appends go on; the entries leave memory and
// the files once it returns.
func TestForgetAbortedOffTheLock(t *testing.T) {
	root := t.TempDir()
	d := testDir(t, root)
	p := testPartition(t, d)
	marker := abortTxn(t, p, 7, 0)
	dir := p.Log.Dir()
	if files := txnIndexFiles(t, dir); len(files) != 1 {
		t.Fatalf("index files after an abort: %v", files)
	}
	entered, release := make(chan struct{}), make(chan struct{})
	forgetAbortedIOHook = func() { close(entered); <-release }
	defer func() { forgetAbortedIOHook = nil }()
	done := make(chan error, 1)
	go func() { done <- p.forgetAborted([][2]int64{{7, marker}}) }()
	<-entered
	others := make(chan struct{})
	go func() {
		defer close(others)
		p.LastStableOffset()
		p.AbortedTxns(0, p.Log.LogEndOffset())
		mustProduce(t, p, -1, 0, 0, 1)
	}()
	select {
	case <-others:
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("a fetch or an append waited for forgetAborted's file rewrite")
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := p.AbortedTxns(0, p.Log.LogEndOffset()); len(got) != 0 {
		t.Fatalf("aborted transactions after forgetAborted: %v", got)
	}
	if files := txnIndexFiles(t, dir); len(files) != 0 {
		t.Fatalf("index files after forgetAborted: %v", files)
	}
	p.Close()
	d.Close()
}
