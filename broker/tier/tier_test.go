package tier_test

import (
	"context"
	"fmt"
	"os"
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

	"github.com/tributary-io/tributary/broker/tier"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/remotelog"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testhdfs"
)

func TestMain(m *testing.M) { testhdfs.Main(m) }

const topic = "tiered"

// TestTieredStorageHDFS runs one broker tiering to a real HDFS: a topic
// with 32 KiB segments keeps 64 KiB on the broker's disk, and everything
// else is read back from HDFS. One broker and one HDFS serve every check.
func TestTieredStorageHDFS(t *testing.T) {
	// In parallel with the other tests: HDFS starts while they build and
	// run the broker.
	t.Parallel()
	hd := testhdfs.Get(t)
	uri := "hdfs://" + hd.NameNode + testhdfs.Dir(t)
	b := testbroker.Start(t,
		"remote.log.storage.system.enable=true",
		"rsm.config.storage.uri="+uri,
		"rsm.config.storage.hdfs.user="+hd.User,
		"remote.log.manager.task.interval.ms=100",
		"rsm.config.storage.cleanup.grace.ms=1000",
		"log.retention.check.interval.ms=100",
		"log.segment.delete.delay.ms=0",
	)
	t.Logf("broker up at %v", time.Now().Format("15:04:05.000"))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("broker log:\n%s", lastLines(b.Log(), 80))
			out, _ := exec.Command("ls", "-la", filepath.Join(b.DataDir(), topic+"-0")).CombinedOutput()
			t.Logf("%s", out)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(newClient(t, b.Addr()))
	resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"remote.storage.enable": ptr("true"),
		"segment.bytes":         ptr("32768"),
		"local.retention.bytes": ptr("65536"),
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
	const n = 2000
	produce(t, ctx, b.Addr(), 0, n)
	t.Logf("produced at %v", time.Now().Format("15:04:05.000"))
	// <topic>-<topic id>/0, the id in the broker's base64url form.
	remote := findRemoteDir(t, fs, ctx)
	// Wait until the broker keeps only the recent segments and the rest
	// is remote.
	var man *tier.Manifest
	waitFor(t, ctx, "old segments leaving the disk", func() bool {
		man = readManifest(t, fs, remote)
		localStart := listOffset(t, ctx, adm, -4)
		if man != nil {
			t.Logf("remote segments %d, uploaded end %d, local start %d, local segments %d", len(man.Segments), man.UploadedEnd(), localStart, localSegments(t, b))
		}
		return man != nil && len(man.Segments) >= 5 && localStart > 0 && localStart <= man.UploadedEnd() && localSegments(t, b) <= 4
	})
	t.Logf("tiered at %v", time.Now().Format("15:04:05.000"))
	if got := listOffset(t, ctx, adm, -2); got != 0 {
		t.Errorf("ListOffsets earliest = %d, want 0: the remote log start", got)
	}

	t.Run("franz-go reads every record from offset 0", func(t *testing.T) {
		consumeAll(t, ctx, b.Addr(), n)
	})
	t.Run("a share group reads every record from offset 0", func(t *testing.T) {
		shareConsumeAll(t, ctx, b.Addr(), n)
	})

	t.Run("ListOffsets by timestamp and LATEST_TIERED in the remote range", func(t *testing.T) {
		localStart := listOffset(t, ctx, adm, -4)
		for _, i := range []int{0, 1, 150, int(localStart) - 1, int(localStart), n - 1} {
			// Half-way between records i-1 and i: the first at or after
			// it is i.
			res, err := adm.ListOffsetsAfterMilli(ctx, stamp(i).Add(-50*time.Millisecond).UnixMilli(), topic)
			if err == nil {
				err = res.Error()
			}
			if err != nil {
				t.Fatal(err)
			}
			if o, _ := res.Lookup(topic, 0); o.Offset != int64(i) || o.Timestamp != stamp(i).UnixMilli() {
				t.Errorf("ListOffsets at record %d's time (local start %d): offset %d, timestamp %d; want %d, %d", i, localStart, o.Offset, o.Timestamp, i, stamp(i).UnixMilli())
			}
		}
		res, err := adm.ListOffsetsAfterMilli(ctx, stamp(n).UnixMilli(), topic)
		if o, _ := res.Lookup(topic, 0); err != nil || o.Offset != int64(n) {
			t.Errorf("ListOffsets after the last record: %d %v, want the end %d", o.Offset, err, n)
		}
		tiered := listOffset(t, ctx, adm, -5)
		if tiered < man.UploadedEnd()-1 || tiered >= int64(n) {
			t.Errorf("ListOffsets LATEST_TIERED = %d, want at least %d, the last remote offset seen", tiered, man.UploadedEnd()-1)
		}
		// v11 (KIP-1023): one past the last remote offset; uploads may
		// have moved on between the two requests, never back.
		if got := listOffset(t, ctx, adm, -6); got <= tiered || got > int64(n) {
			t.Errorf("ListOffsets EARLIEST_PENDING_UPLOAD = %d, want past LATEST_TIERED %d, at most the end %d", got, tiered, n)
		}
	})

	t.Run("topic describe shows the local start and the last tiered offset", func(t *testing.T) {
		out, err := exec.Command(testbroker.Binary(t), "topic", "describe", topic, "--bootstrap", b.Addr()).CombinedOutput()
		if err != nil {
			t.Fatalf("topic describe: %v\n%s", err, out)
		}
		m := regexp.MustCompile(`(?m)LOCAL-LOG-START-OFFSET\s+LAST-TIERED-OFFSET\s*\n0\s+(\d+)\s+(\d+)\s*$`).FindSubmatch(out)
		if m == nil {
			t.Fatalf("topic describe shows no tier offsets:\n%s", out)
		}
		local, _ := strconv.ParseInt(string(m[1]), 10, 64)
		tiered, _ := strconv.ParseInt(string(m[2]), 10, 64)
		if local <= 0 || tiered < man.UploadedEnd()-1 || tiered < local-1 {
			t.Errorf("topic describe: local start %d, last tiered %d; the manifest's uploaded end was %d:\n%s", local, tiered, man.UploadedEnd(), out)
		}
	})

	// Kafka's DumpLogSegments reads an uploaded segment copied back from
	// HDFS: its records, and its indexes checked against them. The JVM
	// runs while the checks below go on.
	testbroker.KafkaLib(t)
	dumped := make(chan string, 1)
	{
		seg := man.Segments[1]
		dir := t.TempDir()
		var files []string
		for _, suf := range []string{".log", ".index", ".timeindex"} {
			// Named by upload in HDFS, by base offset for Kafka's tools.
			name := tier.SegmentFileName(seg.BaseOffset, suf)
			data, err := fs.ReadFile(path.Join(remote, seg.FileName(suf)))
			if err != nil {
				t.Fatal(err)
			}
			if int64(len(data)) != seg.Files[suf] {
				t.Fatalf("%s: %d bytes, the manifest says %d", name, len(data), seg.Files[suf])
			}
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, filepath.Join(dir, name))
		}
		go func() {
			out, stderr, err := testbroker.RunKafkaTool(t, "org.apache.kafka.tools.DumpLogSegments", "--deep-iteration", "--files", strings.Join(files, ","))
			var problems []string
			if err != nil {
				problems = append(problems, fmt.Sprintf("DumpLogSegments: %v\n%s\n%s", err, out, stderr))
			}
			if records, want := strings.Count(out, "| offset: "), seg.EndOffset-seg.BaseOffset+1; int64(records) != want {
				problems = append(problems, fmt.Sprintf("DumpLogSegments printed %d records, the segment holds %d:\n%s", records, want, lastLines(out, 5)))
			}
			for _, bad := range []string{"mismatch", "Mismatch", "corrupt", "Exception"} {
				if strings.Contains(out+stderr, bad) {
					problems = append(problems, fmt.Sprintf("DumpLogSegments found a problem (%s):\n%s\n%s", bad, lastLines(out, 10), stderr))
				}
			}
			if !strings.Contains(out, "Dumping "+files[1]) || !strings.Contains(out, "Dumping "+files[2]) {
				problems = append(problems, "DumpLogSegments did not read the indexes:\n"+lastLines(out, 10))
			}
			dumped <- strings.Join(problems, "\n")
		}()
	}

	t.Run("kill -9 during uploads loses nothing and half-registers nothing", func(t *testing.T) {
		produce(t, ctx, b.Addr(), n, n)
		b.Kill()
		b.Restart()
		// Every registered segment is whole.
		man := readManifest(t, fs, remote)
		for _, s := range man.Segments {
			for suf, size := range s.Files {
				st, err := fs.Stat(path.Join(remote, s.FileName(suf)))
				if err != nil || st.Size() != size {
					t.Errorf("segment %d, %s: %v (size %v, the manifest says %d)", s.BaseOffset, suf, err, st, size)
				}
			}
		}
		waitFor(t, ctx, "uploads to resume after the restart", func() bool {
			m := readManifest(t, fs, remote)
			return m != nil && m.UploadedEnd() > man.UploadedEnd() && m.UploadedEnd() > n
		})
		consumeAll(t, ctx, b.Addr(), 2*n)
		// What interrupted uploads left is removed once older than
		// the grace period (1 s here): every remote file is then a
		// registered segment's.
		waitFor(t, ctx, "files no manifest names to be removed", func() bool {
			m := readManifest(t, fs, remote)
			names := map[string]bool{remotelog.ManifestDir: true, remotelog.LegacyManifestFile: true}
			for _, s := range m.Segments {
				for suf := range s.Files {
					names[s.FileName(suf)] = true
				}
			}
			ents, err := fs.ReadDir(remote)
			if err != nil {
				t.Fatal(err)
			}
			var orphans []string
			for _, e := range ents {
				// Files at or past the uploaded end are an upload in
				// progress; below it, an orphan would be a leak.
				var base int64
				if _, err := fmt.Sscanf(e.Name(), "%d-", &base); err == nil && base >= m.UploadedEnd() {
					continue
				}
				if !names[e.Name()] {
					orphans = append(orphans, e.Name())
				}
			}
			if len(orphans) > 0 {
				t.Logf("remote files no registered segment's: %v", orphans)
			}
			return len(orphans) == 0
		})
	})

	if problems := <-dumped; problems != "" {
		t.Errorf("kafka-dump-log on an uploaded segment: %s", problems)
	}

	t.Run("deleting the topic removes its remote data", func(t *testing.T) {
		if _, err := adm.DeleteTopic(ctx, topic); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the remote directory to go", func() bool {
			_, err := fs.Stat(path.Dir(remote))
			return fsys.IsNotExist(err)
		})
	})
}

