package txn_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testcluster"
)

// streamsApp is one instance of testdata/EosWordCount.java: a JVM that
// can be killed with kill -9 and started again on the same state
// directory (so with the same process id and transactional ids).
type streamsApp struct {
	t    *testing.T
	args []string
	java string
	name string

	mu      sync.Mutex
	out     strings.Builder
	running int    // how many times this incarnation printed "STATE RUNNING"
	txnIDs  string // the prefix of its transactional ids: application.id-processId-
	cmd     *exec.Cmd
	done    chan struct{}
}

func (a *streamsApp) start() {
	a.t.Helper()
	a.cmd = exec.Command(a.java, a.args...)
	stdout, err := a.cmd.StdoutPipe()
	if err != nil {
		a.t.Fatal(err)
	}
	a.cmd.Stderr = &lockedWriter{a: a}
	if err := a.cmd.Start(); err != nil {
		a.t.Fatal(err)
	}
	a.done = make(chan struct{})
	a.mu.Lock()
	a.running = 0
	a.mu.Unlock()
	go func(done chan struct{}) {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			a.mu.Lock()
			fmt.Fprintf(&a.out, "%s: %s\n", a.name, sc.Text())
			if sc.Text() == "STATE RUNNING" {
				a.running++
			}
			if name, ok := strings.CutPrefix(sc.Text(), "THREAD "); ok {
				if i := strings.LastIndex(name, "-StreamThread-"); i > 0 {
					a.txnIDs = name[:i+1]
				}
			}
			a.mu.Unlock()
		}
		a.cmd.Wait()
		close(done)
	}(a.done)
}

type lockedWriter struct{ a *streamsApp }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.a.mu.Lock()
	defer w.a.mu.Unlock()
	for _, l := range strings.SplitAfter(string(p), "\n") {
		if l != "" {
			fmt.Fprintf(&w.a.out, "%s! %s", w.a.name, l)
		}
	}
	return len(p), nil
}

func (a *streamsApp) txnPrefix() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.txnIDs
}

func (a *streamsApp) runningCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.running
}

func (a *streamsApp) kill() {
	a.cmd.Process.Kill()
	<-a.done
}

// stop is a clean shutdown (SIGTERM runs KafkaStreams.close), so that no
// transaction of the application stays open.
func (a *streamsApp) stop() {
	a.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-a.done:
	case <-time.After(20 * time.Second):
		a.kill()
	}
}

func (a *streamsApp) log() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.out.String()
}

// TestKafkaStreamsExactlyOnce runs a stateful Kafka Streams 4.4
// application with processing.guarantee=exactly_once_v2
// (testdata/EosWordCount.java: a repartition topic, a count store backed by
// a changelog topic, an output topic) as two instances, feeds it known
// input in three rounds, and kills one instance with kill -9 while it
// processes the second round and the broker during the third. Each
// instance and the broker come back on their data. With the record cache
// off every input record yields one output record, so what a
// read_committed consumer reads must be, for each word seen n times,
// exactly the counts 1..n in order: what a run without faults produces. A
// duplicate, a lost record, an aborted write read or a store restored
// wrongly from its changelog each break that sequence.
func TestKafkaStreamsExactlyOnce(t *testing.T) {
	t.Parallel()
	w := startWordCount(t)
	b := testbroker.Start(t, txnProps...)
	createTopic(t, b.Addr(), "wc-in", 4)
	createTopic(t, b.Addr(), "wc-out", 2)
	w.step("broker started")
	w.run(b.Addr(), 1,
		func() { w.waitOutput() },
		// Round 2 is being processed: kill -9 one instance and start it
		// again on its state directory (its transactional ids fence the
		// killed one's open transactions).
		func() { w.killApp(0) },
		// Round 3 is being processed: kill -9 the broker and restart it.
		func() {
			w.midTransaction("wordcount-")
			w.step("kill -9 the broker")
			b.Kill()
			b.Restart()
		})
}

// wordCount is a run of testdata/EosWordCount.java's two instances.
type wordCount struct {
	t       *testing.T
	k       testbroker.JDK
	classes string
	start   time.Time
	addr    string
	apps    []*streamsApp
	in      *kgo.Client
	want    map[string]int64
	sent    int
}

func startWordCount(t *testing.T) *wordCount {
	w := &wordCount{t: t, start: time.Now(), want: map[string]int64{}}
	w.k = testbroker.FindJDK(t).WithKafkaStreams(t)
	w.classes = w.k.Compile(t, filepath.Join(testbroker.RepoRoot(), "broker", "txn", "testdata", "EosWordCount.java"))
	return w
}

func (w *wordCount) step(what string) { w.t.Logf("%6.1fs %s", time.Since(w.start).Seconds(), what) }

