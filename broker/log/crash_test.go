package log_test

// TestKillNineDuringAppends: the storage engine survives kill -9.
//
// The test binary re-executes itself as a child process that runs
// TestHelperAppender: it opens a log dir the way the broker does (OpenDir,
// Create), appends batches as fast as it can with AppendAsLeader, and after
// each append returns writes one line to its stdout, unbuffered, naming the
// batches' offsets and a SHA-256 of their bytes. That line is the
// acknowledgement a producer would get. The parent SIGKILLs the child at a
// random moment, 20-300 ms after it reported ready (every third run: after
// it started, so the kill may land while it is still recovering), ten times
// in a row on the same directory: each child first recovers what the
// previous one left and then keeps appending.
//
// After every kill the parent checks the directory as it was left:
//
//   - the clean-shutdown marker is absent, so opening it takes the unclean
//     recovery path;
//   - OpenDir succeeds, and every batch in the log, from the log start to the
//     log end, is whole, passes Validate (CRC included), decodes, and is one
//     the children really wrote: each record carries a header naming the run,
//     append and batch that made it, and the test regenerates that batch and
//     compares keys, values, headers and timestamps;
//   - offsets are dense, with no gaps or duplicates, and every batch carries
//     the leader epoch of the run that wrote it;
//   - every acknowledged batch is there, at its acknowledged offsets, with the
//     same bytes as sent apart from the base offset and partition leader
//     epoch the broker writes; batches written but not acknowledged may be
//     there too, at most one append's worth per run;
//   - the log end offset is at least one past the last acknowledged offset;
//   - whatever a recovery once found in the log is still there after the
//     next child's recovery (recovery never drops a whole, valid batch);
//   - reads at the first and last offset of every batch return that batch
//     (so the offset indexes that recovery rebuilt or trusted are right);
//   - the leader-epoch cache has one entry per run, starting at its first
//     batch.
//
// The parent checks a copy of the directory, so that the next child meets
// exactly what the kill left (the parent's own recovery would otherwise
// repair it first). After the last kill it opens the real directory, checks
// it the same way, closes it cleanly, and checks that the clean path (no
// scan) sees the same log.
//
// A SIGKILL that lands inside write(2) leaves a torn batch at the end of the
// active segment, the case recovery exists for; but a kill lands there only
// about once in a hundred kills. So after about half of the kills the
// parent also leaves on the real directory what such a kill leaves: a
// strict prefix of the bytes of the append the child would have made next
// (see tearTail). The next child, or the final open, must truncate it.
//
// Payloads vary in size (null and empty values up to tens of KiB per batch,
// some batches larger than an index interval, a few larger than a
// segment), compressibility, keys (null or not) and headers, and use every
// codec; one append in five carries two or three batches. Segments are 64
// KiB, so the children roll many of them; flush.ms and the checkpoint
// interval are short, so recovery points move and checkpoints are written
// while the children run.
//
// The seed is logged; TRIBUTARY_CRASH_SEED=<seed> replays the same payloads
// and kill delays (the kill moments themselves depend on scheduling).

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/record"
)

const (
	crashRuns = 10

	// Set by the parent for the child process.
	crashEnvChildDir  = "TRIBUTARY_CRASH_CHILD_DIR"
	crashEnvChildSeed = "TRIBUTARY_CRASH_CHILD_SEED"
	crashEnvChildRun  = "TRIBUTARY_CRASH_CHILD_RUN"
	// Set by a person to replay a failure.
	crashEnvSeed = "TRIBUTARY_CRASH_SEED"

	crashIDHeader = "tributary-crash-id"
	crashBaseTime = int64(1_700_000_000_000)
)

var crashTP = log.TopicPartition{Topic: "crash", Partition: 0}

// crashDirConfig is the configuration of the child and of the parent's
// checks: small segments and index intervals, and frequent flushes and
// checkpoints, so that a kill lands among all of them.
func crashDirConfig(path string, logger *slog.Logger) log.DirConfig {
	cfg := log.DefaultDirConfig(path)
	cfg.Defaults.SegmentBytes = 64 << 10
	cfg.Defaults.IndexIntervalBytes = 1024
	cfg.Defaults.RetentionMs = -1
	cfg.Defaults.FlushMs = 40 * time.Millisecond
	cfg.FlushCheckInterval = 10 * time.Millisecond
	cfg.CheckpointInterval = 15 * time.Millisecond
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg.Logger = logger
	return cfg
}

