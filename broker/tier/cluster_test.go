package tier_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/broker/tier"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testcluster"
	"github.com/tributary-io/tributary/internal/testhdfs"
)

// clusterRecords is the record count of TestTieredClusterLeaderKills:
// a few hundred KiB (some 20 segments) in make test, 5 GB of 1 KiB
// records under make test-long (TRIBUTARY_TEST_LONG=1, issue 26's size).
func clusterRecords() (n, size int) {
	if os.Getenv("TRIBUTARY_TEST_LONG") != "" {
		return 5_000_000, 1000
	}
	return 3000, 100
}

// TestTieredClusterLeaderKills (issue 26): a tiered topic with replication
// 3 on a real HDFS. The partition's leader is killed (-9) while it uploads,
// and again while a consumer reads the remote range; franz-go and Kafka's
// Java consumer then read every acknowledged record from offset 0, in
// order; the remote segments follow each other without hole or overlap
// (the new leaders carried on where the old ones stopped), and no broker
// deleted locally what is not remote.
func TestTieredClusterLeaderKills(t *testing.T) {
	t.Parallel()
	hd := testhdfs.Get(t)
	uri := "hdfs://" + hd.NameNode + testhdfs.Dir(t)
	c := testcluster.Start(t, 3,
		"remote.log.storage.system.enable=true",
		"rsm.config.storage.uri="+uri,
		"rsm.config.storage.hdfs.user="+hd.User,
		"remote.log.manager.task.interval.ms=100",
		"log.retention.check.interval.ms=100",
		"log.segment.delete.delay.ms=0",
	)
	long := os.Getenv("TRIBUTARY_TEST_LONG") != ""
	timeout := 3 * time.Minute
	segBytes, localBytes := "16384", "32768"
	if long {
		timeout = 90 * time.Minute
		segBytes, localBytes = "16777216", "104857600"
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	const topic = "tiered3"
	adm := c.Admin()
	resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{
		"remote.storage.enable": ptr("true"),
		"segment.bytes":         ptr(segBytes),
		"local.retention.bytes": ptr(localBytes),
		"min.insync.replicas":   ptr("2"),
	}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	fs, err := fsys.Open(uri, fsys.Options{User: hd.User})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()

	n, size := clusterRecords()
	var (
		mu       sync.Mutex
		acked    = map[int]bool{}
		firstErr error
	)
	t.Cleanup(func() {
		if t.Failed() {
			mu.Lock()
			t.Logf("first produce error: %v", firstErr)
			mu.Unlock()
			for _, node := range c.Nodes {
				t.Logf("node %d log:\n%s", node.ID, lastLines(node.Log(), 40))
				// A pass that stops making progress logs nothing: what
				// its goroutines wait on says why.
				t.Logf("node %d tier goroutines:\n%s", node.ID, tierStacks(node.AdminAddr()))
				// Where the records are: a pass with nothing closed to
				// upload is silent too.
				t.Logf("node %d local segments (base offset: bytes): %s", node.ID, segmentSizes(filepath.Join(node.DataDir(), topic+"-0")))
			}
		}
	})
	prod, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...), kgo.DefaultProduceTopic(topic), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordDeliveryTimeout(time.Minute), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		pad := strings.Repeat("x", max(size-20, 0))
		for i := 0; i < n && ctx.Err() == nil; i++ {
			prod.Produce(ctx, &kgo.Record{Value: []byte(fmt.Sprintf("v%09d %s", i, pad))}, func(r *kgo.Record, err error) {
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					acked[i] = true
				} else if firstErr == nil {
					firstErr = err
				}
			})
			if !long && i%100 == 99 {
				// Spread the short form over a few seconds, so that the
				// kill falls among uploads.
				time.Sleep(20 * time.Millisecond)
			}
		}
		prod.Flush(ctx)
	}()

	var remote string
	manifest := func() *tier.Manifest {
		if remote == "" {
			ents, _ := fs.ReadDir(".")
			for _, e := range ents {
				if strings.HasPrefix(e.Name(), topic+"-") {
					remote = e.Name() + "/0"
				}
			}
			if remote == "" {
				return nil
			}
		}
		return readManifest(t, fs, remote)
	}
	// Kill the leader once it has uploaded a few segments, while it goes
	// on uploading.
	waitFor(t, ctx, "the first uploads", func() bool {
		m := manifest()
		return m != nil && len(m.Segments) >= 3
	})
	killLeader(t, c, topic)
	// The new leader was a follower that trimmed its disk by the
	// manifest: EARLIEST is still the remote start, from its first answer
	// (a retriable error is fine, a later offset is not).
	checkEarliest(t, ctx, adm, topic)
	<-produced
	mu.Lock()
	t.Logf("%d of %d records acknowledged", len(acked), n)
	mu.Unlock()

	// Every acknowledged record goes remote, and the brokers keep only
	// the recent segments. The active segment stays local whatever its
	// size, and it may hold many times segment.bytes: the records the
	// producer held back during the election reach the new leader as one
	// batch (franz-go's batches go up to 1 MB), and a lagging follower
	// appends each fetched chunk to one segment; neither is split (nor in
	// Kafka), and segment.ms is 7 days. (Waiting for "within 2 segments'
	// worth of records of the high watermark" failed on exactly that,
	// once each way: the uploads had stopped at 2,400 and 2,500 of 3,000,
	// correctly.) So trailer records, past the high watermark taken here
	// and read by no consumer, each as big as a segment (up to what a
	// batch may be), make the leader roll, and every record below the
	// high watermark must then reach remote storage: a leader that never
	// rolls, or does not upload what it rolled, fails here.
	hw := highWatermark(t, ctx, adm, topic)
	trailer := &kgo.Record{Value: []byte(strings.Repeat("t", min(atoi(segBytes), 900_000)))}
	leaderTail := func() []int64 {
		leader := c.Leaders(topic, 30*time.Second)[0]
		return localLogs(t, c.Node(leader).DataDir(), topic+"-0")
	}
	for trailers := 0; ; trailers++ {
		if segs := leaderTail(); len(segs) > 0 && segs[len(segs)-1] >= hw {
			t.Logf("high watermark %d; after %d trailer records the leader's active segment starts at %d", hw, trailers, segs[len(segs)-1])
			break
		}
		if trailers == 40 {
			t.Fatalf("the leader did not roll past the high watermark %d after %d trailer records: its segments start at %v", hw, trailers, leaderTail())
		}
		if err := prod.ProduceSync(ctx, trailer).FirstErr(); err != nil {
			t.Fatalf("trailer record: %v", err)
		}
	}
	waitFor(t, ctx, "uploads to reach the high watermark", func() bool {
		m := manifest()
		return m != nil && m.UploadedEnd() >= hw
	})
	t.Logf("uploaded end %d, high watermark %d", manifest().UploadedEnd(), hw)
	// The reads below are served from HDFS: the leader no longer has
	// offset 0 on its disk.
	waitFor(t, ctx, "the leader's local log to start above 0", func() bool {
		segs := leaderTail()
		return len(segs) > 0 && segs[0] > 0
	})
	t.Logf("the leader's local segments start at %d", leaderTail()[0])
	checkContiguous(t, manifest())

	// A consumer reading the remote range loses its leader mid-way.
	seen := make(chan int64, 1)
	readDone := make(chan []int, 1)
	go func() {
		readDone <- consumeValues(t, ctx, c.Bootstrap(), hw, seen)
	}()
	select {
	case <-seen:
	case <-ctx.Done():
		t.Fatal("the consumer read nothing")
	}
	killLeader(t, c, topic)
	checkEarliest(t, ctx, adm, topic)
	values := <-readDone
	checkInOrder(t, "franz-go", values, acked, &mu)

	// Kafka's Java consumer, from offset 0: every offset, in order (the
	// values are franz-go's to check; 5 GB of them would not fit here).
	// 5 GB (the long form) takes the Java consumer longer than the
	// tools' usual 2 minutes.
	javaTime := 2 * time.Minute
	if long {
		javaTime = 40 * time.Minute
	}
	out, stderr, err := testbroker.RunKafkaToolWithin(t, javaTime, "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", c.Bootstrap(),
		"--topic", topic, "--partition", "0", "--offset", "earliest", "--max-messages", fmt.Sprint(hw), "--timeout-ms", "60000",
		"--formatter-property", "print.offset=true", "--formatter-property", "print.value=false")
	if err != nil {
		t.Fatalf("ConsoleConsumer: %v\n%s", err, stderr)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for i, l := range lines {
		if l != fmt.Sprintf("Offset:%d", i) {
			t.Fatalf("the Java consumer's record %d is %q, want offset %d", i, l, i)
		}
	}
	if int64(len(lines)) != hw {
		t.Errorf("the Java consumer read %d records, want %d", len(lines), hw)
	}
	t.Logf("the Java consumer read offsets 0 to %d in order", len(lines)-1)

	// No broker deleted locally what is not remote: each one's oldest
	// local segment starts at or below the uploaded end. And the
	// followers too keep only the recent segments: they read the remote
	// metadata for their local retention.
	m := manifest()
	checkContiguous(t, m)
	maxLocal := 2*atoi(localBytes)/atoi(segBytes) + 3
	waitFor(t, ctx, "every broker to keep only the recent segments", func() bool {
		done := true
		for _, node := range c.Brokers() {
			if segs := localLogs(t, node.DataDir(), topic+"-0"); len(segs) > maxLocal {
				done = false
			}
		}
		return done
	})
	for _, node := range c.Brokers() {
		segs := localLogs(t, node.DataDir(), topic+"-0")
		if len(segs) > 0 && segs[0] > m.UploadedEnd() {
			t.Errorf("node %d: its oldest local segment starts at %d, past the uploaded end %d", node.ID, segs[0], m.UploadedEnd())
		}
		t.Logf("node %d keeps %d segments locally: %v", node.ID, len(segs), segs)
	}
}

