package txn_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/internal/kafkacli"
	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestTransactionsCleaner: on a compacted topic with committed and aborted
// transactions, the cleaner leaves read_committed and read_uncommitted
// consumers exactly the latest committed value of each key; it removes a
// marker only once its transaction has no record left and the marker's
// delete horizon (delete.retention.ms after it was found so) has passed,
// never before; the aborted transaction leaves the .txnindex; each
// producer's last batch stays, so that after kill -9 and with the producer
// snapshots deleted the broker rebuilds the producers' sequences from the
// log alone and the producers go on; Kafka's DumpLogSegments reads the
// cleaned segments.
func TestTransactionsCleaner(t *testing.T) {
	t.Parallel()
	testbroker.KafkaLib(t) // DumpLogSegments below; fails under CI=true without it
	b := testbroker.Start(t, append(txnProps, "log.cleaner.backoff.ms=100")...)
	const topic, retention = "cleaned", 3 * time.Second
	admin, err := kgo.NewClient(seeds(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	adm := kadm.NewClient(admin)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"cleanup.policy": kadm.StringPtr("compact"), "segment.bytes": kadm.StringPtr("2048"),
		"min.cleanable.dirty.ratio": kadm.StringPtr("0.01"),
		"delete.retention.ms":       kadm.StringPtr(fmt.Sprint(retention.Milliseconds())),
	}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	tx := txnProducer(t, b.Addr(), "clean-tx")
	idem, err := kgo.NewClient(seeds(b.Addr()), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer idem.Close()
	want := map[string]string{} // key → latest committed value
	txn := func(commit bool, kvs ...string) {
		t.Helper()
		if err := tx.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(kvs); i += 2 {
			tx.Produce(ctx, &kgo.Record{Topic: topic, Key: []byte(kvs[i]), Value: []byte(kvs[i+1])}, nil)
			if commit {
				want[kvs[i]] = kvs[i+1]
			}
		}
		if err := tx.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if err := tx.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatal(err)
		}
	}
	kv := func(prefix, value string, from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			out = append(out, fmt.Sprintf("%s%d", prefix, i), fmt.Sprintf("%s-%d", value, i))
		}
		return out
	}
	idempotent := func(value string) {
		t.Helper()
		for i := range 5 {
			k, v := fmt.Sprintf("i%d", i), fmt.Sprintf("%s-%d", value, i)
			if err := idem.ProduceSync(ctx, &kgo.Record{Key: []byte(k), Value: []byte(v)}).FirstErr(); err != nil {
				t.Fatalf("idempotent produce: %v", err)
			}
			want[k] = v
		}
	}
	txn(true, kv("k", "v1", 0, 20)...)
	txn(false, kv("k", "aborted", 0, 20)...)
	txn(true, kv("k", "v2", 0, 10)...) // k10..k19 keep v1: its marker stays
	idempotent("i1")
	idempotent("i2")
	// A plain producer replaces every i key: the idempotent producer's
	// last batch stays, emptied of its records, with its sequence.
	plain, err := kgo.NewClient(seeds(b.Addr()), kgo.DefaultProduceTopic(topic), kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	for i := range 5 {
		k, v := fmt.Sprintf("i%d", i), fmt.Sprintf("p-%d", i)
		if err := plain.ProduceSync(ctx, &kgo.Record{Key: []byte(k), Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		want[k] = v
	}
	filler := strings.Repeat("x", 40)
	for round := range 8 {
		txn(true, kv("f", fmt.Sprintf("r%d%s", round, filler), 0, 10)...)
	}

	dir := filepath.Join(b.DataDir(), "data", topic+"-0")
	if _, err := os.Stat(dir); err != nil {
		dir = findPartitionDir(t, b.DataDir(), topic+"-0")
	}
	// Watch the markers while the cleaner works: a marker may only
	// disappear after its delete horizon, which it must have been seen
	// with first. The aborted transaction's marker must go, with its
	// .txnindex entry.
	horizons := map[int64]int64{} // marker offset → delete horizon seen
	var abortAt int64 = -1
	deadline := time.Now().Add(60 * time.Second)
	// A cleaning runs when there is dirty data; a live topic keeps
	// getting some, and each cleaning re-reads the log from its start:
	// that is when markers get their horizon, and go.
	lastFill, round := time.Now(), 8
	for {
		if time.Since(lastFill) > 300*time.Millisecond {
			txn(true, kv("f", fmt.Sprintf("r%d%s", round, filler), 0, 10)...)
			lastFill, round = time.Now(), round+1
		}
		now := time.Now().UnixMilli()
		markers, ok := readMarkers(dir)
		if !ok {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		for off, m := range markers {
			if m.abort {
				abortAt = off
			}
			if m.horizon > 0 {
				if h, seen := horizons[off]; seen && h != m.horizon {
					t.Errorf("marker %d: delete horizon changed from %d to %d", off, h, m.horizon)
				}
				horizons[off] = m.horizon
			}
		}
		// Gone only when two reads 20 ms apart miss it (a directory read
		// racing the install's renames can miss a file).
		if again, ok := readMarkersAfter(dir, 20*time.Millisecond); ok {
			for off := range again {
				if _, ok := markers[off]; !ok {
					markers[off] = again[off]
				}
			}
		}
		for off, h := range horizons {
			if _, still := markers[off]; !still && h != -1 {
				if now < h-200 { // the test's clock read before the files: some slack
					t.Errorf("marker %d removed at %d, before its delete horizon %d", off, now, h)
				}
				horizons[off] = -1 // checked
			}
		}
		if abortAt >= 0 {
			if _, still := markers[abortAt]; !still && txnIndexEntries(t, dir) == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			var cleaned []string
			for _, l := range strings.Split(b.Log(), "\n") {
				if strings.Contains(l, "clean") {
					cleaned = append(cleaned, l)
				}
			}
			t.Fatalf("the aborted transaction's marker (%d) or its .txnindex entry is still there after 60 s; markers: %v\n%s", abortAt, markers, lastLinesOf(strings.Join(cleaned, "\n"), 20))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if abortAt < 0 {
		t.Fatal("never saw the abort marker")
	}
	if horizons[abortAt] != -1 {
		t.Errorf("the abort marker %d went without being seen with a delete horizon first", abortAt)
	}

	// Both isolation levels read exactly the latest committed value of
	// each key (the cleaned part; the uncleaned tail only has f keys).
	for _, committed := range []bool{true, false} {
		got := consumeKeyed(t, b.Addr(), topic, committed)
		checkLatest(t, fmt.Sprintf("read_committed=%v", committed), got, want)
	}

	// Kafka's DumpLogSegments reads the cleaned segments, delete
	// horizons and empty batches included.
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	stdout, stderr, err := testbroker.RunKafkaTool(t, "org.apache.kafka.tools.DumpLogSegments",
		"--deep-iteration", "--files", strings.Join(logs, ","))
	if err != nil || strings.Contains(stdout+stderr, "Exception") || !strings.Contains(stdout, "isControl: true") {
		t.Errorf("DumpLogSegments on the cleaned segments: %v\n%s\n%s", err, lastLinesOf(stdout, 30), stderr)
	}
	if !strings.Contains(stdout, "count: 0") {
		t.Errorf("DumpLogSegments shows no empty batch (a producer's last, kept for its sequence):\n%s", lastLinesOf(stdout, 30))
	}

	// So does kafka-go's read_committed fetch, the loader's and tributary
	// consume's (kafkacli.FetchCommitted), over the cleaned log's empty
	// batches and markers.
	checkLatest(t, "kafka-go read_committed", fetchCommittedKeyed(t, b.Addr(), topic), want)

	// Each producer's last batch is in the log: after kill -9 and with the
	// producer snapshots gone, the broker knows them from the log alone.
	before := describeProducers(t, adm, topic)
	b.Kill()
	snaps, _ := filepath.Glob(filepath.Join(dir, "*.snapshot"))
	for _, s := range snaps {
		os.Remove(s)
	}
	b.Restart()
	after := describeProducers(t, adm, topic)
	for pid, seq := range before {
		if after[pid] != seq {
			t.Errorf("producer %d: last sequence %d before the restart, %d after it (rebuilt from the cleaned log)", pid, seq, after[pid])
		}
	}
	// And the producers go on with their sequences.
	txn(true, kv("k", "v3", 0, 3)...)
	idempotent("i3")
	got := consumeKeyed(t, b.Addr(), topic, true)
	for _, k := range []string{"k0", "k1", "k2", "i0", "i4"} {
		if vs := got[k]; len(vs) == 0 || vs[len(vs)-1] != want[k] {
			t.Errorf("key %s: read %v, want the latest %q last", k, vs, want[k])
		}
	}

}

func readMarkersAfter(dir string, d time.Duration) (map[int64]marker, bool) {
	time.Sleep(d)
	return readMarkers(dir)
}

type marker struct {
	abort   bool
	horizon int64 // 0: none
}

// readMarkers reads the transaction markers of a partition's segment
// files; ok is false when a file vanished under it (the cleaner swapped
// it): the caller reads again.
func readMarkers(dir string) (map[int64]marker, bool) {
	// The cleaner installs a segment by renaming <base>.log.swap to
	// <base>.log after renaming the old ones .deleted: the swap is read
	// too, or a marker would seem gone for a moment.
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, false
	}
	out := map[int64]marker{}
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".log") && !strings.HasSuffix(e.Name(), ".log.swap") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, false
		}
		for b, rest, ok := record.Split(data); ok; b, rest, ok = record.Split(rest) {
			if !b.Control() || b.RecordCount() == 0 {
				continue
			}
			typ, _ := b.ControlType()
			m := marker{abort: typ == record.ControlAbort}
			if b.HasDeleteHorizon() {
				m.horizon = b.BaseTimestamp()
			}
			out[b.BaseOffset()] = m
		}
	}
	return out, true
}

func txnIndexEntries(t *testing.T, dir string) int {
	files, _ := filepath.Glob(filepath.Join(dir, "*.txnindex"))
	n := 0
	for _, f := range files {
		st, err := os.Stat(f)
		if err == nil {
			n += int(st.Size() / 34)
		}
	}
	return n
}

func findPartitionDir(t *testing.T, root, name string) string {
	t.Helper()
	var found string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() == name {
			found = p
		}
		return nil
	})
	if found == "" {
		t.Fatalf("no directory %s under %s", name, root)
	}
	return found
}