// crashBatch is one generated batch: its records, as Build took them, and
// the bytes Build made (base offset 0, no partition leader epoch).
type crashBatch struct {
	baseTs int64
	recs   []kmsg.Record
	raw    record.Batch
	sum    [32]byte // crashSum(raw)
}

// crashSum hashes a batch with the two fields the broker writes, base offset
// and partition leader epoch, set to what the producer sends.
func crashSum(b record.Batch) [32]byte {
	c := bytes.Clone(b)
	record.Batch(c).SetBaseOffset(0)
	record.Batch(c).SetPartitionLeaderEpoch(-1)
	return sha256.Sum256(c)
}

// crashGenAppend is append seq of run: one to three batches, a function of
// (seed, run, seq) alone, so the parent can regenerate any batch it finds.
func crashGenAppend(seed uint64, run, seq int) []crashBatch {
	rng := rand.New(rand.NewPCG(seed, uint64(run)<<32|uint64(seq)))
	n := 1
	if rng.IntN(5) == 0 {
		n = 2 + rng.IntN(2)
	}
	out := make([]crashBatch, n)
	for bi := range out {
		codec := record.Codec(rng.IntN(5))
		nrec := 1 + rng.IntN(10)
		baseTs := crashBaseTime + int64(run)*10_000_000 + int64(seq)*100 + int64(bi)*20
		kvs := make([]record.KV, nrec)
		for i := range kvs {
			kv := &kvs[i]
			if rng.IntN(4) != 0 {
				kv.Key = fmt.Appendf(nil, "key-%d", rng.IntN(1000))
			}
			var size int
			switch r := rng.IntN(100); {
			case r < 10:
				size = -1 // null value
			case r < 50:
				size = rng.IntN(64)
			case r < 95:
				size = 100 + rng.IntN(1500)
			default:
				size = 2000 + rng.IntN(6000)
			}
			if size >= 0 {
				kv.Value = make([]byte, size)
				if rng.IntN(2) == 0 {
					for j := range kv.Value { // compressible
						kv.Value[j] = "tributary-"[(j+i)%10]
					}
				} else {
					for j := range kv.Value {
						kv.Value[j] = byte(rng.Uint32())
					}
				}
			}
			kv.Headers = []kmsg.Header{{Key: crashIDHeader, Value: fmt.Appendf(nil, "%d/%d/%d", run, seq, bi)}}
			if rng.IntN(3) == 0 {
				kv.Headers = append(kv.Headers, kmsg.Header{Key: "null-value"})
			}
			kv.TimestampDelta = int64(i * 3)
		}
		opts := record.DefaultBuildOptions()
		opts.Codec, opts.BaseTimestamp = codec, baseTs
		recs := record.NewRecords(kvs...)
		raw, err := record.Build(opts, recs)
		if err != nil {
			panic(fmt.Sprintf("crash test: build run %d seq %d batch %d: %v", run, seq, bi, err))
		}
		out[bi] = crashBatch{baseTs: baseTs, recs: recs, raw: raw, sum: crashSum(raw)}
	}
	return out
}