// checkEarliest fails when ListOffsets EARLIEST answers anything but 0
// (the remote start: nothing is deleted in these tests); errors are
// retried.
func checkEarliest(t *testing.T, ctx context.Context, adm *kadm.Client, topic string) {
	t.Helper()
	for ctx.Err() == nil {
		res, err := adm.ListStartOffsets(ctx, topic)
		if err == nil {
			err = res.Error()
		}
		if err == nil {
			if o, ok := res.Lookup(topic, 0); ok {
				if o.Offset != 0 {
					t.Errorf("ListOffsets EARLIEST after the election = %d, want the remote start 0", o.Offset)
				}
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// localLogs are the base offsets of a partition's local segments.
// localLogsIfAny are the base offsets of the segments that hold records
// in a directory that may not exist yet (a restarted replica opens an
// empty one at 0 before it knows where its leader's log is).
func localLogsIfAny(dir string) []int64 {
	ents, _ := os.ReadDir(dir)
	var out []int64
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil || fi.Size() == 0 {
			continue
		}
		if base, ok := strings.CutSuffix(e.Name(), ".log"); ok {
			b, _ := strconv.ParseInt(base, 10, 64)
			out = append(out, b)
		}
	}
	return out
}

// dirBytes is the size of the regular files in dir (a partition's).
func dirBytes(dir string) int64 {
	ents, _ := os.ReadDir(dir)
	var n int64
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
	}
	return n
}

func localLogs(t *testing.T, dataDir, part string) []int64 {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dataDir, part))
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, e := range ents {
		if base, ok := strings.CutSuffix(e.Name(), ".log"); ok {
			b, _ := strconv.ParseInt(base, 10, 64)
			out = append(out, b)
		}
	}
	return out
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// killLeader kills the partition's leader with -9, waits for another to
// lead, and restarts the killed one.
func killLeader(t *testing.T, c *testcluster.Cluster, topic string) {
	t.Helper()
	old := c.Leaders(topic, 30*time.Second)[0]
	c.Node(old).Kill()
	t.Logf("killed leader %d at %v", old, time.Now().Format("15:04:05.000"))
	now := c.Leaders(topic, 30*time.Second)[0]
	t.Logf("new leader %d", now)
	c.Node(old).Restart()
}

func highWatermark(t *testing.T, ctx context.Context, adm *kadm.Client, topic string) int64 {
	t.Helper()
	res, err := adm.ListEndOffsets(ctx, topic)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	o, _ := res.Lookup(topic, 0)
	return o.Offset
}

// checkContiguous fails when the remote segments overlap or leave a hole.
func checkContiguous(t *testing.T, m *tier.Manifest) {
	t.Helper()
	if m.LogStartOffset != 0 {
		t.Errorf("remote log start %d, want 0", m.LogStartOffset)
	}
	for i, s := range m.Segments {
		if i == 0 && s.BaseOffset != 0 {
			t.Errorf("the first remote segment starts at %d", s.BaseOffset)
		}
		if i > 0 && s.BaseOffset != m.Segments[i-1].EndOffset+1 {
			t.Errorf("remote segment %d starts at %d, the one before ends at %d", i, s.BaseOffset, m.Segments[i-1].EndOffset)
		}
	}
}

// consumeValues reads the partition from offset 0 to end with franz-go,
// with small fetches so that the read lasts; seen gets the offset of the
// first record.
func consumeValues(t *testing.T, ctx context.Context, bootstrap string, end int64, seen chan<- int64) []int {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bootstrap, ",")...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"tiered3": {0: kgo.NewOffset().At(0)}}),
		kgo.FetchMaxBytes(16<<10), kgo.FetchMaxPartitionBytes(16<<10))
	if err != nil {
		t.Error(err)
		return nil
	}
	defer cl.Close()
	var out []int
	next := int64(0)
	for next < end && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset >= end {
				return // a trailer record
			}
			if next == 0 {
				seen <- r.Offset
			}
			if r.Offset != next {
				t.Errorf("franz-go: offset %d after %d", r.Offset, next-1)
			}
			next = r.Offset + 1
			m := valueSeq.FindSubmatch(r.Value)
			if m == nil {
				t.Errorf("franz-go read %.40q at %d", r.Value, r.Offset)
				return
			}
			i, _ := strconv.Atoi(string(m[1]))
			out = append(out, i)
		})
	}
	return out
}

