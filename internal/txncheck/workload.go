package txncheck

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Workload runs transactional producers against a topic, Jepsen style:
// each producer runs transactions one after the other, each writing
// Records unique values spread over the topic's partitions, and commits or
// (with probability AbortRatio) aborts it. What the client learns decides
// the outcome recorded: a commit that returned nil is Committed; an abort,
// and a commit franz-go did not send, are Aborted whatever they returned;
// a commit sent that returned an error is Unknown (the client cannot
// tell). After any error the producer's client is replaced by a new one
// with the same transactional id, whose InitProducerId fences the old one.
//
// A read_committed consumer reads the topic while the producers run. Its
// reads go to Check with the final read (an aborted value it read, or a
// value it read at another offset than the final read, is an anomaly
// there too), and it counts as past the LSO a record at or past the last
// stable offset of the fetch that returned it, or read before its
// transaction's commit was even requested (an uncommitted read: the
// check that can see a wrong LSO, which the same fetch's LSO cannot).
//
// With UncommittedControl a second live consumer reads read_uncommitted,
// checked by CheckControl: it must show aborted or uncommitted reads, or
// the live checks could not fail.
type Workload struct {
	Seeds      []string
	Topic      string
	Partitions int32
	Producers  int
	Records    int     // per transaction
	AbortRatio float64 // 0..1
	// TxnTimeout is each producer's transaction.timeout.ms: a transaction
	// whose producer was replaced is aborted by the coordinator within it.
	TxnTimeout time.Duration
	// Opts are added to every client (producers and the consumer).
	Opts []kgo.Opt
	// Logf, if set, is told of unknown outcomes.
	Logf func(format string, args ...any)
	// UncommittedControl adds a read_uncommitted live consumer
	// (CheckControl).
	UncommittedControl bool

	mu        sync.Mutex
	txns      []Txn
	requested map[string]time.Time // transaction ID → when its commit was requested
	pastLSO   []string
	liveReads []LiveRead   // the read_committed live consumer's
	control   []LiveRead   // the read_uncommitted one's
	live      atomic.Int64 // records the live consumer read
}

// LiveRead is a Read by a live consumer, with when the client got it.
type LiveRead struct {
	Read
	At time.Time
}

// Run runs the producers and the live consumer until ctx ends, then waits
// for them.
func (w *Workload) Run(ctx context.Context) error {
	if w.Producers <= 0 || w.Records <= 0 || w.Partitions <= 0 {
		return fmt.Errorf("txncheck: workload needs producers, records and partitions (%d, %d, %d)", w.Producers, w.Records, w.Partitions)
	}
	var wg sync.WaitGroup
	errs := make(chan error, w.Producers+1)
	for i := range w.Producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.producer(ctx, i); err != nil {
				errs <- err
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := w.consume(ctx, true); err != nil {
			errs <- err
		}
	}()
	if w.UncommittedControl {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.consume(ctx, false); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// History is the transactions run so far.
func (w *Workload) History() []Txn {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]Txn(nil), w.txns...)
}

// PastLSO are the records the live read_committed consumer got at or past
// their fetch's last stable offset.
func (w *Workload) PastLSO() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.pastLSO...)
}

// LiveReads is how many records the live consumer read.
func (w *Workload) LiveReads() int64 { return w.live.Load() }

func (w *Workload) logf(format string, args ...any) {
	if w.Logf != nil {
		w.Logf(format, args...)
	}
}

func (w *Workload) client(id string) (*kgo.Client, error) {
	opts := append([]kgo.Opt{kgo.SeedBrokers(w.Seeds...), kgo.TransactionalID(id),
		kgo.TransactionTimeout(w.TxnTimeout), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(w.Topic)}, w.Opts...)
	return kgo.NewClient(opts...)
}

func (w *Workload) producer(ctx context.Context, i int) error {
	id := fmt.Sprintf("txncheck-%d", i)
	rng := rand.New(rand.NewSource(int64(i) + time.Now().UnixNano()))
	cl, err := w.client(id)
	if err != nil {
		return err
	}
	defer func() { cl.Close() }()
	for n := 0; ctx.Err() == nil; n++ {
		t := Txn{ID: fmt.Sprintf("%s/%d", id, n), Producer: i, Outcome: Unknown}
		commit := rng.Float64() >= w.AbortRatio
		for k := range w.Records {
			t.Values = append(t.Values, fmt.Sprintf("%s-%d-%d", id, n, k))
		}
		var failed error
		t.Outcome, failed = w.runTxn(ctx, cl, t, commit, rng)
		t.End = time.Now()
		w.mu.Lock()
		w.txns = append(w.txns, t)
		w.mu.Unlock()
		if failed != nil {
			w.logf("transaction %s: %s (%v); a new client fences the old one", t.ID, t.Outcome, failed)
			cl.Close()
			if cl, err = w.client(id); err != nil {
				return err
			}
		}
	}
	return nil
}

