package replica

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/tributary-io/tributary/broker/log"
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
	if _, err := p.AppendMarker(pid, 0, false, 0, 1); err != nil {
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

// txnBatch appends a batch of producer pid with one keyed record, in a
// transaction when txn.
func txnBatch(t *testing.T, p *Partition, pid int64, seq int32, txn bool, key, value string) {
	t.Helper()
	opts := record.DefaultBuildOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = pid, 0, seq, txn
	opts.BaseTimestamp = testNow.UnixMilli()
	b, err := record.Build(opts, record.NewRecords(record.KV{Key: []byte(key), Value: []byte(value)}))
	if err != nil {
		t.Fatal(err)
	}
	if txn {
		_, g := p.BeginTxnVerification(pid, 0)
		_, err = p.AppendTxnAsLeader(b, nil, g)
	} else {
		_, err = p.AppendAsLeader(b)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// markersIn are the (producer, offset) of the control batches in the
// partition's segment files.
func markersIn(t *testing.T, dir string) map[[2]int64]bool {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[[2]int64]bool{}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for b, rest, ok := record.Split(data); ok; b, rest, ok = record.Split(rest) {
			if b.Control() && b.RecordCount() > 0 {
				out[[2]int64{b.ProducerID(), b.BaseOffset()}] = true
			}
		}
	}
	return out
}

// checkTxnIndex: the LSO reached the high watermark (no transaction left
// open by a marker gone), every aborted entry in memory has its marker in
// the log, and the .txnindex files hold exactly the entries in memory.
func checkTxnIndex(t *testing.T, p *Partition, when string) {
	t.Helper()
	// Every transaction ended: the LSO is the log end (a single
	// replica's high watermark).
	if lso, end := p.LastStableOffset(), p.Log.LogEndOffset(); lso != end {
		t.Errorf("%s: LSO %d, log end %d (high watermark %d)", when, lso, end, p.HighWatermark())
	}
	dir := p.Log.Dir()
	markers := markersIn(t, dir)
	p.txns.mu.Lock()
	mem := map[[2]int64]bool{}
	for _, c := range p.txns.aborted {
		mem[[2]int64{c.ProducerID, c.LastOffset}] = true
	}
	p.txns.mu.Unlock()
	disk := map[[2]int64]bool{}
	for _, f := range txnIndexFiles(t, dir) {
		entries, err := readTxnIndex(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range entries {
			disk[[2]int64{c.ProducerID, c.LastOffset}] = true
		}
	}
	for k := range mem {
		if !markers[k] {
			t.Errorf("%s: aborted transaction %v in the index, its marker is gone", when, k)
		}
	}
	if fmt.Sprint(mem) != fmt.Sprint(disk) {
		t.Errorf("%s: aborted index in memory %v, in the .txnindex files %v", when, mem, disk)
	}
}

// TestTxnIndexCleanCrash, on a real partition (its TxnView, its
// .txnindex files, its producer snapshots): a transaction open in a
// snapshot, then aborted, then cleaned away with delete.retention.ms 0.
// After each cleaning a kill -9 copy of the files reopens, with and
// without the producer snapshots: the LSO is the log end, no aborted
// entry outlives its marker (a replay of the kept marker re-adds the
// forgotten entry, to memory and files alike), and the files match
// memory. The marker waits for the snapshot holding its transaction open
// to go, then gets its horizon and goes.
//
// It fails if forgetAborted leaves the files as they are. It does not
// catch a missing snapshot hold: the producer's later commit marker,
// kept with its last (emptied) batch, closes the transaction the
// snapshot left open when the replay reaches it.
func TestTxnIndexCleanCrash(t *testing.T) {
	root := t.TempDir()
	d := testDir(t, root)
	defer d.Close()
	cfg := log.DefaultConfig()
	cfg.Compact, cfg.DeleteRetentionMs = true, 0
	if _, err := d.Create(testTP, cfg); err != nil {
		t.Fatal(err)
	}
	p := testPartition(t, d)
	defer p.Close()
	txnBatch(t, p, 7, 0, true, "a", "aborted")
	if err := p.MaintainProducers(24 * time.Hour); err != nil { // a snapshot with the transaction open
		t.Fatal(err)
	}
	if _, err := p.AppendMarker(7, 0, false, 0, 1); err != nil {
		t.Fatal(err)
	}
	txnBatch(t, p, 7, 1, true, "b", "b1")
	if _, err := p.AppendMarker(7, 0, true, 0, 1); err != nil {
		t.Fatal(err)
	}
	txnBatch(t, p, -1, 0, false, "b", "b2")
	txnBatch(t, p, -1, 0, false, "a", "a2")
	if err := p.Log.Roll(); err != nil {
		t.Fatal(err)
	}
	txnBatch(t, p, -1, 0, false, "c", "c1")
	checkTxnIndex(t, p, "before cleaning")
	if len(txnIndexFiles(t, p.Log.Dir())) == 0 {
		t.Fatal("no .txnindex file for the aborted transaction")
	}

	reopen := func(when string, snapshots bool) {
		t.Helper()
		crashed := crashCopy(t, root)
		if !snapshots {
			matches, _ := filepath.Glob(filepath.Join(crashed, "*", "*.snapshot"))
			more, _ := filepath.Glob(filepath.Join(crashed, "*", "*", "*.snapshot"))
			for _, m := range append(matches, more...) {
				os.Remove(m)
			}
		}
		d2 := testDir(t, crashed)
		defer d2.Close()
		p2 := testPartition(t, d2)
		defer p2.Close()
		checkTxnIndex(t, p2, fmt.Sprintf("%s, reopened (snapshots %v)", when, snapshots))
	}
	now := testNow
	forgotten, removed := false, int64(0)
	for pass := range 6 {
		if pass == 3 {
			// Newer snapshots replace the one holding the aborted
			// transaction open: its marker may go now.
			for i := 0; slices.Contains(snapshotOffsets(t, p), 1); i++ {
				if i == 10 {
					t.Fatalf("the snapshot at 1 is still there: %v", snapshotOffsets(t, p))
				}
				if err := p.Log.Roll(); err != nil {
					t.Fatal(err)
				}
				txnBatch(t, p, -1, 0, false, fmt.Sprint("f", i), "filler")
				if err := p.MaintainProducers(24 * time.Hour); err != nil {
					t.Fatal(err)
				}
			}
		}
		res, err := p.Log.Clean(context.Background(), now, 0, p.LastStableOffset())
		if err != nil {
			t.Fatal(err)
		}
		when := fmt.Sprintf("cleaning %d (%d markers removed)", pass, res.MarkersRemoved)
		checkTxnIndex(t, p, when)
		forgotten = forgotten || len(txnIndexFiles(t, p.Log.Dir())) == 0
		removed += res.MarkersRemoved
		reopen(when, true)
		reopen(when, false)
		now = now.Add(time.Second)
	}
	if !forgotten {
		t.Error("the aborted transaction never left the .txnindex files")
	}
	if markersIn(t, p.Log.Dir())[[2]int64{7, 1}] || removed == 0 {
		t.Errorf("the abort marker was not removed (%d markers removed)", removed)
	}
}
