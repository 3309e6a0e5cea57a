package testcluster

// A Jepsen-queue-style workload: a producer sends records whose values are
// unique ("<name>-<seq>", seq counting from 0 in send order) and keeps a
// History of what it attempted and what the brokers acknowledged, so that a
// full read of the topic afterwards (score.go) can tell lost, duplicated,
// unexpected and reordered records apart from merely indeterminate ones.
//
// Concurrency: a Workload's producing goroutine and franz-go's promise
// goroutines write the recorder; the test goroutine reads it through the
// methods, any time. Stop and Wait belong to the test goroutine.

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Ack is where the brokers said they put an acknowledged record.
type Ack struct {
	Partition int32
	Offset    int64
}

// History is one producer's account of a run. A value in Attempted but not
// in Acked is indeterminate: it may or may not be in the topic.
type History struct {
	Name      string
	Attempted []string          // in sequence order
	Acked     map[string]Ack    // by value
	Failed    map[string]string // by value, the produce error
	DataLoss  []string          // the client's own data loss reports, "topic/partition"
}

// recorder collects a History while a producer runs; its counters are
// readable without the lock so that a test can poll them cheaply.
type recorder struct {
	mu   sync.Mutex
	hist History // mu must be held

	attempted, acks, errs atomic.Int64
	lastAck               atomic.Int64 // unix nanos, 0 before the first ack
}

func newRecorder(name string) *recorder {
	return &recorder{hist: History{Name: name, Acked: map[string]Ack{}, Failed: map[string]string{}}}
}

func (r *recorder) attempt(value string) {
	r.mu.Lock()
	r.hist.Attempted = append(r.hist.Attempted, value)
	r.mu.Unlock()
	r.attempted.Add(1)
}

func (r *recorder) ack(value string, a Ack) {
	r.mu.Lock()
	r.hist.Acked[value] = a
	r.mu.Unlock()
	r.lastAck.Store(time.Now().UnixNano())
	r.acks.Add(1)
}

func (r *recorder) fail(value, err string) {
	r.mu.Lock()
	r.hist.Failed[value] = err
	r.mu.Unlock()
	r.errs.Add(1)
}

func (r *recorder) dataLoss(where string) {
	r.mu.Lock()
	r.hist.DataLoss = append(r.hist.DataLoss, where)
	r.mu.Unlock()
}

// history is a copy, safe to keep while the producer runs on.
func (r *recorder) history() *History {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.hist
	h.Attempted = append([]string(nil), h.Attempted...)
	h.DataLoss = append([]string(nil), h.DataLoss...)
	h.Acked = make(map[string]Ack, len(r.hist.Acked))
	for v, a := range r.hist.Acked {
		h.Acked[v] = a
	}
	h.Failed = make(map[string]string, len(r.hist.Failed))
	for v, e := range r.hist.Failed {
		h.Failed[v] = e
	}
	return &h
}

// Attempted is how many records the producer has sent so far.
func (r *recorder) Attempted() int64 { return r.attempted.Load() }

// Acks is how many records the brokers have acknowledged so far.
func (r *recorder) Acks() int64 { return r.acks.Load() }

// Errors is how many records have failed so far (indeterminate, not lost).
func (r *recorder) Errors() int64 { return r.errs.Load() }