// TestHelperAppender is the child process of TestKillNineDuringAppends; it
// does nothing in a normal test run.
func TestHelperAppender(t *testing.T) {
	dir := os.Getenv(crashEnvChildDir)
	if dir == "" {
		t.Skip("helper process of TestKillNineDuringAppends")
	}
	fail := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "crash child: "+format+"\n", args...)
		os.Exit(2)
	}
	seed, err := strconv.ParseUint(os.Getenv(crashEnvChildSeed), 10, 64)
	if err != nil {
		fail("seed: %v", err)
	}
	run, err := strconv.Atoi(os.Getenv(crashEnvChildRun))
	if err != nil {
		fail("run: %v", err)
	}
	cfg := crashDirConfig(dir, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	d, err := log.OpenDir(cfg)
	if err != nil {
		fail("OpenDir: %v", err)
	}
	l, err := d.Create(crashTP, cfg.Defaults)
	if err != nil {
		fail("Create: %v", err)
	}
	ack := func(line []byte) {
		// One write of a short line to a pipe is atomic: the parent sees
		// the whole acknowledgement or none of it.
		if _, err := os.Stdout.Write(line); err != nil {
			fail("stdout: %v", err)
		}
	}
	ack(fmt.Appendf(nil, "READY %d\n", l.LogEndOffset()))
	deadline := time.Now().Add(30 * time.Second)
	for seq := 0; time.Now().Before(deadline); seq++ {
		app := crashGenAppend(seed, run, seq)
		var data []byte
		for _, b := range app {
			data = append(data, b.raw...)
		}
		if _, err := l.AppendAsLeader(data, int32(run)); err != nil {
			fail("append run %d seq %d: %v", run, seq, err)
		}
		// AppendAsLeader stamped the offsets into data.
		line := fmt.Appendf(nil, "ACK %d %d %d", run, seq, len(app))
		rest := data
		for _, g := range app {
			b, r, _ := record.Split(rest)
			rest = r
			line = fmt.Appendf(line, " %d %d %x", b.BaseOffset(), b.LastOffset(), g.sum)
		}
		ack(append(line, '\n'))
	}
	fail("not killed within 30s")
}

// crashAck is one acknowledged batch.
type crashAck struct {
	run, seq, bi int
	base, last   int64
	sum          [32]byte
}

func parseCrashAck(line string) ([]crashAck, error) {
	f := strings.Fields(line)
	bad := fmt.Errorf("malformed acknowledgement %q", line)
	if len(f) < 4 || f[0] != "ACK" {
		return nil, bad
	}
	run, err1 := strconv.Atoi(f[1])
	seq, err2 := strconv.Atoi(f[2])
	n, err3 := strconv.Atoi(f[3])
	if err := errors.Join(err1, err2, err3); err != nil || len(f) != 4+3*n {
		return nil, bad
	}
	out := make([]crashAck, n)
	for i := range out {
		a := &out[i]
		a.run, a.seq, a.bi = run, seq, i
		var err1, err2 error
		a.base, err1 = strconv.ParseInt(f[4+3*i], 10, 64)
		a.last, err2 = strconv.ParseInt(f[5+3*i], 10, 64)
		sum, err3 := hex.DecodeString(f[6+3*i])
		if errors.Join(err1, err2, err3) != nil || len(sum) != 32 {
			return nil, bad
		}
		copy(a.sum[:], sum)
	}
	return out, nil
}

func crashSeed(t *testing.T) uint64 {
	if s := os.Getenv(crashEnvSeed); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", crashEnvSeed, s, err)
		}
		return seed
	}
	return uint64(time.Now().UnixNano())
}