// runTxn writes one transaction and says what the client knows of its
// end, and the error that makes the client unusable, if any.
//
// Only a commit that was sent can have committed: a transaction the
// workload meant to abort (or had to, a produce having failed), and one
// whose commit franz-go did not send (OperationNotAttempted: the producer
// id failed first), is Aborted whatever EndTransaction returned. The
// coordinator never got a commit for it, and the replacement client's
// InitProducerId, or the transaction timeout, aborts it. Recording it
// Unknown would accept it read whole: the aborted read a failover bug
// makes would pass.
func (w *Workload) runTxn(ctx context.Context, cl *kgo.Client, t Txn, commit bool, rng *rand.Rand) (Outcome, error) {
	// Bounded by the transaction timeout: a paused or dead broker ends
	// the attempt, not the workload.
	tctx, cancel := context.WithTimeout(context.Background(), w.TxnTimeout)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		return Aborted, err // nothing was produced
	}
	var failed atomic.Bool
	start := rng.Int31n(w.Partitions)
	for k, v := range t.Values {
		r := &kgo.Record{Value: []byte(v), Partition: (start + int32(k)) % w.Partitions}
		cl.Produce(tctx, r, func(_ *kgo.Record, err error) {
			if err != nil {
				failed.Store(true)
			}
		})
	}
	if err := cl.Flush(tctx); err != nil || failed.Load() {
		commit = false
	}
	if commit {
		// Before the request: a read at or after this instant may be
		// committed, any earlier one is not.
		w.mu.Lock()
		if w.requested == nil {
			w.requested = map[string]time.Time{}
		}
		w.requested[t.ID] = time.Now()
		w.mu.Unlock()
	}
	err := cl.EndTransaction(tctx, kgo.TransactionEndTry(commit))
	return outcome(commit, err), err
}

// outcome is what a transaction's end tells: see runTxn.
func outcome(commit bool, endErr error) Outcome {
	switch {
	case !commit || errors.Is(endErr, kerr.OperationNotAttempted):
		return Aborted
	case endErr != nil:
		return Unknown
	}
	return Committed
}

// consume reads the topic while the producers run: read_committed, or
// read_uncommitted for the control.
func (w *Workload) consume(ctx context.Context, committed bool) error {
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	opts := append([]kgo.Opt{kgo.SeedBrokers(w.Seeds...), kgo.ConsumeTopics(w.Topic),
		kgo.FetchIsolationLevel(iso), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(200 * time.Millisecond)}, w.Opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	for ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		at := time.Now()
		var reads []LiveRead
		var past []string
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			for _, r := range p.Records {
				reads = append(reads, LiveRead{Read{string(r.Value), r.Partition, r.Offset}, at})
				if committed && r.Offset >= p.LastStableOffset {
					past = append(past, fmt.Sprintf("%q at %d@%d, last stable offset %d", r.Value, p.Partition, r.Offset, p.LastStableOffset))
				}
			}
		})
		w.mu.Lock()
		if committed {
			w.live.Add(int64(len(reads)))
			w.liveReads = append(w.liveReads, reads...)
			w.pastLSO = append(w.pastLSO, past...)
		} else {
			w.control = append(w.control, reads...)
		}
		w.mu.Unlock()
	}
	return nil
}

// Check is Check of the workload's history against reads (the final
// read) and the live consumer's reads, with the live reads past the LSO
// and before their commit was requested counted as PastLSO.
func (w *Workload) Check(reads []Read) Result {
	w.mu.Lock()
	txns, requested := append([]Txn(nil), w.txns...), w.requested
	live, past := append([]LiveRead(nil), w.liveReads...), append([]string(nil), w.pastLSO...)
	w.mu.Unlock()
	res := CheckLive(txns, requested, live, reads)
	res.PastLSO += len(past)
	for _, p := range past {
		if len(res.Examples) < 10 {
			res.Examples = append(res.Examples, "read past the last stable offset: "+p)
		}
	}
	return res
}

// CheckControl is CheckLive of the read_uncommitted live consumer's reads
// alone (UncommittedControl): they must show aborted or uncommitted reads.
func (w *Workload) CheckControl() Result {
	w.mu.Lock()
	defer w.mu.Unlock()
	return CheckLive(w.txns, w.requested, w.control, nil)
}

// CheckLive is Check of txns against the live reads and the final ones
// together, plus the live reads of a value before its transaction's commit
// was requested (requested: transaction ID → when), counted as PastLSO:
// no correct broker shows a committed read a value then. A value of a
// transaction never committed is an aborted read, or an unknown one's,
// not counted here.
func CheckLive(txns []Txn, requested map[string]time.Time, live []LiveRead, final []Read) Result {
	reads := make([]Read, 0, len(live)+len(final))
	for _, r := range live {
		reads = append(reads, r.Read)
	}
	reads = append(reads, final...)
	res := Check(txns, reads)
	owner := map[string]string{}
	for _, t := range txns {
		for _, v := range t.Values {
			owner[v] = t.ID
		}
	}
	for _, r := range live {
		id, ok := owner[r.Value]
		if !ok {
			continue
		}
		if at, ok := requested[id]; ok && r.At.Before(at) {
			res.PastLSO++
			if len(res.Examples) < 10 {
				res.Examples = append(res.Examples, fmt.Sprintf("uncommitted read: %q of transaction %s at %d@%d, %s before its commit was requested", r.Value, id, r.Partition, r.Offset, at.Sub(r.At)))
			}
		}
	}
	return res
}