// run starts both instances on the cluster at addr (internal topics of
// replication factor rf) and sends one round of input before each fault,
// which runs while the application processes that round; then it checks
// the output.
func (w *wordCount) run(addr string, rf int, faults ...func()) {
	t := w.t
	w.addr = addr
	w.apps = make([]*streamsApp, 2)
	for i := range w.apps {
		name := string(rune('a' + i))
		state := filepath.Join(t.TempDir(), "state")
		if err := os.MkdirAll(state, 0o755); err != nil {
			t.Fatal(err)
		}
		w.apps[i] = &streamsApp{t: t, java: w.k.Java, name: name,
			args: append(w.k.JVMArgs(w.k.Classpath(w.classes)), "EosWordCount", addr, "wordcount", name, state, "wc-in", "wc-out", fmt.Sprint(rf))}
		w.apps[i].start()
	}
	defer func() {
		for _, a := range w.apps {
			if a.cmd.ProcessState == nil {
				a.kill()
			}
		}
		if t.Failed() {
			for _, a := range w.apps {
				t.Logf("instance %s:\n%s", a.name, lastN(a.log(), 60))
			}
		}
	}()
	waitFor(t, 90*time.Second, "both instances RUNNING", func() bool {
		return w.apps[0].runningCount() > 0 && w.apps[1].runningCount() > 0
	})
	w.step("both instances running")

	var err error
	w.in, err = kgo.NewClient(seeds(addr), kgo.RecordRetries(100), kgo.RecordDeliveryTimeout(time.Minute), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer w.in.Close()
	for i, fault := range faults {
		w.round()
		w.step(fmt.Sprintf("round %d sent", i+1))
		fault()
	}

	var got map[string][]int64
	waitFor(t, 120*time.Second, "every count in the output", func() bool {
		got = readCounts(t, addr, 2*time.Second, 0)
		for word, n := range w.want {
			if c := got[word]; len(c) == 0 || c[len(c)-1] < n {
				return false
			}
		}
		return true
	})
	w.step("every count in the output")
	// Stop both cleanly and read once more, to the end: nothing may follow.
	for _, a := range w.apps {
		a.stop()
	}
	w.step("instances stopped")
	got = readCounts(t, addr, 2*time.Second, w.sent)
	total := 0
	for word, n := range w.want {
		c := got[word]
		total += len(c)
		ok := int64(len(c)) == n
		for i := 0; ok && i < len(c); i++ {
			ok = c[i] == int64(i+1)
		}
		if !ok {
			t.Errorf("word %s seen %d times: read_committed counts %v, want 1..%d once each", word, n, c, n)
		}
	}
	if total != w.sent || len(got) != len(w.want) {
		t.Errorf("read_committed output: %d records for %d words, want %d for %d", total, len(got), w.sent, len(w.want))
	}
	w.step("read")
	if !t.Failed() {
		t.Logf("%d input records, %d words, %d faults: output exactly 1..n per word", w.sent, len(w.want), len(faults))
	}
}

const words, perRound = 12, 600

// round sends perRound input records.
func (w *wordCount) round() {
	t := w.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rs := make([]*kgo.Record, perRound)
	for i := range rs {
		// Uneven counts per word, spread over every input partition.
		word := fmt.Sprintf("w%02d", (w.sent*7+w.sent/words)%words)
		rs[i] = &kgo.Record{Topic: "wc-in", Key: []byte(fmt.Sprint(w.sent)), Value: []byte(word)}
		w.want[word]++
		w.sent++
	}
	if err := w.in.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("input: %v", err)
	}
}

func (w *wordCount) waitOutput() {
	waitFor(w.t, 60*time.Second, "the first output", func() bool { return len(readCounts(w.t, w.addr, time.Second, 0)) > 0 })
}