// consumeKeyed reads a topic from the start: each key's values in order.
func consumeKeyed(t *testing.T, addr, topic string, committed bool) map[string][]string {
	t.Helper()
	iso := kgo.ReadUncommitted()
	if committed {
		iso = kgo.ReadCommitted()
	}
	cl, err := kgo.NewClient(seeds(addr), kgo.ConsumeTopics(topic), kgo.FetchIsolationLevel(iso),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := map[string][]string{}
	deadline := time.Now().Add(20 * time.Second)
	for quiet := 0; quiet < 2 && time.Now().Before(deadline); {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		n := 0
		fs.EachRecord(func(r *kgo.Record) {
			out[string(r.Key)] = append(out[string(r.Key)], string(r.Value))
			n++
		})
		if n == 0 && len(out) > 0 {
			quiet++
		}
	}
	return out
}

// checkLatest: every key but the fillers' (whose tail is not cleaned) was
// read once, with its latest committed value.
func checkLatest(t *testing.T, what string, got map[string][]string, want map[string]string) {
	t.Helper()
	for k, v := range want {
		vs := got[k]
		if strings.HasPrefix(k, "f") {
			if len(vs) == 0 || vs[len(vs)-1] != v {
				t.Errorf("%s: key %s read %v, want %q last", what, k, vs, v)
			}
			continue
		}
		if !slices.Equal(vs, []string{v}) {
			t.Errorf("%s: key %s read %v, want only %q", what, k, vs, v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: key %s read, never committed", what, k)
		}
	}
}

// describeProducers is each producer's last sequence in partition 0.
func describeProducers(t *testing.T, adm *kadm.Client, topic string) map[int64]int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		ds, err := adm.DescribeProducers(ctx, kadm.TopicsSet{topic: {0: {}}})
		if err == nil {
			out := map[int64]int32{}
			ok := true
			ds.EachPartition(func(p kadm.DescribedProducersPartition) {
				if p.Err != nil {
					ok = false
				}
				for _, pr := range p.ActiveProducers {
					out[pr.ProducerID] = pr.LastSequence
				}
			})
			if ok {
				return out
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("DescribeProducers: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func lastLinesOf(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// fetchCommittedKeyed reads partition 0 up to its last stable offset with
// kafkacli.FetchCommitted (kafka-go's transport): each key's values.
func fetchCommittedKeyed(t *testing.T, addr, topic string) map[string][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kc := &kafka.Client{Addr: kafka.TCP(addr), Timeout: 10 * time.Second}
	out := map[string][]string{}
	for off := int64(0); ; {
		f, err := kafkacli.FetchCommitted(ctx, kc, topic, 0, off, 1<<20, 100*time.Millisecond, func(r *kafka.Record) error {
			var k, v []byte
			var err error
			if r.Key != nil {
				if k, err = io.ReadAll(r.Key); err != nil {
					return err
				}
			}
			if r.Value != nil {
				if v, err = io.ReadAll(r.Value); err != nil {
					return err
				}
			}
			out[string(k)] = append(out[string(k)], string(v))
			return nil
		})
		if err == nil && f.Err != nil {
			err = f.Err
		}
		if err != nil {
			t.Fatalf("FetchCommitted at %d: %v", off, err)
		}
		if f.Next > off {
			off = f.Next
		}
		if off >= f.LastStable {
			return out
		}
		if f.Next < 0 {
			t.Fatalf("FetchCommitted at %d covered nothing below the last stable offset %d", off, f.LastStable)
		}
	}
}