// crashTestLogger sends the log's warnings to the test's output and counts
// the torn tails recovery truncated.
func crashTestLogger(t *testing.T, torn *atomic.Int64) *slog.Logger {
	return slog.New(slog.NewTextHandler(crashTestWriter{t, torn}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type crashTestWriter struct {
	t    *testing.T
	torn *atomic.Int64
}

func (w crashTestWriter) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("torn tail")) {
		w.torn.Add(1)
	}
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// crashRunChild runs one child on dir, kills it delay after it reported
// ready (or, with fromStart, delay after it started, which may be while it
// is still recovering), and returns what it acknowledged and whether it had
// reported ready.
func crashRunChild(t *testing.T, dir string, seed uint64, run int, delay time.Duration, fromStart bool) (acked []crashAck, wasReady bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperAppender$", "-test.count=1")
	cmd.Env = append(os.Environ(),
		crashEnvChildDir+"="+dir,
		crashEnvChildSeed+"="+strconv.FormatUint(seed, 10),
		crashEnvChildRun+"="+strconv.Itoa(run),
	)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	var (
		mu     sync.Mutex
		acks   []crashAck
		badAck error
	)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		r := bufio.NewReader(stdout)
		isReady := false
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				// EOF: the child is dead. A line without its newline
				// was cut by the kill and acknowledges nothing.
				return
			}
			switch {
			case strings.HasPrefix(line, "READY"):
				if !isReady {
					isReady = true
					close(ready)
				}
			case strings.HasPrefix(line, "ACK"):
				a, err := parseCrashAck(line)
				mu.Lock()
				if err != nil && badAck == nil {
					badAck = err
				}
				acks = append(acks, a...)
				mu.Unlock()
			}
		}
	}()
	start := time.Now()
	if !fromStart {
		select {
		case <-ready:
		case <-readDone:
		case <-time.After(30 * time.Second):
			t.Errorf("run %d: child not ready after 30s", run)
		}
		start = time.Now()
	}
	select {
	case <-time.After(time.Until(start.Add(delay))):
	case <-readDone:
	}
	killErr := cmd.Process.Kill() // SIGKILL: kill -9
	<-readDone
	select {
	case <-ready:
		wasReady = true
	default:
	}
	werr := cmd.Wait()
	var ws syscall.WaitStatus
	if cmd.ProcessState != nil {
		ws, _ = cmd.ProcessState.Sys().(syscall.WaitStatus)
	}
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("run %d: the child did not die by our SIGKILL (kill: %v, wait: %v); its stderr:\n%s", run, killErr, werr, stderr.String())
	}
	if bytes.Contains(stderr.Bytes(), []byte("DATA RACE")) || bytes.Contains(stderr.Bytes(), []byte("panic:")) {
		t.Errorf("run %d: the child reported a problem on stderr:\n%s", run, stderr.String())
	} else if stderr.Len() > 0 {
		t.Logf("run %d: child stderr:\n%s", run, stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if badAck != nil {
		t.Fatalf("run %d: %v", run, badAck)
	}
	return acks, wasReady
}

// crashStored is one batch found in a recovered log.
type crashStored struct {
	run, seq, bi int
	base, last   int64
	epoch        int32
	sum          [32]byte
}

// crashChecker checks recovered logs against what the children wrote.
type crashChecker struct {
	t    *testing.T
	seed uint64
	gen  map[[2]int][]crashBatch
}

func (c *crashChecker) generated(run, seq int) []crashBatch {
	k := [2]int{run, seq}
	g, ok := c.gen[k]
	if !ok {
		g = crashGenAppend(c.seed, run, seq)
		c.gen[k] = g
	}
	return g
}

// readAll reads the whole log through Read, as a consumer would, and checks
// each batch: whole, valid, dense offsets, one the children wrote.
func (c *crashChecker) readAll(what string, l *log.Log) []crashStored {
	t := c.t
	t.Helper()
	var out []crashStored
	next, end := l.LogStartOffset(), l.LogEndOffset()
	if next != 0 {
		t.Fatalf("%s: log start offset %d, want 0", what, next)
	}
	for next < end {
		s, err := l.Read(next, log.ReadOptions{MaxBytes: 1 << 20, MinOneBatch: true, UpTo: -1})
		if err != nil {
			t.Fatalf("%s: read at %d (log end %d): %v", what, next, end, err)
		}
		data, err := s.ReadAll()
		if err != nil {
			t.Fatalf("%s: read at %d: %v", what, next, err)
		}
		n := 0
		for rest := data; ; n++ {
			b, r, ok := record.Split(rest)
			if !ok {
				break
			}
			rest = r
			if b.BaseOffset() != next {
				t.Fatalf("%s: batch at offset %d, want %d: offsets are not dense", what, b.BaseOffset(), next)
			}
			out = append(out, c.check(what, b))
			next = b.LastOffset() + 1
		}
		if n == 0 {
			t.Fatalf("%s: read at %d (log end %d) returned %d bytes and no whole batch", what, next, end, len(data))
		}
	}
	if next != end {
		t.Fatalf("%s: last batch ends at %d, log end offset is %d", what, next, end)
	}
	return out
}

// check validates one stored batch and compares it with the generated one.
func (c *crashChecker) check(what string, b record.Batch) crashStored {
	t := c.t
	t.Helper()
	if err := record.Validate(b, record.FromReplica, record.Limits{}); err != nil {
		t.Fatalf("%s: batch at %d is invalid: %v", what, b.BaseOffset(), err)
	}
	recs, err := b.DecodeRecords()
	if err != nil || len(recs) == 0 {
		t.Fatalf("%s: batch at %d does not decode (%d records): %v", what, b.BaseOffset(), len(recs), err)
	}
	st := crashStored{base: b.BaseOffset(), last: b.LastOffset(), epoch: b.PartitionLeaderEpoch(), sum: crashSum(b)}
	id := ""
	for _, h := range recs[0].Headers {
		if h.Key == crashIDHeader {
			id = string(h.Value)
		}
	}
	if _, err := fmt.Sscanf(id, "%d/%d/%d", &st.run, &st.seq, &st.bi); err != nil {
		t.Fatalf("%s: batch at %d has no readable %s header (%q): not written by the test", what, st.base, crashIDHeader, id)
	}
	gen := c.generated(st.run, st.seq)
	if st.bi >= len(gen) {
		t.Fatalf("%s: batch at %d claims to be batch %d of run %d append %d, which has %d", what, st.base, st.bi, st.run, st.seq, len(gen))
	}
	want := gen[st.bi]
	if err := crashSameRecords(b, recs, want); err != nil {
		t.Fatalf("%s: batch at %d (run %d append %d batch %d, %s): %v", what, st.base, st.run, st.seq, st.bi, b.Codec(), err)
	}
	if b.Codec() != want.raw.Codec() {
		t.Fatalf("%s: batch at %d has codec %s, was written with %s", what, st.base, b.Codec(), want.raw.Codec())
	}
	if st.epoch != int32(st.run) {
		t.Fatalf("%s: batch at %d has partition leader epoch %d, run %d appended it with epoch %d", what, st.base, st.epoch, st.run, st.run)
	}
	return st
}

// crashSameRecords compares a stored batch's records with those Build was
// given: keys, values, headers, offsets and timestamps.
func crashSameRecords(b record.Batch, got []kmsg.Record, want crashBatch) error {
	if len(got) != len(want.recs) {
		return fmt.Errorf("%d records, want %d", len(got), len(want.recs))
	}
	if b.BaseTimestamp() != want.baseTs {
		return fmt.Errorf("base timestamp %d, want %d", b.BaseTimestamp(), want.baseTs)
	}
	for i := range got {
		g, w := &got[i], &want.recs[i]
		switch {
		case g.OffsetDelta != w.OffsetDelta:
			return fmt.Errorf("record %d: offset delta %d, want %d", i, g.OffsetDelta, w.OffsetDelta)
		case !crashSameBytes(g.Key, w.Key):
			return fmt.Errorf("record %d: key %q, want %q", i, g.Key, w.Key)
		case !crashSameBytes(g.Value, w.Value):
			return fmt.Errorf("record %d: value of %d bytes differs from the %d written", i, len(g.Value), len(w.Value))
		case b.RecordTimestamp(g) != want.baseTs+w.TimestampDelta64:
			return fmt.Errorf("record %d: timestamp %d, want %d", i, b.RecordTimestamp(g), want.baseTs+w.TimestampDelta64)
		case len(g.Headers) != len(w.Headers):
			return fmt.Errorf("record %d: %d headers, want %d", i, len(g.Headers), len(w.Headers))
		}
		for j := range g.Headers {
			if g.Headers[j].Key != w.Headers[j].Key || !crashSameBytes(g.Headers[j].Value, w.Headers[j].Value) {
				return fmt.Errorf("record %d header %d: %q=%q, want %q=%q", i, j, g.Headers[j].Key, g.Headers[j].Value, w.Headers[j].Key, w.Headers[j].Value)
			}
		}
	}
	return nil
}

// crashSameBytes is bytes.Equal that tells null from empty.
func crashSameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// verify checks a recovered log against the acknowledgements and returns
// what it holds.
func (c *crashChecker) verify(what string, l *log.Log, acks []crashAck) []crashStored {
	t := c.t
	t.Helper()
	stored := c.readAll(what, l)

	// Each run's batches follow the previous run's, in the order the run
	// generated them, with none skipped.
	type pos struct{ run, seq, bi int }
	prev := pos{-1, 0, 0}
	for _, s := range stored {
		cur := pos{s.run, s.seq, s.bi}
		var ok bool
		switch {
		case cur.run != prev.run:
			ok = cur.run > prev.run && cur.seq == 0 && cur.bi == 0
		case cur.seq == prev.seq:
			ok = cur.bi == prev.bi+1
		default:
			ok = cur.seq == prev.seq+1 && cur.bi == 0 && prev.bi == len(c.generated(prev.run, prev.seq))-1
		}
		if !ok {
			t.Fatalf("%s: batch at %d is run %d append %d batch %d, after run %d append %d batch %d: batches are missing, duplicated or out of order",
				what, s.base, cur.run, cur.seq, cur.bi, prev.run, prev.seq, prev.bi)
		}
		prev = cur
	}

	// Every acknowledged batch is there, at its offsets, with its bytes.
	byBase := make(map[int64]crashStored, len(stored))
	for _, s := range stored {
		byBase[s.base] = s
	}
	lastAcked := map[int]int{} // run -> last acknowledged append
	var lastAck int64 = -1
	for _, a := range acks {
		s, ok := byBase[a.base]
		switch {
		case !ok:
			t.Fatalf("%s: acknowledged batch %d of run %d append %d at offsets [%d, %d] is lost (log end %d)", what, a.bi, a.run, a.seq, a.base, a.last, l.LogEndOffset())
		case s.run != a.run || s.seq != a.seq || s.bi != a.bi || s.last != a.last:
			t.Fatalf("%s: offsets [%d, %d] were acknowledged for run %d append %d batch %d; the log has run %d append %d batch %d at [%d, %d]",
				what, a.base, a.last, a.run, a.seq, a.bi, s.run, s.seq, s.bi, s.base, s.last)
		case s.sum != a.sum:
			t.Fatalf("%s: acknowledged batch at %d (run %d append %d batch %d) has different bytes (sha256 %x, acknowledged %x)", what, a.base, a.run, a.seq, a.bi, s.sum, a.sum)
		}
		lastAcked[a.run] = max(lastAcked[a.run], a.seq)
		lastAck = max(lastAck, a.last)
	}
	if l.LogEndOffset() < lastAck+1 {
		t.Fatalf("%s: log end offset %d, but offset %d was acknowledged", what, l.LogEndOffset(), lastAck)
	}
	// A kill between an append and its acknowledgement leaves at most that
	// one append unacknowledged.
	lastStored := map[int]int{}
	for _, s := range stored {
		lastStored[s.run] = s.seq
	}
	for run, seq := range lastStored {
		acked, ok := lastAcked[run]
		if !ok {
			acked = -1
		}
		if seq > acked+1 {
			t.Fatalf("%s: run %d acknowledged appends up to %d, the log holds appends up to %d: more than one append was unacknowledged", what, run, acked, seq)
		}
	}

	// Reads at the first and last offset of each batch return it.
	for _, s := range stored {
		for _, o := range []int64{s.base, s.last} {
			sl, err := l.Read(o, log.ReadOptions{MaxBytes: 1, MinOneBatch: true, UpTo: -1})
			if err != nil {
				t.Fatalf("%s: read at %d: %v", what, o, err)
			}
			data, err := sl.ReadAll()
			b, _, ok := record.Split(data)
			if err != nil || !ok || sl.FirstOffset != s.base || b.BaseOffset() != s.base || crashSum(b) != s.sum {
				t.Fatalf("%s: read at %d returned first offset %d (%d bytes, err %v), want the batch at %d", what, o, sl.FirstOffset, len(data), err, s.base)
			}
		}
	}

	// One leader epoch per run, starting at its first batch.
	var want []log.EpochEntry
	for _, s := range stored {
		if len(want) == 0 || want[len(want)-1].Epoch != s.epoch {
			want = append(want, log.EpochEntry{Epoch: s.epoch, StartOffset: s.base})
		}
	}
	if got := l.LeaderEpochs(); !crashSameEpochs(got, want) {
		t.Errorf("%s: leader epochs %v, want %v (the first batch of each run)", what, got, want)
	}
	return stored
}

func crashSameEpochs(a, b []log.EpochEntry) bool {
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

func crashSameStored(a, b []crashStored) bool {
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

// crashOpen opens a log dir and its partition. The returned close closes
// the dir once; the test's cleanup closes it if the test stops first.
func crashOpen(t *testing.T, path string, torn *atomic.Int64) (closeDir func() error, l *log.Log) {
	t.Helper()
	d, err := log.OpenDir(crashDirConfig(path, crashTestLogger(t, torn)))
	if err != nil {
		t.Fatalf("OpenDir %s: %v", path, err)
	}
	var once sync.Once
	var cerr error
	closeDir = func() error {
		once.Do(func() { cerr = d.Close() })
		return cerr
	}
	t.Cleanup(func() { closeDir() })
	l, ok := d.Log(crashTP)
	if !ok {
		t.Fatalf("OpenDir %s: partition %s not found", path, crashTP)
	}
	return closeDir, l
}

// tearTail leaves on dir what a kill in the middle of the next append's
// write(2) leaves: a strict prefix of that append's bytes, offsets and epoch
// stamped, at the end of the active segment, and no index entry for it. A
// SIGKILL lands inside write(2) too rarely for the test to meet it by
// chance (about one kill in a hundred here), so the test makes it happen.
// The next child must truncate it before it appends. It returns a
// description for the test log, or "" when the tail is not clean (a real
// torn write is there) or the last append in the log was unacknowledged.
func (c *crashChecker) tearTail(dir string, run int, stored []crashStored, acks []crashAck, rng *rand.Rand) string {
	t := c.t
	t.Helper()
	next, end := crashStored{run: run}, int64(0)
	if n := len(stored); n > 0 {
		last := stored[n-1]
		end = last.last + 1
		if last.run == run {
			acked := false
			for _, a := range acks {
				acked = acked || a.run == last.run && a.seq == last.seq
			}
			if !acked || last.bi != len(c.generated(last.run, last.seq))-1 {
				return ""
			}
			next.seq = last.seq + 1
		}
	}
	part := filepath.Join(dir, crashTP.String())
	names, _ := filepath.Glob(filepath.Join(part, "*.log"))
	if len(names) == 0 {
		return ""
	}
	active := slices.Max(names) // 20-digit names sort by base offset
	data, err := os.ReadFile(active)
	if err != nil {
		t.Fatal(err)
	}
	rest, fileEnd := data, int64(-1)
	for {
		b, r, ok := record.Split(rest)
		if !ok {
			break
		}
		fileEnd, rest = b.LastOffset()+1, r
	}
	if len(rest) != 0 || fileEnd >= 0 && fileEnd != end {
		return "" // already torn by the kill, or not where the log ends
	}
	// The bytes the child would have written next, stamped as
	// AppendAsLeader stamps them.
	var write []byte
	for _, g := range c.generated(next.run, next.seq) {
		write = append(write, g.raw...)
	}
	off := end
	for rest := write; len(rest) > 0; {
		b, r, _ := record.Split(rest)
		b.SetBaseOffset(off)
		b.SetPartitionLeaderEpoch(int32(next.run))
		off = b.LastOffset() + 1
		rest = r
	}
	cut := 1 + rng.IntN(len(write)-1)
	f, err := os.OpenFile(active, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(write[:cut]); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("; then tore the write of run %d append %d at offset %d: %d of its %d bytes left at the end of %s",
		next.run, next.seq, end, cut, len(write), filepath.Base(active))
}

func crashMarker(path string) bool {
	_, err := os.Stat(filepath.Join(path, log.CleanShutdownFile))
	return err == nil
}

func TestKillNineDuringAppends(t *testing.T) {
	if os.Getenv(crashEnvChildDir) != "" {
		t.Skip("in the child process")
	}
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		t.Skip("needs SIGKILL and a re-executable test binary")
	}
	seed := crashSeed(t)
	t.Logf("seed %d (replay with %s=%d)", seed, crashEnvSeed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x6b696c6c))
	tearRng := rand.New(rand.NewPCG(seed, 0x74656172))
	dir := filepath.Join(t.TempDir(), "logdir")
	c := &crashChecker{t: t, seed: seed, gen: map[[2]int][]crashBatch{}}

	var acks []crashAck
	var prev []crashStored
	for run := range crashRuns {
		delay := time.Duration(20+rng.IntN(281)) * time.Millisecond
		// Every third run is timed from the child's start, so the kill
		// may land in its OpenDir, while it recovers the previous kill.
		fromStart := run%3 == 2
		when := "ready"
		if fromStart {
			when = "start"
		}
		got, ready := crashRunChild(t, dir, seed, run, delay, fromStart)
		acks = append(acks, got...)
		if !ready {
			when += ", before it was ready"
		}
		what := fmt.Sprintf("after kill %d (seed %d, killed %v after %s)", run+1, seed, delay, when)
		if crashMarker(dir) {
			t.Fatalf("%s: the clean-shutdown marker exists, so recovery would be skipped", what)
		}

		// Check a copy, so the next child recovers exactly what the kill left.
		cp := filepath.Join(t.TempDir(), "copy")
		if err := os.CopyFS(cp, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		var torn atomic.Int64
		closeCopy, l := crashOpen(t, cp, &torn)
		stored := c.verify(what, l, acks)
		if err := closeCopy(); err != nil {
			t.Fatalf("%s: close: %v", what, err)
		}
		os.RemoveAll(cp)

		// What one recovery found whole, the next still has: the child's
		// recovery dropped nothing valid.
		if len(stored) < len(prev) || !crashSameStored(stored[:len(prev)], prev) {
			t.Fatalf("%s: the log no longer starts with the %d batches found after the previous kill (it has %d)", what, len(prev), len(stored))
		}
		var segs int
		if ents, err := os.ReadDir(filepath.Join(dir, crashTP.String())); err == nil {
			for _, e := range ents {
				if strings.HasSuffix(e.Name(), ".log") {
					segs++
				}
			}
		}
		tear := ""
		if tearRng.IntN(2) == 0 {
			tear = c.tearTail(dir, run, stored, acks, tearRng)
		}
		t.Logf("kill %d, %v after %s: %d batches acknowledged in this run, %d in the log (%d unacknowledged kept), log end %d, %d segments, %d torn tails truncated by the check%s",
			run+1, delay, when, len(got), len(stored), len(stored)-len(acks), l.LogEndOffset(), segs, torn.Load(), tear)
		prev = stored
	}

	// The real directory: the unclean path, then a clean close, then the
	// clean path must see the same log.
	var torn atomic.Int64
	closeDir, l := crashOpen(t, dir, &torn)
	stored := c.verify("final unclean open", l, acks)
	epochs, end := l.LeaderEpochs(), l.LogEndOffset()
	if len(stored) < len(prev) || !crashSameStored(stored[:len(prev)], prev) {
		t.Fatalf("final unclean open: the log does not start with the %d batches of the checked copy of the same directory (it has %d)", len(prev), len(stored))
	}
	if err := closeDir(); err != nil {
		t.Fatalf("clean close: %v", err)
	}
	if !crashMarker(dir) {
		t.Fatalf("clean close left no clean-shutdown marker")
	}
	_, l = crashOpen(t, dir, &torn)
	if crashMarker(dir) {
		t.Fatalf("the clean-shutdown marker survived OpenDir")
	}
	if got := c.verify("clean reopen", l, acks); !crashSameStored(got, stored) || l.LogEndOffset() != end || !crashSameEpochs(l.LeaderEpochs(), epochs) {
		t.Fatalf("clean reopen: log end %d epochs %v and %d batches, unclean open saw log end %d epochs %v and %d batches",
			l.LogEndOffset(), l.LeaderEpochs(), len(got), end, epochs, len(stored))
	}
	if l.RecoveryPoint() != end {
		t.Errorf("clean reopen: recovery point %d, want the log end %d", l.RecoveryPoint(), end)
	}
}