var valueSeq = regexp.MustCompile(`^v(\d{9})`)

// checkInOrder checks that values are the produced sequence in order,
// each once, with every acknowledged one among them.
func checkInOrder(t *testing.T, who string, values []int, acked map[int]bool, mu *sync.Mutex) {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	got := map[int]bool{}
	last := -1
	for _, i := range values {
		if got[i] {
			t.Errorf("%s read record %d twice", who, i)
		}
		if i < last {
			t.Errorf("%s read record %d after %d", who, i, last)
		}
		got[i], last = true, i
	}
	var missing []int
	for i := range acked {
		if !got[i] {
			missing = append(missing, i)
		}
	}
	sort.Ints(missing)
	if len(missing) > 0 {
		t.Errorf("%s misses %d acknowledged records, the first %v", who, len(missing), missing[:min(10, len(missing))])
	}
	t.Logf("%s read %d records in order", who, len(values))
}

// TestTieredFollowerWipedRejoins (issue 26): a follower of a tiered
// partition loses its data (kill -9, its partition directory removed) and
// rejoins. By KIP-405's path: the leader answers its fetch from offset 0
// with OFFSET_MOVED_TO_TIERED_STORAGE, and the follower rebuilds its leader
// epochs and producer state from the remote segment below the leader's
// local log start and fetches from there, never the remote records (its
// log never starts at 0, and its disk never holds more than the recent
// segments). It returns to the ISR, applies local retention as a
// follower, and once it leads, consumers read every record from offset 0
// through it (HDFS below its local start).
func TestTieredFollowerWipedRejoins(t *testing.T) {
	t.Parallel()
	hd := testhdfs.Get(t)
	uri := "hdfs://" + hd.NameNode + testhdfs.Dir(t)
	c := testcluster.Start(t, 3,
		"remote.log.storage.system.enable=true",
		"rsm.config.storage.uri="+uri,
		"rsm.config.storage.hdfs.user="+hd.User,
		"remote.log.manager.task.interval.ms=100",
		"log.retention.check.interval.ms=100",
		"log.segment.delete.delay.ms=0",
	)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const topic = "tiered3"
	adm := c.Admin()
	resp, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{
		"remote.storage.enable": ptr("true"),
		"segment.bytes":         ptr("16384"),
		"local.retention.bytes": ptr("32768"),
		"min.insync.replicas":   ptr("2"),
	}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...), kgo.DefaultProduceTopic(topic), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerBatchMaxBytes(4096))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	t.Cleanup(func() {
		if t.Failed() {
			for _, node := range c.Nodes {
				t.Logf("node %d log:\n%s", node.ID, lastLines(node.Log(), 40))
			}
		}
	})
	produceN := func(from, n int) {
		recs := make([]*kgo.Record, n)
		for i := range recs {
			recs[i] = &kgo.Record{Value: []byte(fmt.Sprintf("v%09d %s", from+i, strings.Repeat("x", 80)))}
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	const n = 2000
	produceN(0, n)
	leader := c.Leaders(topic, 30*time.Second)[0]
	follower := leader%3 + 1
	waitFor(t, ctx, "the leader to keep only the recent segments", func() bool {
		return localLogs(t, c.Node(leader).DataDir(), topic+"-0")[0] > 0
	})

	c.Node(follower).Kill()
	if err := os.RemoveAll(filepath.Join(c.Node(follower).DataDir(), topic+"-0")); err != nil {
		t.Fatal(err)
	}
	produceN(n, n/2)
	leaderLocalStart := localLogs(t, c.Node(leader).DataDir(), topic+"-0")[0]
	c.Node(follower).Restart()
	t.Logf("follower %d wiped and restarted; leader %d, its local log from %d", follower, leader, leaderLocalStart)
	hw := highWatermark(t, ctx, adm, topic)
	// Sampled while it catches up: the lowest segment the follower ever
	// has and the most its partition directory holds.
	partDir := filepath.Join(c.Node(follower).DataDir(), topic+"-0")
	lowest, peak := int64(-1), int64(0)
	sample := func() {
		for _, b := range localLogsIfAny(partDir) {
			if lowest < 0 || b < lowest {
				lowest = b
			}
		}
		peak = max(peak, dirBytes(partDir))
	}
	waitFor(t, ctx, "the wiped follower back in the ISR", func() bool {
		sample()
		m, err := adm.Metadata(ctx, topic)
		if err != nil {
			return false
		}
		for _, r := range m.Topics[topic].Partitions[0].ISR {
			if r == follower {
				return true
			}
		}
		return false
	})
	waitFor(t, ctx, "the wiped follower to keep only the recent segments", func() bool {
		sample()
		segs := localLogs(t, c.Node(follower).DataDir(), topic+"-0")
		return len(segs) > 0 && len(segs) <= 2*32768/16384+3
	})
	// Through the leader, the follower would have copied the history from
	// offset 0 (some 300 kB here) before trimming it.
	if !strings.Contains(c.Node(follower).Log(), "log state rebuilt from remote storage") {
		t.Errorf("the follower did not rebuild its state from remote storage (KIP-405's path)")
	}
	if lowest < leaderLocalStart/2 || lowest == 0 {
		t.Errorf("the follower's log started at %d; it should start near the leader's local log start %d, not copy the remote range", lowest, leaderLocalStart)
	}
	// At most what the leader still held locally when the follower came
	// back (on a loaded machine uploads lag, and the leader keeps more),
	// never the remote range too.
	total := int64(n+n/2) * 100
	if bound := max(total/2, (hw-leaderLocalStart)*100+64<<10); peak > bound {
		t.Errorf("the follower's partition directory held up to %d bytes while catching up (bound %d: the leader's local records from %d); the topic holds %d, local retention 32768", peak, bound, leaderLocalStart, total)
	}
	t.Logf("follower: lowest local offset %d (leader's local start %d), peak directory size %d bytes of %d produced", lowest, leaderLocalStart, peak, total)

	// The follower leads (made the preferred replica and elected), and
	// serves everything from offset 0: HDFS below its local start.
	other := 6 - leader - follower
	req := kadm.AlterPartitionAssignmentsReq{}
	req.Assign(topic, 0, []int32{follower, leader, other})
	if _, err := adm.AlterPartitionAssignments(ctx, req); err != nil {
		t.Fatal(err)
	}
	var set kadm.TopicsSet
	set.Add(topic, 0)
	waitFor(t, ctx, "the wiped follower to lead", func() bool {
		adm.ElectLeaders(ctx, kadm.ElectPreferredReplica, set)
		m, err := adm.Metadata(ctx, topic)
		return err == nil && m.Topics[topic].Partitions[0].Leader == follower
	})
	values := consumeValues(t, ctx, c.Node(follower).Addr(), hw, make(chan int64, 1))
	var mu sync.Mutex
	acked := map[int]bool{}
	for i := 0; i < n+n/2; i++ {
		acked[i] = true
	}
	checkInOrder(t, "franz-go through the rejoined follower", values, acked, &mu)
}

// tierStacks are the stacks of a broker's goroutines that run tiered
// storage code, from its admin endpoint's goroutine dump.
func tierStacks(admin string) string {
	resp, err := http.Get("http://" + admin + "/debug/pprof/goroutine?debug=2")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	dump, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, g := range strings.Split(string(dump), "\n\n") {
		if strings.Contains(g, "broker/tier.") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

// segmentSizes lists a partition directory's segments as "base: bytes".
func segmentSizes(dir string) string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, e := range ents {
		if base, ok := strings.CutSuffix(e.Name(), ".log"); ok {
			if fi, err := e.Info(); err == nil {
				b, _ := strconv.ParseInt(base, 10, 64)
				out = append(out, fmt.Sprintf("%d: %d", b, fi.Size()))
			}
		}
	}
	return strings.Join(out, ", ")
}
