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

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testbroker"
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
	running int // how many times this incarnation printed "STATE RUNNING"
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
// processes the second round and the broker during the third. Each instance and the
// broker come back on their data. With the record cache off every input
// record yields one output record, so what a read_committed consumer reads
// must be, for each word seen n times, exactly the counts 1..n in order:
// what a run without faults produces. A duplicate, a lost record, an
// aborted write read or a store restored wrongly from its changelog each
// break that sequence.
func TestKafkaStreamsExactlyOnce(t *testing.T) {
	t.Parallel()
	start := time.Now()
	step := func(what string) { t.Logf("%6.1fs %s", time.Since(start).Seconds(), what) }
	k := testbroker.FindJDK(t).WithKafkaStreams(t)
	classes := k.Compile(t, filepath.Join(testbroker.RepoRoot(), "broker", "txn", "testdata", "EosWordCount.java"))
	b := testbroker.Start(t, txnProps...)
	createTopic(t, b.Addr(), "wc-in", 4)
	createTopic(t, b.Addr(), "wc-out", 2)
	step("broker started")

	apps := make([]*streamsApp, 2)
	for i := range apps {
		name := string(rune('a' + i))
		state := filepath.Join(t.TempDir(), "state")
		if err := os.MkdirAll(state, 0o755); err != nil {
			t.Fatal(err)
		}
		apps[i] = &streamsApp{t: t, java: k.Java, name: name,
			args: append(k.JVMArgs(k.Classpath(classes)), "EosWordCount", b.Addr(), "wordcount", name, state, "wc-in", "wc-out")}
		apps[i].start()
	}
	defer func() {
		for _, a := range apps {
			if a.cmd.ProcessState == nil {
				a.kill()
			}
		}
		if t.Failed() {
			for _, a := range apps {
				t.Logf("instance %s:\n%s", a.name, lastN(a.log(), 60))
			}
		}
	}()
	waitFor(t, 60*time.Second, "both instances RUNNING", func() bool {
		return apps[0].runningCount() > 0 && apps[1].runningCount() > 0
	})

	in, err := kgo.NewClient(seeds(b.Addr()), kgo.RecordRetries(100), kgo.RecordDeliveryTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	const words, perRound = 12, 600
	want := map[string]int64{}
	sent := 0
	round := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		rs := make([]*kgo.Record, perRound)
		for i := range rs {
			// Uneven counts per word, spread over every input partition.
			w := fmt.Sprintf("w%02d", (sent*7+sent/words)%words)
			rs[i] = &kgo.Record{Topic: "wc-in", Key: []byte(fmt.Sprint(sent)), Value: []byte(w)}
			want[w]++
			sent++
		}
		if err := in.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("input: %v", err)
		}
	}

	step("both instances running")
	round()
	waitFor(t, 30*time.Second, "the first output", func() bool { return len(readCounts(t, b.Addr(), time.Second)) > 0 })
	// Round 2 is being processed: kill -9 one instance and start it
	// again on its state directory (its transactional ids fence the
	// killed one's open transactions).
	round()
	step("round 2 sent; kill -9 instance a")
	apps[0].kill()
	apps[0].start()
	waitFor(t, 60*time.Second, "instance a RUNNING again", func() bool { return apps[0].runningCount() > 0 })
	// Round 3 is being processed: kill -9 the broker and restart it.
	round()
	step("instance a running again, round 3 sent; kill -9 the broker")
	b.Kill()
	b.Restart()
	step("broker restarted")

	var got map[string][]int64
	waitFor(t, 90*time.Second, "every count in the output", func() bool {
		got = readCounts(t, b.Addr(), 2*time.Second)
		for w, n := range want {
			if c := got[w]; len(c) == 0 || c[len(c)-1] < n {
				return false
			}
		}
		return true
	})
	step("every count in the output")
	// Stop both cleanly and read once more, to the end: nothing may follow.
	for _, a := range apps {
		a.stop()
	}
	step("instances stopped")
	got = readCounts(t, b.Addr(), 2*time.Second)
	total := 0
	for w, n := range want {
		c := got[w]
		total += len(c)
		ok := int64(len(c)) == n
		for i := 0; ok && i < len(c); i++ {
			ok = c[i] == int64(i+1)
		}
		if !ok {
			t.Errorf("word %s seen %d times: read_committed counts %v, want 1..%d once each", w, n, c, n)
		}
	}
	if total != sent || len(got) != len(want) {
		t.Errorf("read_committed output: %d records for %d words, want %d for %d", total, len(got), sent, len(want))
	}
	step("read")
	t.Logf("%d input records, %d words: output exactly 1..n per word after kill -9 of an instance and of the broker", sent, len(want))
}

// readCounts reads wc-out from the start, read_committed, until a fetch
// that waited quiet long returns nothing: the counts per word, in offset
// order.
func readCounts(t *testing.T, addr string, quiet time.Duration) map[string][]int64 {
	t.Helper()
	cl, err := kgo.NewClient(seeds(addr), kgo.ConsumeTopics("wc-out"), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(quiet/2))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := map[string][]int64{}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), quiet)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			n++
			if len(r.Value) != 8 {
				t.Errorf("output record %s/%d@%d: value of %d bytes, not a long", r.Topic, r.Partition, r.Offset, len(r.Value))
				return
			}
			out[string(r.Key)] = append(out[string(r.Key)], int64(binary.BigEndian.Uint64(r.Value)))
		})
		if n == 0 {
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