func ptr(s string) *string { return &s }

func newClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// tsBase is the timestamp of record 0; record i's is i*100 ms later.
var tsBase = time.Now().Add(-time.Hour).Truncate(time.Second)

func stamp(i int) time.Time { return tsBase.Add(time.Duration(i) * 100 * time.Millisecond) }

func value(i int) []byte { return []byte(fmt.Sprintf("record %06d %s", i, strings.Repeat("x", 80))) }

func produce(t *testing.T, ctx context.Context, addr string, from, n int) {
	t.Helper()
	cl := newClient(t, addr, kgo.DefaultProduceTopic(topic), kgo.ProducerBatchMaxBytes(4096), kgo.ProducerLinger(time.Millisecond), kgo.ProducerBatchCompression(kgo.NoCompression()))
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Value: value(from + i), Timestamp: stamp(from + i)}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	cl.Close()
}

// consumeAll reads the topic from offset 0 and checks every record, in
// order.
func consumeAll(t *testing.T, ctx context.Context, addr string, n int) {
	t.Helper()
	start := time.Now()
	cl := newClient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(0)}}))
	next := 0
	for next < n {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records: %v", next, n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Logf("fetch error (retried): %v", err) })
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset != int64(next) || string(r.Value) != string(value(next)) {
				t.Fatalf("record at offset %d = %q, want offset %d %q", r.Offset, r.Value, next, value(next))
			}
			next++
		})
	}
	t.Logf("read %d records from offset 0 in %v", n, time.Since(start))
}

