package loader_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/formats/decode"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/kafkacli"
	"github.com/tributary-io/tributary/internal/remotelog"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testhdfs"
)

// Issue 26: `load run --from-tier` and a load through the broker of the
// same range give the same Parquet files, read back whole by pyarrow. A
// broker tiers a topic to a real HDFS with small segments and keeps 32 KiB
// of each partition locally; the topic holds plain records and
// transactions, committed and aborted, some spanning segments. The
// from-tier load reads the uploaded segments from HDFS (the aborted
// transactions filtered by the uploaded .txnindex) and the rest, not
// uploaded yet, from the broker.
func TestLoadFromTier(t *testing.T) {
	t.Parallel()
	hd := testhdfs.Get(t)
	tierURI := "hdfs://" + hd.NameNode + testhdfs.Dir(t)
	b := testbroker.Start(t,
		"remote.log.storage.system.enable=true",
		"rsm.config.storage.uri="+tierURI,
		"rsm.config.storage.hdfs.user="+hd.User,
		"remote.log.manager.task.interval.ms=100",
		"log.retention.check.interval.ms=100",
		"log.segment.delete.delay.ms=0",
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const topic = "tiered"
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	cfg := map[string]*string{"remote.storage.enable": ptr("true"), "segment.bytes": ptr("16384"), "local.retention.bytes": ptr("32768")}
	if resp, err := adm.CreateTopic(ctx, 2, 1, cfg, topic); err != nil || resp.Err != nil {
		t.Fatalf("create topic: %v %v", err, resp.Err)
	}

	// Plain records, and between them transactions of 30 records (one
	// in three aborted), each record its own batch so that transactions
	// span segments.
	n := sized(10_000)
	plain, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	txn, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.DefaultProduceTopic(topic), kgo.TransactionalID("from-tier"),
		kgo.ProducerLinger(0), kgo.MaxBufferedRecords(1), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	aborted := map[string]bool{}
	var line []byte
	for i := 0; i < n; {
		var recs []*kgo.Record
		for j := 0; j < 200 && i < n; j, i = j+1, i+1 {
			line = decode.ActivityEvent(line[:0], i)
			recs = append(recs, &kgo.Record{Value: append([]byte(nil), line...)})
		}
		if err := plain.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		abort := (i/200)%3 == 0
		for j := 0; j < 30; j++ {
			line = decode.ActivityEvent(line[:0], 1_000_000+i+j)
			var e struct{ MessageID string }
			json.Unmarshal(line, &e)
			aborted[e.MessageID] = abort
			if err := txn.ProduceSync(ctx, &kgo.Record{Value: append([]byte(nil), line...)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		if err := txn.EndTransaction(ctx, kgo.TransactionEndTry(!abort)); err != nil {
			t.Fatal(err)
		}
	}

	// Wait for the tier to hold most of each partition and the broker to
	// have dropped the start.
	fs, err := fsys.Open(tierURI, fsys.Options{User: hd.User})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	ts := []kafkacli.TopicInfo{{Name: topic}}
	kc, err := kafkacli.Connect(ctx, b.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	if err := kc.TopicIDs(ctx, ts); err != nil {
		t.Fatal(err)
	}
	uploaded := map[int32]int64{}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		done := true
		for p := int32(0); p < 2; p++ {
			part := &remotelog.Partition{FS: fs, Dir: remotelog.Dir(topic, kafkacli.FormatTopicID(ts[0].ID), p)}
			man, err := part.Manifest()
			if err != nil {
				t.Fatal(err)
			}
			if man == nil || len(man.Segments) < 5 {
				done = false
				continue
			}
			uploaded[p] = man.UploadedEnd()
		}
		local := earliestLocal(t, ctx, adm, topic)
		if done && local[0] > 0 && local[1] > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tier holds %v, local starts %v, after a minute\n%s", uploaded, local, b.Log())
		}
	}
	t.Logf("uploaded ends %v", uploaded)

	common := append([]string{"-b", b.Addr(), "--topics", topic, "--schema", activitySchema, "--time-field", "timestamp",
		"--max-records-per-unit", fmt.Sprint(n / 3)}, hdfsArgs(t)...)
	viaBroker, viaTier := hdfsTarget(t), hdfsTarget(t)
	mustLoad(t, append([]string{"--target", viaBroker}, common...)...)
	out := mustLoad(t, append([]string{"--target", viaTier, "--from-tier", tierURI, "--parallelism", "2"}, common...)...)

	// Every unit read its remote part from the tier.
	fromTier := map[string]int64{}
	re := regexp.MustCompile(`read from the remote tier.*partition=(\d+) from=(\d+) to=(\d+)`)
	for _, m := range re.FindAllStringSubmatch(out, -1) {
		from, _ := strconv.ParseInt(m[2], 10, 64)
		to, _ := strconv.ParseInt(m[3], 10, 64)
		fromTier[m[1]] += to - from
	}
	for p, end := range uploaded {
		// Up to a transaction's length short of the uploaded end: an
		// undecided one at the end is left to the broker.
		if got := fromTier[fmt.Sprint(p)]; got < end-100 {
			t.Errorf("partition %d: %d offsets read from the tier, %d uploaded\n%s", p, got, end, out)
		}
	}

	a, c := dumpLake(t, viaBroker, topic), dumpLake(t, viaTier, topic)
	if a != c {
		t.Fatalf("the lakes differ:\nvia the broker:\n%s\nfrom the tier:\n%s", head(a, 40), head(c, 40))
	}
	rows := 0
	for _, l := range strings.Split(a, "\n") {
		if !strings.HasPrefix(l, "{") {
			continue
		}
		rows++
		var r struct{ MessageID string }
		json.Unmarshal([]byte(l), &r)
		if aborted[r.MessageID] {
			t.Fatalf("aborted record %s loaded", r.MessageID)
		}
	}
	committed := n
	for _, ab := range aborted {
		if !ab {
			committed++
		}
	}
	if rows != committed {
		t.Errorf("%d rows, want %d committed records", rows, committed)
	}
	t.Logf("%d rows, identical through the broker and from the tier", rows)
}

func ptr(s string) *string { return &s }

// earliestLocal is ListOffsets -4 (EARLIEST_LOCAL_TIMESTAMP) per partition.
func earliestLocal(t *testing.T, ctx context.Context, adm *kadm.Client, topic string) map[int32]int64 {
	t.Helper()
	offs, err := adm.ListLocalLogStartOffsets(ctx, topic)
	if err == nil {
		err = offs.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	offs.Each(func(o kadm.ListedOffset) { out[o.Partition] = o.Offset })
	return out
}

// dumpLake copies the topic's files out of the target and prints every
// file's schema and rows, by pyarrow.
func dumpLake(t *testing.T, target, topic string) string {
	t.Helper()
	fs, err := fsys.Open(target, fsys.Options{User: testhdfs.DefaultUser})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	dir := t.TempDir()
	copyTree(t, fs, topic, dir)
	py := testbroker.Python(t, "pyarrow")
	cmd := exec.Command(py, filepath.Join(testbroker.RepoRoot(), "loader", "testdata", "dump_lake.py"), path.Join(dir, topic))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	o, err := cmd.Output()
	if err != nil {
		t.Fatalf("dump_lake.py: %v\n%s", err, stderr.String())
	}
	return string(o)
}

func head(s string, n int) string {
	lines := strings.SplitN(s, "\n", n+1)
	return strings.Join(lines[:min(n, len(lines))], "\n")
}
