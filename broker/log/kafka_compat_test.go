package log_test

// Apache Kafka's own DumpLogSegments reads a partition that Tributary wrote.
//
// The test writes a partition through the log API (several segments, every
// codec, keys, null keys and values, headers, an idempotent batch, a batch
// with timestamps older than the ones before it, and a LogAppendTime batch),
// closes it cleanly, then runs Kafka 4.4.0's DumpLogSegments on every file:
//
//	--deep-iteration      --files <every .log, .index and .timeindex>
//	--verify-index-only   --files <every .index and .timeindex>
//	--index-sanity-check  --files <every .index and .timeindex>
//
// It checks that Kafka reports exactly what Tributary wrote. That covers every
// batch and record, and every index entry as Kafka's LogSegment would have
// written it. It also checks that Kafka printed no problem: DumpLogSegments
// exits 0 even when it finds index mismatches, so the test checks stderr too.
//
// Kafka comes from scripts/kafka-jars.sh (Maven Central, cached), or from
// TRIBUTARY_KAFKA_LIB. See docs/kafka-reference.md for the output format.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/internal/testbroker"
)

const dumpLogSegmentsClass = "org.apache.kafka.tools.DumpLogSegments"

// What Tributary wrote, as DumpLogSegments should report it.
type wantBatch struct {
	base, last    int64
	count         int
	codec         string // DumpLogSegments' compresscodec name
	logAppendTime bool
	maxTimestamp  int64
	size          int64
	leaderEpoch   int32
	producerID    int64
	producerEpoch int16
	baseSequence  int32
	records       []wantRecord
}

type wantRecord struct {
	offset, timestamp  int64
	keySize, valueSize int
	sequence           int32
	headerKeys         []string
}

func (b wantBatch) lastSequence() int32 {
	if b.baseSequence < 0 {
		return -1
	}
	return b.baseSequence + int32(b.last-b.base)
}

var codecNames = map[record.Codec]string{
	record.CodecNone: "none", record.CodecGzip: "gzip", record.CodecSnappy: "snappy",
	record.CodecLZ4: "lz4", record.CodecZstd: "zstd",
}