func listOffset(t *testing.T, ctx context.Context, adm *kadm.Client, ts int64) int64 {
	t.Helper()
	var res kadm.ListedOffsets
	var err error
	switch ts {
	case -2:
		res, err = adm.ListStartOffsets(ctx, topic)
	case -4:
		res, err = adm.ListLocalLogStartOffsets(ctx, topic)
	case -5, -6:
		res, err = adm.ListOffsetsAfterMilli(ctx, ts, topic)
	}
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	o, _ := res.Lookup(topic, 0)
	return o.Offset
}

func findRemoteDir(t *testing.T, fs fsys.FS, ctx context.Context) string {
	t.Helper()
	var dir string
	waitFor(t, ctx, "the topic's remote directory", func() bool {
		ents, _ := fs.ReadDir(".")
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), topic+"-") {
				dir = path.Join(e.Name(), "0")
				return true
			}
		}
		return false
	})
	return dir
}

// readManifest reads the newest remote manifest version.
func readManifest(t testing.TB, fs fsys.FS, dir string) *tier.Manifest {
	t.Helper()
	m, err := remotelog.ReadLatest(fs, dir)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func localSegments(t *testing.T, b *testbroker.Broker) int {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(b.DataDir(), topic+"-0", "*.log"))
	if err != nil {
		t.Fatal(err)
	}
	return len(logs)
}

func waitFor(t *testing.T, ctx context.Context, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// TestUnreachableRemoteKeepsLocalData starts a broker whose remote storage
// cannot be reached: local retention must not delete a segment that is not
// uploaded, however small local.retention.bytes is, and consumers read
// everything from the broker's disk.
func TestUnreachableRemoteKeepsLocalData(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t,
		"remote.log.storage.system.enable=true",
		fmt.Sprintf("rsm.config.storage.uri=hdfs://127.0.0.1:%d/nowhere", testbroker.FreePort(t)),
		"remote.log.manager.task.interval.ms=100",
		"log.retention.check.interval.ms=100",
		"log.segment.delete.delay.ms=0",
	)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("broker log:\n%s", lastLines(b.Log(), 40))
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	adm := kadm.NewClient(newClient(t, b.Addr()))
	resp, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{
		"remote.storage.enable": ptr("true"), "segment.bytes": ptr("16384"), "local.retention.bytes": ptr("1"),
	}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	produce(t, ctx, b.Addr(), 0, n)
	waitFor(t, ctx, "the broker to say local retention waits for uploads", func() bool {
		return strings.Contains(b.Log(), "local retention waits for the upload") && strings.Contains(b.Log(), "tiered storage: will retry")
	})
	if got := listOffset(t, ctx, adm, -4); got != 0 {
		t.Fatalf("local log start %d with nothing uploaded: local retention deleted data that exists nowhere else", got)
	}
	if segs := localSegments(t, b); segs < 5 {
		t.Fatalf("%d local segments, want all of them (5 or more)", segs)
	}
	consumeAll(t, ctx, b.Addr(), n)
}