// midTransaction waits until a transaction of the application whose id
// starts with prefix ("wordcount-" for any) is open and has written output
// records (wc-out's leader shows its producer with an open transaction),
// so that the fault that follows lands inside it: without the transaction
// machinery, those records would be read.
func (w *wordCount) midTransaction(prefix string) {
	t := w.t
	cl, err := kgo.NewClient(seeds(w.addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	waitFor(t, 60*time.Second, "an open transaction of "+prefix+"* with output", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		listed, err := adm.ListTransactions(ctx, nil, []string{"Ongoing"})
		if err != nil {
			return false
		}
		ids := map[int64]string{}
		for id, l := range listed {
			if strings.HasPrefix(id, prefix) {
				ids[l.ProducerID] = id
			}
		}
		if len(ids) == 0 {
			return false
		}
		ps, err := adm.DescribeProducers(ctx, kadm.TopicsSet{"wc-out": {0: {}, 1: {}}})
		if err != nil {
			return false
		}
		found := false
		ps.EachProducer(func(p kadm.DescribedProducer) {
			if id, ok := ids[p.ProducerID]; ok && p.CurrentTxnStartOffset >= 0 && !found {
				found = true
				w.step(fmt.Sprintf("transaction %s open, with output in wc-out-%d from offset %d", id, p.Partition, p.CurrentTxnStartOffset))
			}
		})
		return found
	})
}

// killApp kills instance i with kill -9 inside one of its transactions and
// starts it again on its state directory.
func (w *wordCount) killApp(i int) {
	prefix := w.apps[i].txnPrefix()
	if prefix == "" {
		w.t.Fatalf("instance %s printed no thread name", w.apps[i].name)
	}
	w.midTransaction(prefix)
	w.step(fmt.Sprintf("kill -9 instance %s", w.apps[i].name))
	w.apps[i].kill()
	w.apps[i].start()
	waitFor(w.t, 90*time.Second, "the instance RUNNING again", func() bool { return w.apps[i].runningCount() > 0 })
	w.step(fmt.Sprintf("instance %s running again", w.apps[i].name))
}

// readCounts reads wc-out from the start, read_committed, until it has
// read atLeast records and then a fetch that waited quiet long returns
// nothing: the counts per word, in offset order. (A first fetch can come
// back empty while the client still looks for the leader, so the count
// expected, not the first silence, ends the final read.)
func readCounts(t *testing.T, addr string, quiet time.Duration, atLeast int) map[string][]int64 {
	t.Helper()
	cl, err := kgo.NewClient(seeds(addr), kgo.ConsumeTopics("wc-out"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(quiet/2))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := map[string][]int64{}
	read := 0
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), quiet)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			read++
			if len(r.Value) != 8 {
				t.Errorf("output record %s/%d@%d: value of %d bytes, not a long", r.Topic, r.Partition, r.Offset, len(r.Value))
				return
			}
			out[string(r.Key)] = append(out[string(r.Key)], int64(binary.BigEndian.Uint64(r.Value)))
		})
		if n == 0 && read >= atLeast {
			break
		}
	}
	return out
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v", what, d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func lastN(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestKafkaStreamsExactlyOnceCluster is the word count on 3 nodes
// (make test-long, TRIBUTARY_TEST_LONG=1): every topic replicated three
// ways with min.insync.replicas 2, and a fault while each round is
// processed: an instance killed, the transaction coordinator of one of the
// application's producers killed, the leader of an output partition killed,
// the group coordinator killed, the other instance killed, and the
// transaction coordinator paused (SIGSTOP) for 4 s. Each comes back; the
// output read_committed must be exactly the fault-free one.
func TestKafkaStreamsExactlyOnceCluster(t *testing.T) {
	if os.Getenv("TRIBUTARY_TEST_LONG") == "" {
		t.Skip("make test-long (TRIBUTARY_TEST_LONG=1): the word count on 3 nodes under coordinator and leader kills")
	}
	t.Parallel()
	w := startWordCount(t)
	c := testcluster.Start(t, 3, "transaction.state.log.replication.factor=3", "transaction.state.log.num.partitions=5",
		"offsets.topic.replication.factor=3", "transaction.abort.timed.out.transaction.cleanup.interval.ms=200",
		"group.initial.rebalance.delay.ms=0", "min.insync.replicas=2")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for topic, n := range map[string]int32{"wc-in": 4, "wc-out": 2} {
		resp, err := c.Admin().CreateTopic(ctx, n, 3, nil, topic)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatal(err)
		}
		c.Leaders(topic, 20*time.Second)
	}
	w.step("cluster started")
	admin, err := kgo.NewClient(seeds(c.Bootstrap()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	restart := func(what string, id int32) {
		w.step(fmt.Sprintf("kill -9 node %d, %s", id, what))
		c.Node(id).Kill()
		time.Sleep(time.Second)
		c.Node(id).Restart()
	}
	// txnCoordinator is the coordinator of one of the application's
	// transactional ids.
	txnCoordinator := func() int32 {
		w.midTransaction("wordcount-")
		listed, err := adm.ListTransactions(ctx, nil, []string{"Ongoing"})
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range listed.Sorted() {
			if strings.HasPrefix(l.TxnID, "wordcount-") {
				return l.Coordinator
			}
		}
		t.Fatalf("no transactional id of the application in %v", listed.TransactionalIDs())
		return 0
	}
	w.run(c.Bootstrap(), 3,
		w.waitOutput,
		func() { w.killApp(0) },
		func() { restart("a transaction coordinator of the application", txnCoordinator()) },
		func() {
			w.midTransaction("wordcount-")
			restart("the leader of wc-out-0", c.Leaders("wc-out", 20*time.Second)[0])
		},
		func() {
			w.midTransaction("wordcount-")
			cs := adm.FindGroupCoordinators(ctx, "wordcount")
			r, ok := cs["wordcount"]
			if !ok || r.Err != nil {
				t.Fatalf("FindCoordinator wordcount: %v", r.Err)
			}
			restart("the group coordinator", r.NodeID)
		},
		func() { w.killApp(1) },
		func() {
			id := txnCoordinator()
			w.step(fmt.Sprintf("pause node %d, a transaction coordinator, for 4 s", id))
			c.Node(id).Signal(syscall.SIGSTOP)
			time.Sleep(4 * time.Second)
			c.Node(id).Signal(syscall.SIGCONT)
		})
}