func TestKafkaDumpLogSegmentsReadsOurLog(t *testing.T) {
	java, lib := testbroker.KafkaLib(t)

	const (
		segmentBytes  = 2048
		indexInterval = 300
		leaderEpoch   = 7
	)
	dir := filepath.Join(t.TempDir(), "compat-0")
	cfg := log.DefaultConfig()
	cfg.SegmentBytes = segmentBytes
	cfg.IndexIntervalBytes = indexInterval
	var clock atomic.Int64
	clock.Store(time.Now().Add(-time.Hour).UnixMilli())
	l, err := log.Open(dir, cfg, log.Options{Now: func() time.Time { return time.UnixMilli(clock.Load()) }})
	if err != nil {
		t.Fatal(err)
	}

	var want []wantBatch
	appendBatch := func(opts record.BuildOptions, kvs []record.KV) {
		t.Helper()
		opts.BaseTimestamp = clock.Load()
		b, err := record.Build(opts, record.NewRecords(kvs...))
		if err != nil {
			t.Fatal(err)
		}
		size := int64(len(b))
		info, err := l.AppendAsLeader(b, leaderEpoch)
		if err != nil {
			t.Fatalf("append %s batch: %v", codecNames[opts.Codec], err)
		}
		w := wantBatch{
			base: info.FirstOffset, last: info.LastOffset, count: len(kvs),
			codec: codecNames[opts.Codec], size: size, leaderEpoch: leaderEpoch,
			producerID: opts.ProducerID, producerEpoch: opts.ProducerEpoch, baseSequence: opts.BaseSequence,
			logAppendTime: info.LogAppendTime >= 0, maxTimestamp: -1,
		}
		for i, kv := range kvs {
			r := wantRecord{
				offset: info.FirstOffset + int64(i), timestamp: opts.BaseTimestamp + kv.TimestampDelta,
				keySize: -1, valueSize: -1, sequence: -1,
			}
			if w.logAppendTime {
				r.timestamp = info.LogAppendTime
			}
			if kv.Key != nil {
				r.keySize = len(kv.Key)
			}
			if kv.Value != nil {
				r.valueSize = len(kv.Value)
			}
			if opts.BaseSequence >= 0 {
				r.sequence = opts.BaseSequence + int32(i)
			}
			for _, h := range kv.Headers {
				r.headerKeys = append(r.headerKeys, h.Key)
			}
			w.maxTimestamp = max(w.maxTimestamp, r.timestamp)
			w.records = append(w.records, r)
		}
		if info.LastOffset-info.FirstOffset+1 != int64(len(kvs)) || info.Records != int64(len(kvs)) {
			t.Fatalf("append info %+v for %d records", info, len(kvs))
		}
		want = append(want, w)
	}
	records := func(batch, n int) []record.KV {
		kvs := make([]record.KV, n)
		for j := range kvs {
			kv := &kvs[j]
			kv.TimestampDelta = int64(j * 3)
			switch j % 4 {
			case 0:
				kv.Key = []byte(fmt.Sprintf("user-%d", batch*10+j))
				kv.Value = []byte(strings.Repeat(fmt.Sprintf("page view %d/%d; ", batch, j), 1+batch%5))
				kv.Headers = []kmsg.Header{{Key: "trace-id", Value: []byte("abc")}, {Key: "source", Value: []byte("web")}}
			case 1:
				kv.Key = nil // a null key
				kv.Value = []byte(fmt.Sprintf(`{"event":"click","n":%d}`, j))
				kv.Headers = []kmsg.Header{{Key: "empty-value", Value: nil}}
			case 2:
				kv.Key = []byte{} // an empty, not null, key
				kv.Value = []byte{}
			case 3:
				kv.Key = []byte(fmt.Sprintf("user-%d", batch))
				kv.Value = nil // a tombstone
				kv.Headers = []kmsg.Header{{Key: "a"}, {Key: "b"}, {Key: "c"}}
			}
		}
		return kvs
	}

	codecs := []record.Codec{record.CodecNone, record.CodecGzip, record.CodecSnappy, record.CodecLZ4, record.CodecZstd}
	batch := 0
	for round := 0; round < 3; round++ {
		for _, c := range codecs {
			opts := record.DefaultBuildOptions()
			opts.Codec = c
			appendBatch(opts, records(batch, 2+batch%5))
			batch++
			clock.Add(25)
		}
	}
	// An idempotent producer's batch.
	opts := record.DefaultBuildOptions()
	opts.Codec, opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = record.CodecLZ4, 4242, 3, 17
	appendBatch(opts, records(batch, 4))
	batch++
	// A batch whose timestamps are older than the log's newest: the time
	// index must not get an entry for it.
	clock.Add(-1000)
	opts = record.DefaultBuildOptions()
	opts.Codec = record.CodecGzip
	appendBatch(opts, records(batch, 3))
	batch++
	clock.Add(2000)
	// LogAppendTime: the topic config changes, so the broker stamps the batch.
	cfg.LogAppendTime = true
	if err := l.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	opts = record.DefaultBuildOptions()
	opts.Codec = record.CodecZstd
	appendBatch(opts, records(batch, 5))
	batch++
	if !want[len(want)-1].logAppendTime {
		t.Fatal("AppendInfo.LogAppendTime not set for a LogAppendTime topic")
	}
	cfg.LogAppendTime = false
	if err := l.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	for _, c := range []record.Codec{record.CodecSnappy, record.CodecNone} {
		clock.Add(10)
		opts = record.DefaultBuildOptions()
		opts.Codec = c
		appendBatch(opts, records(batch, 3))
		batch++
	}
	if n := l.SegmentCount(); n < 3 {
		t.Fatalf("wrote %d segments, want at least 3 (segment.bytes=%d)", n, segmentBytes)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	// The segment files, by base offset.
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	sort.Strings(logs) // 20-digit names sort by offset
	var indexes []string
	var bases []int64
	for _, f := range logs {
		stem := strings.TrimSuffix(f, ".log")
		base, err := strconv.ParseInt(filepath.Base(stem), 10, 64)
		if err != nil {
			t.Fatalf("segment file %s: %v", f, err)
		}
		bases = append(bases, base)
		for _, suffix := range []string{".index", ".timeindex"} {
			if _, err := os.Stat(stem + suffix); err != nil {
				t.Fatalf("segment %d has no %s: %v", base, suffix, err)
			}
			indexes = append(indexes, stem+suffix)
		}
	}

	// Run the three DumpLogSegments passes in parallel (about 0.5 s of JVM each).
	logConf := filepath.Join(t.TempDir(), "log4j2.properties")
	if err := os.WriteFile(logConf, []byte(log4j2Quiet), 0o644); err != nil {
		t.Fatal(err)
	}
	passes := map[string][]string{
		"deep":   {"--deep-iteration", "--files", strings.Join(append(append([]string{}, logs...), indexes...), ",")},
		"verify": {"--verify-index-only", "--files", strings.Join(indexes, ",")},
		"sanity": {"--index-sanity-check", "--files", strings.Join(indexes, ",")},
	}
	outs := make(map[string]string)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, args := range passes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, stderr := runDumpLogSegments(t, java, lib, logConf, args)
			mu.Lock()
			defer mu.Unlock()
			outs[name] = out
			checkDumpStderr(t, args[0], stderr)
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	dump := parseDump(t, outs["deep"])

	// .log: the batches, segment by segment, and their records.
	var got []gotBatch
	for i, f := range logs {
		d := dump[f]
		if d == nil {
			t.Fatalf("DumpLogSegments did not dump %s", f)
		}
		if d.startOffset != bases[i] {
			t.Errorf("%s: Log starting offset %d", filepath.Base(f), d.startOffset)
		}
		var pos int64
		for _, b := range d.batches {
			if b.position != pos {
				t.Errorf("%s: batch %d at position %d, want %d", filepath.Base(f), b.f["baseOffset"], b.position, pos)
			}
			pos += b.f["size"]
		}
		if len(d.batches) == 0 {
			t.Errorf("%s: no batches", filepath.Base(f))
		} else if first := d.batches[0].f["baseOffset"]; first != bases[i] {
			t.Errorf("%s: first batch at offset %d", filepath.Base(f), first)
		}
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() != pos {
			t.Errorf("%s: %d bytes, batches cover %d", filepath.Base(f), st.Size(), pos)
		}
		// Kafka's roll rule: a segment rolls when the next batch does not fit.
		if i+1 < len(logs) && len(dump[logs[i+1]].batches) > 0 {
			if next := dump[logs[i+1]].batches[0].f["size"]; pos+next <= segmentBytes || (pos > segmentBytes && len(d.batches) > 1) {
				t.Errorf("%s: rolled at %d bytes with a next batch of %d (segment.bytes=%d)", filepath.Base(f), pos, next, segmentBytes)
			}
		}
		got = append(got, d.batches...)
	}
	if len(got) != len(want) {
		t.Fatalf("DumpLogSegments reports %d batches, Tributary wrote %d", len(got), len(want))
	}
	for i, w := range want {
		checkBatch(t, got[i], w)
	}

	// .index and .timeindex: exactly what Kafka's LogSegment.append would have
	// written for these batches (see docs/kafka-reference.md).
	wi := 0
	for i, f := range logs {
		d := dump[f]
		var wantOffsets, wantTimes [][2]int64
		var since, maxTs, maxTsOffset int64 = 0, -1, -1
		lastTs := int64(-1)
		maybeTime := func(ts, off int64) {
			if ts > lastTs {
				wantTimes = append(wantTimes, [2]int64{ts, off})
				lastTs = ts
			}
		}
		for _, b := range d.batches {
			w := want[wi]
			wi++
			if w.maxTimestamp > maxTs {
				maxTs, maxTsOffset = w.maxTimestamp, w.last
			}
			if since > indexInterval {
				wantOffsets = append(wantOffsets, [2]int64{w.last, b.position})
				maybeTime(maxTs, maxTsOffset)
				since = 0
			}
			since += w.size
		}
		maybeTime(maxTs, maxTsOffset) // on roll and on close
		stem := strings.TrimSuffix(f, ".log")
		if g := dump[stem+".index"]; g == nil {
			t.Errorf("%d.index not dumped", bases[i])
		} else if !equalPairs(g.entries, wantOffsets) && !(len(wantOffsets) == 0 && g.empty) {
			t.Errorf("%s: offset index\n got %v\nwant %v (offset, position)", filepath.Base(stem+".index"), g.entries, wantOffsets)
		}
		if g := dump[stem+".timeindex"]; g == nil {
			t.Errorf("%d.timeindex not dumped", bases[i])
		} else if !equalPairs(g.entries, wantTimes) {
			t.Errorf("%s: time index\n got %v\nwant %v (timestamp, offset)", filepath.Base(stem+".timeindex"), g.entries, wantTimes)
		}
		// Files are trimmed to their entries after a clean close, as Kafka's.
		for suffix, width := range map[string]int64{".index": 8, ".timeindex": 12} {
			st, err := os.Stat(stem + suffix)
			if err != nil {
				t.Fatal(err)
			}
			if g := dump[stem+suffix]; g != nil && st.Size() != width*int64(len(g.entries)) {
				t.Errorf("%s: %d bytes for %d entries", filepath.Base(stem+suffix), st.Size(), len(g.entries))
			}
		}
	}

	// --verify-index-only: nothing but the Dumping lines (problems go to
	// stderr, checked above).
	for _, line := range strings.Split(strings.TrimSpace(outs["verify"]), "\n") {
		if !strings.HasPrefix(line, "Dumping ") && !(strings.HasSuffix(line, ".index is empty.")) {
			t.Errorf("--verify-index-only: unexpected line %q", line)
		}
	}
	// --index-sanity-check: the check the broker runs on startup.
	sanity := outs["sanity"]
	for _, f := range indexes {
		passed := strings.Contains(sanity, f+" passed sanity check.\n")
		empty := strings.HasSuffix(f, ".index") && strings.Contains(sanity, f+" is empty.\n")
		if !passed && !empty {
			t.Errorf("--index-sanity-check: %s did not pass:\n%s", f, sanity)
		}
	}
}

func checkBatch(t *testing.T, g gotBatch, w wantBatch) {
	t.Helper()
	where := fmt.Sprintf("batch at offset %d (%s)", w.base, w.codec)
	wantTsType := "CreateTime"
	if w.logAppendTime {
		wantTsType = "LogAppendTime"
	}
	for k, v := range map[string]int64{
		"baseOffset": w.base, "lastOffset": w.last, "count": int64(w.count),
		"baseSequence": int64(w.baseSequence), "lastSequence": int64(w.lastSequence()),
		"producerId": w.producerID, "producerEpoch": int64(w.producerEpoch),
		"partitionLeaderEpoch": int64(w.leaderEpoch), "size": w.size, "magic": 2,
		wantTsType: w.maxTimestamp,
	} {
		if gv, ok := g.f[k]; !ok || gv != v {
			t.Errorf("%s: %s: %v, want %d\n%s", where, k, g.s[k], v, g.line)
		}
	}
	for k, v := range map[string]string{
		"compresscodec": w.codec, "isvalid": "true", "isTransactional": "false",
		"isControl": "false", "deleteHorizonMs": "OptionalLong.empty",
	} {
		if g.s[k] != v {
			t.Errorf("%s: %s: %q, want %q\n%s", where, k, g.s[k], v, g.line)
		}
	}
	if len(g.records) != len(w.records) {
		t.Errorf("%s: %d records, want %d", where, len(g.records), len(w.records))
		return
	}
	for i, wr := range w.records {
		gr := g.records[i]
		for k, v := range map[string]int64{
			"offset": wr.offset, wantTsType: wr.timestamp, "keySize": int64(wr.keySize),
			"valueSize": int64(wr.valueSize), "sequence": int64(wr.sequence),
		} {
			if gv, ok := gr.f[k]; !ok || gv != v {
				t.Errorf("%s, record %d: %s: %v, want %d\n%s", where, wr.offset, k, gr.s[k], v, gr.line)
			}
		}
		if hk := "[" + strings.Join(wr.headerKeys, ",") + "]"; gr.s["headerKeys"] != hk {
			t.Errorf("%s, record %d: headerKeys %s, want %s", where, wr.offset, gr.s["headerKeys"], hk)
		}
	}
}

const log4j2Quiet = `status = error
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %p %m (%c)%n
rootLogger.level = ERROR
rootLogger.appenderRef.stderr.ref = STDERR
`

// runDumpLogSegments runs the tool and returns its stdout and the lines it
// printed on stderr. Stderr is where DumpLogSegments reports index mismatches,
// non-consecutive offsets and exceptions, with exit status 0 for the first
// two, so callers must look at it.
func runDumpLogSegments(t *testing.T, java, lib, logConf string, args []string) (stdout string, stderr []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	argv := append([]string{
		"-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
		"-Djava.awt.headless=true", "-Dlog4j2.configurationFile=" + logConf,
		"-cp", filepath.Join(lib, "*"), dumpLogSegmentsClass,
	}, args...)
	cmd := exec.CommandContext(ctx, java, argv...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	t.Logf("DumpLogSegments %s: %v", args[0], time.Since(start).Round(time.Millisecond))
	for _, line := range strings.Split(errOut.String(), "\n") {
		if strings.TrimSpace(line) != "" && !strings.HasPrefix(line, "Picked up ") {
			stderr = append(stderr, line)
		}
	}
	if err != nil {
		t.Errorf("java %s: %v\nstderr:\n%s\nstdout:\n%s", strings.Join(argv, " "), err, errOut.String(), out.String())
	}
	return out.String(), stderr
}

// checkDumpStderr fails on every problem DumpLogSegments reported except one
// quirk of the tool: it checks offset continuity from -1 in every .log file,
// so a segment with base offset B > 0 always gets "Non-consecutive offsets
// in <file>" / "  -1 is followed by B". Kafka's own segments get it too.
func checkDumpStderr(t *testing.T, pass string, stderr []string) {
	t.Helper()
	nonConsecutive := regexp.MustCompile(`^Non-consecutive offsets in (.*/(\d{20})\.log)$`)
	var problems []string
	var base int64 = -1
	for _, line := range stderr {
		if m := nonConsecutive.FindStringSubmatch(line); m != nil {
			base = atoi(m[2])
			continue
		}
		if base > 0 && line == fmt.Sprintf("  -1 is followed by %d", base) {
			base = -1 // one quirk line per file, no more
			continue
		}
		base = -1
		problems = append(problems, line)
	}
	if len(problems) > 0 {
		t.Errorf("DumpLogSegments %s reported problems:\n%s", pass, strings.Join(problems, "\n"))
	}
}

// Parsed DumpLogSegments output, per file path as given to --files.
type dumpedFile struct {
	startOffset int64
	batches     []gotBatch
	entries     [][2]int64 // .index: (offset, position); .timeindex: (timestamp, offset)
	empty       bool       // "<file> is empty."
}

type gotBatch struct {
	fields
	position int64
	records  []fields
}

type fields struct {
	line string
	s    map[string]string // every "name: value" of the line
	f    map[string]int64  // those that are integers
}

var (
	fieldRe      = regexp.MustCompile(`(\w+): (\[[^\]]*\]|\S+)`)
	indexRe      = regexp.MustCompile(`^offset: (\d+) position: (\d+)$`)
	timeIndexRe  = regexp.MustCompile(`^timestamp: (-?\d+) offset: (\d+)$`)
	startRe      = regexp.MustCompile(`^Log starting offset: (\d+)$`)
	sanityPassRe = regexp.MustCompile(` (passed sanity check|is empty)\.$`)
)

func parseFields(line string) fields {
	fs := fields{line: line, s: map[string]string{}, f: map[string]int64{}}
	for _, m := range fieldRe.FindAllStringSubmatch(line, -1) {
		fs.s[m[1]] = m[2]
		if v, err := strconv.ParseInt(m[2], 10, 64); err == nil {
			fs.f[m[1]] = v
		}
	}
	return fs
}

// parseDump reads a --deep-iteration dump. Any line it does not know, such
// as "Found N invalid bytes at the end of ...", fails the test.
func parseDump(t *testing.T, out string) map[string]*dumpedFile {
	t.Helper()
	files := map[string]*dumpedFile{}
	var cur *dumpedFile
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "Dumping "):
			cur = &dumpedFile{startOffset: -1}
			files[strings.TrimPrefix(line, "Dumping ")] = cur
		case cur == nil:
			t.Errorf("DumpLogSegments: line before any Dumping line: %q", line)
		case startRe.MatchString(line):
			cur.startOffset, _ = strconv.ParseInt(startRe.FindStringSubmatch(line)[1], 10, 64)
		case strings.HasPrefix(line, "baseOffset: "):
			b := gotBatch{fields: parseFields(line)}
			b.position = b.f["position"]
			cur.batches = append(cur.batches, b)
		case strings.HasPrefix(line, "| offset: "):
			if len(cur.batches) == 0 {
				t.Errorf("DumpLogSegments: record line before a batch line: %q", line)
				continue
			}
			last := &cur.batches[len(cur.batches)-1]
			last.records = append(last.records, parseFields(line))
		case indexRe.MatchString(line):
			m := indexRe.FindStringSubmatch(line)
			cur.entries = append(cur.entries, [2]int64{atoi(m[1]), atoi(m[2])})
		case timeIndexRe.MatchString(line):
			m := timeIndexRe.FindStringSubmatch(line)
			cur.entries = append(cur.entries, [2]int64{atoi(m[1]), atoi(m[2])})
		case strings.HasSuffix(line, " is empty."):
			cur.empty = true
		case sanityPassRe.MatchString(line):
		default:
			t.Errorf("DumpLogSegments: unexpected line %q", line)
		}
	}
	return files
}

func atoi(s string) int64 {
	v, _ := strconv.ParseInt(s, 10, 64)
	return v
}

func equalPairs(a, b [][2]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