// LastAck is when the latest acknowledgement arrived; zero before the first.
func (r *recorder) LastAck() time.Time {
	if n := r.lastAck.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// AwaitAck waits until an acknowledgement arrives after since (a kill, say)
// and returns how long after since it came: the time produce took to
// resume, for the test to log. ok is false if none came within timeout or
// HangBound, whichever is longer: a hang, not a slow machine.
func (r *recorder) AwaitAck(since time.Time, timeout time.Duration) (after time.Duration, ok bool) {
	deadline := time.Now().Add(hangBound(timeout))
	for {
		if last := r.LastAck(); last.After(since) {
			return last.Sub(since), true
		}
		if time.Now().After(deadline) {
			return 0, false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// runs numbers the producers of one test process, for their default names.
var runs atomic.Int64

// WorkloadConfig says what a Workload produces.
type WorkloadConfig struct {
	Topic string
	// Name prefixes every value; it must be unique among the producers
	// of a topic. Default "w<n>" (Go) or "j<n>" (Java), n counting runs.
	Name string
	// Records is how many to send; 0 sends until Stop.
	Records int
	// Rate is records per second; 0 is as fast as the producer takes them.
	Rate float64
	// Key, if set, is every record's key, so all go to one hot partition;
	// otherwise each record is keyed by its value and the records spread
	// over the partitions.
	Key string
	// DeliveryTimeout is how long a record may wait for its
	// acknowledgement, retried all along, before it fails; default 2 min,
	// long enough to ride out a failover.
	DeliveryTimeout time.Duration
	// ClientOpts are added to the producer's (security).
	ClientOpts []kgo.Opt
}

func (cfg *WorkloadConfig) defaults(prefix string) {
	if cfg.Name == "" {
		cfg.Name = fmt.Sprintf("%s%d", prefix, runs.Add(1))
	}
	if cfg.DeliveryTimeout == 0 {
		cfg.DeliveryTimeout = 2 * time.Minute
	}
}

// Workload is a franz-go idempotent producer (acks=all, its default)
// sending unique values and recording their fate.
type Workload struct {
	*recorder
	cfg  WorkloadConfig
	cl   *kgo.Client
	stop chan struct{} // closed by Stop: send no more
	done chan struct{} // closed when every attempted record is resolved
	once sync.Once
}

// StartWorkload starts producing to the cluster at bootstrap
// (comma-separated addresses). It is stopped, if still running, when the
// test ends.
func StartWorkload(t testing.TB, bootstrap string, cfg WorkloadConfig) *Workload {
	t.Helper()
	cfg.defaults("w")
	w := &Workload{recorder: newRecorder(cfg.Name), cfg: cfg, stop: make(chan struct{}), done: make(chan struct{})}
	cl, err := kgo.NewClient(append([]kgo.Opt{
		kgo.SeedBrokers(strings.Split(bootstrap, ",")...),
		kgo.DefaultProduceTopic(cfg.Topic),
		kgo.RecordDeliveryTimeout(cfg.DeliveryTimeout),
		// Requests other than Produce (InitProducerID, Metadata) must
		// ride out a failover as long as the records do.
		kgo.RetryTimeout(cfg.DeliveryTimeout),
		// The default 5 s between metadata refreshes would hide how
		// fast the cluster fails over behind how slowly the client
		// notices.
		kgo.MetadataMinAge(100 * time.Millisecond),
		// A request to a paused broker (SIGSTOP) hangs until these run
		// out, and so does every record queued behind it; franz-go's
		// defaults (10 s + 10 s) can add up to most of a minute when a
		// metadata request lands on the paused broker too.
		kgo.ProduceRequestTimeout(5 * time.Second),
		kgo.RequestTimeoutOverhead(2 * time.Second),
		kgo.ProducerOnDataLossDetected(func(topic string, p int32) { w.dataLoss(fmt.Sprintf("%s/%d", topic, p)) }),
	}, cfg.ClientOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	w.cl = cl
	go w.run()
	// A test that ends early (a failure, nodes down) must not wait out
	// the delivery timeout: closing the client fails what is buffered.
	t.Cleanup(func() {
		w.once.Do(func() {
			close(w.stop)
			w.cl.Close()
			<-w.done
		})
	})
	return w
}

func (w *Workload) run() {
	defer func() {
		// Flush waits until every buffered record is acknowledged or
		// failed (the delivery timeout bounds it).
		w.cl.Flush(context.Background())
		close(w.done)
	}()
	var interval time.Duration
	if w.cfg.Rate > 0 {
		interval = time.Duration(float64(time.Second) / w.cfg.Rate)
	}
	start := time.Now()
	for seq := 0; w.cfg.Records == 0 || seq < w.cfg.Records; seq++ {
		if interval > 0 {
			// Paced from the start, not from the previous send, so
			// that a stall is followed by a catch-up, as in Jepsen.
			select {
			case <-w.stop:
				return
			case <-time.After(time.Until(start.Add(time.Duration(seq) * interval))):
			}
		}
		select {
		case <-w.stop:
			return
		default:
		}
		value := fmt.Sprintf("%s-%d", w.cfg.Name, seq)
		key := value
		if w.cfg.Key != "" {
			key = w.cfg.Key
		}
		w.attempt(value)
		// Background, not a context Stop cancels: a record once handed
		// to the client is the client's to resolve, never abandoned.
		w.cl.Produce(context.Background(), &kgo.Record{Key: []byte(key), Value: []byte(value)}, func(r *kgo.Record, err error) {
			if err != nil {
				w.fail(value, err.Error())
				return
			}
			w.ack(value, Ack{Partition: r.Partition, Offset: r.Offset})
		})
	}
}

// Wait waits until all Records are sent and resolved and returns the
// History. It is for a workload with Records set.
func (w *Workload) Wait(t testing.TB) *History {
	t.Helper()
	if w.cfg.Records == 0 {
		t.Fatal("Workload.Wait with no Records would wait forever; use Stop")
	}
	<-w.done
	w.finish()
	return w.history()
}

// Stop sends no more records, waits until those sent are acknowledged or
// failed, and returns the History.
func (w *Workload) Stop() *History {
	w.finish()
	return w.history()
}

func (w *Workload) finish() {
	w.once.Do(func() {
		close(w.stop)
		<-w.done
		w.cl.Close()
	})
}
