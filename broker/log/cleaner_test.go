package log

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/record"
)

var cleanerTestNow = time.UnixMilli(1_700_000_000_000)

// compactedLog opens a compacted log whose segments hold a few batches each.
func compactedLog(t *testing.T, dir string, crashed bool, tweak ...func(*Config)) *Log {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Compact, cfg.Delete = true, false
	cfg.SegmentBytes = 600
	cfg.IndexIntervalBytes = 100
	// Deleted segments outlive the test: a simulated crash abandons the
	// log, and its timers must not race with the files the test reopens.
	cfg.FileDeleteDelayMs = time.Hour
	for _, f := range tweak {
		f(&cfg)
	}
	l, err := Open(dir, cfg, Options{CleanShutdown: !crashed, Now: func() time.Time { return cleanerTestNow }})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

type kv struct {
	key, value string // "" key: no key; "<tombstone>" value: null
}

func kvBatch(t testing.TB, codec record.Codec, kvs ...kv) record.Batch {
	opts := record.DefaultBuildOptions()
	opts.Codec = codec
	opts.BaseTimestamp = cleanerTestNow.UnixMilli()
	recs := make([]kmsg.Record, len(kvs))
	for i, e := range kvs {
		recs[i] = kmsg.Record{OffsetDelta: int32(i)}
		if e.key != "" {
			recs[i].Key = []byte(e.key)
		}
		if e.value != "<tombstone>" {
			recs[i].Value = []byte(e.value)
		}
	}
	b, err := record.Build(opts, recs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rec is a record as a consumer reads it.
type rec struct {
	offset     int64
	key, value string
}

// consume reads the whole log as a consumer does, failing on a duplicated
// or out-of-order offset.
func consume(t *testing.T, l *Log) []rec {
	t.Helper()
	var out []rec
	next := l.LogStartOffset()
	for {
		s, err := l.Read(next, ReadOptions{MaxBytes: 1 << 20, MinOneBatch: true, UpTo: -1})
		if err != nil {
			t.Fatal(err)
		}
		data, err := s.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(data) == 0 {
			return out
		}
		for rest := data; len(rest) > 0; {
			b, r, ok := record.Split(rest)
			if !ok {
				break
			}
			recs, err := b.DecodeRecords()
			if err != nil {
				t.Fatal(err)
			}
			for i := range recs {
				o := b.RecordOffset(&recs[i])
				if len(out) > 0 && o <= out[len(out)-1].offset {
					t.Fatalf("offset %d read after %d", o, out[len(out)-1].offset)
				}
				v := string(recs[i].Value)
				if recs[i].Value == nil {
					v = "<tombstone>"
				}
				out = append(out, rec{o, string(recs[i].Key), v})
			}
			next = b.LastOffset() + 1
			rest = r
		}
	}
}

// crashLog drops l as kill -9 would: handles closed, nothing flushed.
func crashLog(l *Log) {
	for _, s := range l.segments() {
		s.log.Close()
		for _, ix := range []*index{s.offsets.index, s.times.index} {
			if ix.file != nil {
				ix.file.Close()
				ix.file = nil
			}
		}
	}
}

// fillCompacted appends batches over a few keys, some compressed, rolling
// segments as they fill, and returns what it wrote.
func fillCompacted(t *testing.T, l *Log, batches int) []rec {
	t.Helper()
	var all []rec
	for i := range batches {
		kvs := []kv{{fmt.Sprintf("k%d", i%5), fmt.Sprintf("v%d", i)}, {fmt.Sprintf("k%d", i%7), fmt.Sprintf("w%d", i)}}
		info, err := l.AppendAsLeader(kvBatch(t, record.Codec(i%5), kvs...), 0)
		if err != nil {
			t.Fatal(err)
		}
		for j, e := range kvs {
			all = append(all, rec{info.FirstOffset + int64(j), e.key, e.value})
		}
	}
	return all
}

// checkCompacted checks survivors against what was written: each survivor
// is the record written at its offset; each key's last record survives; and
// below firstDirty (what the cleaning mapped) no key has two records.
func checkCompacted(t *testing.T, written, survivors []rec, firstDirty int64) {
	t.Helper()
	byOffset := map[int64]rec{}
	last := map[string]int64{}
	for _, r := range written {
		byOffset[r.offset] = r
		last[r.key] = r.offset
	}
	seen := map[int64]bool{}
	mapped := map[string]int{}
	for _, r := range survivors {
		if byOffset[r.offset] != r {
			t.Errorf("offset %d reads %+v, was written as %+v", r.offset, r, byOffset[r.offset])
		}
		seen[r.offset] = true
		if r.offset < firstDirty {
			mapped[r.key]++
		}
	}
	for k, o := range last {
		if !seen[o] {
			t.Errorf("last record of %s, at offset %d, is lost", k, o)
		}
	}
	for k, n := range mapped {
		if n > 1 {
			t.Errorf("key %s has %d records below the first dirty offset %d", k, n, firstDirty)
		}
	}
}

func TestCleanCompactsAndKeepsOffsets(t *testing.T) {
	l := compactedLog(t, filepath.Join(t.TempDir(), "t-0"), false)
	defer l.Close()
	written := fillCompacted(t, l, 40)
	before := l.SegmentCount()
	res, err := l.Clean(context.Background(), cleanerTestNow, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	// Groups are sized by their input, as Kafka sizes them, so full
	// segments are rewritten one by one; the next cleaning merges them.
	if res.RecordsRemoved == 0 || res.BytesAfter >= res.BytesBefore || l.SegmentCount() != before {
		t.Fatalf("first cleaning: %+v, %d segments before, %d after", res, before, l.SegmentCount())
	}
	checkCompacted(t, written, consume(t, l), res.FirstDirty)
	if res, err = l.Clean(context.Background(), cleanerTestNow, 0, -1); err != nil {
		t.Fatal(err)
	}
	if res.RecordsRemoved != 0 || res.SegmentsAfter != 1 || l.SegmentCount() != 2 {
		t.Fatalf("second cleaning: %+v, %d segments after", res, l.SegmentCount())
	}
	checkCompacted(t, written, consume(t, l), res.FirstDirty)
	if res.FirstDirty != l.segments()[l.SegmentCount()-1].base {
		t.Errorf("first dirty %d, want the active segment's base %d", res.FirstDirty, l.segments()[l.SegmentCount()-1].base)
	}
}

// TestCleanKeepsWholeBatchesByteForByte: a batch none of whose records is
// removed is not recompressed, whatever its codec.
func TestCleanKeepsWholeBatchesByteForByte(t *testing.T) {
	l := compactedLog(t, filepath.Join(t.TempDir(), "t-0"), false)
	defer l.Close()
	var kept [][]byte
	for c := record.CodecNone; c <= record.CodecZstd; c++ {
		if _, err := l.AppendAsLeader(kvBatch(t, c, kv{"dup", "old"}, kv{"x" + c.String(), "gone"}), 0); err != nil {
			t.Fatal(err)
		}
		b := kvBatch(t, c, kv{"keep-" + c.String(), strings.Repeat("v", 50)}, kv{"also-" + c.String(), "w"})
		kept = append(kept, b)
		if _, err := l.AppendAsLeader(append([]byte(nil), b...), 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.AppendAsLeader(kvBatch(t, record.CodecNone, kv{"dup", "new"}), 0); err != nil {
		t.Fatal(err)
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Clean(context.Background(), cleanerTestNow, 0, -1); err != nil {
		t.Fatal(err)
	}
	var stored [][]byte
	for next := int64(0); next < l.LogEndOffset(); {
		s, err := l.Read(next, ReadOptions{MaxBytes: 1, MinOneBatch: true, UpTo: -1})
		if err != nil {
			t.Fatal(err)
		}
		data, err := s.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		b := record.Batch(data)
		if b.RecordCount() == 2 {
			stored = append(stored, data)
		} else if b.Codec() != record.Codec((b.BaseOffset()/4)%5) {
			t.Errorf("batch at %d has codec %s after cleaning", b.BaseOffset(), b.Codec())
		}
		next = b.LastOffset() + 1
	}
	if len(stored) != len(kept) {
		t.Fatalf("%d untouched batches, want %d", len(stored), len(kept))
	}
	for i := range kept {
		want := record.Batch(append([]byte(nil), kept[i]...))
		want.SetBaseOffset(record.Batch(stored[i]).BaseOffset())
		want.SetPartitionLeaderEpoch(0)
		if !bytes.Equal(stored[i], want) {
			t.Errorf("batch %d (%s) was rewritten", i, want.Codec())
		}
	}
}

// TestCleanCrashAfterCommit leaves a cleaning at each step after its commit
// point, crashes, and reopens: recovery installs the swap, and no offset is
// lost or duplicated.
func TestCleanCrashAfterCommit(t *testing.T) {
	for _, stage := range []cleanStage{stageCommitted, stageOldDeleted} {
		t.Run(fmt.Sprint(stage), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "t-0")
			l := compactedLog(t, dir, false)
			written := fillCompacted(t, l, 40)
			var stopped atomic.Bool
			_, err := l.clean(context.Background(), cleanerTestNow, 0, -1, cleanKnobs{hook: func(s cleanStage) bool {
				if s == stage && !stopped.Load() {
					stopped.Store(true)
					return true
				}
				return false
			}})
			if !errors.Is(err, errSimulatedCrash) {
				t.Fatalf("clean: %v, want the simulated crash", err)
			}
			if !hasFile(t, dir, swapSuffix) {
				t.Fatal("no .swap file left at the crash")
			}
			crashLog(l)
			l = compactedLog(t, dir, true)
			defer l.Close()
			if hasFile(t, dir, swapSuffix) || hasFile(t, dir, cleanedSuffix) {
				t.Error("recovery left .swap or .cleaned files")
			}
			survivors := consume(t, l)
			checkCompacted(t, written, survivors, 0)
			if len(survivors) >= len(written) {
				t.Errorf("the committed cleaning was not installed: %d records of %d", len(survivors), len(written))
			}
			// The recovered log cleans on normally.
			res, err := l.Clean(context.Background(), cleanerTestNow, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			checkCompacted(t, written, consume(t, l), res.FirstDirty)
		})
	}
}

// TestCleanCrashBeforeCommit: output left as .cleaned files is discarded on
// reopen and the log is exactly as before.
func TestCleanCrashBeforeCommit(t *testing.T) {
	for _, stage := range []cleanStage{stageWritten, stageBeforeCommit} {
		t.Run(fmt.Sprint(stage), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "t-0")
			l := compactedLog(t, dir, false)
			written := fillCompacted(t, l, 40)
			_, err := l.clean(context.Background(), cleanerTestNow, 0, -1, cleanKnobs{hook: func(s cleanStage) bool { return s == stage }})
			if !errors.Is(err, errSimulatedCrash) {
				t.Fatalf("clean: %v, want the simulated crash", err)
			}
			if !hasFile(t, dir, logSuffix+cleanedSuffix) {
				t.Fatal("no .log.cleaned file left at the crash")
			}
			crashLog(l)
			l = compactedLog(t, dir, true)
			defer l.Close()
			if hasFile(t, dir, cleanedSuffix) {
				t.Error("recovery left .cleaned files")
			}
			got := consume(t, l)
			if fmt.Sprint(got) != fmt.Sprint(written) {
				t.Errorf("after a crash before the commit point the log changed:\n got %v\nwant %v", got, written)
			}
		})
	}
}

func hasFile(t *testing.T, dir, suffix string) bool {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), suffix) {
			return true
		}
	}
	return false
}

// TestCleanRacesTruncationAndRetention changes the log between the
// cleaner's read and its install: the output must be discarded, not
// installed over the change.
func TestCleanRacesTruncationAndRetention(t *testing.T) {
	for name, change := range map[string]func(*Log) error{
		"truncate": func(l *Log) error {
			// Into the second segment, then append and roll it back to
			// an inactive segment of the same size.
			segs := l.segments()
			return l.TruncateTo(segs[1].base + 1)
		},
		"delete-records": func(l *Log) error { return l.DeleteRecordsBefore(l.segments()[1].base) },
	} {
		t.Run(name, func(t *testing.T) {
			l := compactedLog(t, filepath.Join(t.TempDir(), "t-0"), false)
			defer l.Close()
			fillCompacted(t, l, 40)
			var changeErr error
			_, err := l.clean(context.Background(), cleanerTestNow, 0, -1, cleanKnobs{hook: func(s cleanStage) bool {
				if s == stageWritten {
					changeErr = change(l)
				}
				return false
			}})
			if changeErr != nil {
				t.Fatal(changeErr)
			}
			if !errors.Is(err, ErrCleanAborted) {
				t.Fatalf("clean: %v, want ErrCleanAborted", err)
			}
			if hasFile(t, l.dir, cleanedSuffix) || hasFile(t, l.dir, swapSuffix) {
				t.Error("discarded output left files behind")
			}
			// What the change left is intact and cleans on.
			written := consume(t, l)
			res, err := l.Clean(context.Background(), cleanerTestNow, 0, -1)
			if err != nil {
				t.Fatal(err)
			}
			checkCompacted(t, written, consume(t, l), res.FirstDirty)
		})
	}
}

// TestCleanTruncatedAndRefilledSegment: a sealed segment truncated, refilled
// with the same bytes and sealed again is still a changed segment to the
// cleaner, which cannot tell what happened to its contents in between.
func TestCleanTruncatedAndRefilledSegment(t *testing.T) {
	l := compactedLog(t, filepath.Join(t.TempDir(), "t-0"), false)
	defer l.Close()
	for i := 0; l.SegmentCount() < 3; i++ {
		if _, err := l.AppendAsLeader(kvBatch(t, record.CodecNone, kv{fmt.Sprintf("k%d", i%3), "v"}), 0); err != nil {
			t.Fatal(err)
		}
	}
	var changeErr error
	_, err := l.clean(context.Background(), cleanerTestNow, 0, -1, cleanKnobs{hook: func(s cleanStage) bool {
		if s != stageWritten {
			return false
		}
		seg := l.segments()[1]
		data := make([]byte, seg.size.Load())
		if _, changeErr = seg.log.ReadAt(data, 0); changeErr != nil {
			return false
		}
		if changeErr = l.TruncateTo(seg.base); changeErr != nil {
			return false
		}
		if _, changeErr = l.AppendAsFollower(data); changeErr != nil {
			return false
		}
		if l.segments()[1] != seg || seg.size.Load() != int64(len(data)) {
			changeErr = errors.New("the refilled segment is not the same segment at the same size")
			return false
		}
		changeErr = l.Roll()
		return false
	}})
	if changeErr != nil {
		t.Fatal(changeErr)
	}
	if !errors.Is(err, ErrCleanAborted) {
		t.Fatalf("clean: %v, want ErrCleanAborted", err)
	}
}

// TestCleanWhileAppendingAndReading runs cleanings while a producer appends
// and consumers read, for the race detector and for the invariants.
func TestCleanWhileAppendingAndReading(t *testing.T) {
	l := compactedLog(t, filepath.Join(t.TempDir(), "t-0"), false, func(c *Config) {
		c.SegmentBytes = 4096
		// A reader between Read and ReadAll must finish within the delay;
		// under -race on a loaded machine that can take well over 100 ms.
		c.FileDeleteDelayMs = 5 * time.Second
	})
	defer l.Close()
	const appends = 3000
	var (
		mu      sync.Mutex
		written []rec
		stop    atomic.Bool
		wg      sync.WaitGroup
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for i := range appends {
			kvs := []kv{{fmt.Sprintf("k%d", i%13), fmt.Sprint(i)}}
			info, err := l.AppendAsLeader(kvBatch(t, record.Codec(i%5), kvs...), 0)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			written = append(written, rec{info.FirstOffset, kvs[0].key, kvs[0].value})
			mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		for !stop.Load() {
			end := l.LogEndOffset()
			if end == 0 {
				continue
			}
			s, err := l.Read(rand.Int64N(end), ReadOptions{MaxBytes: 4096, MinOneBatch: true, UpTo: -1})
			if err != nil {
				t.Error(err)
				return
			}
			data, err := s.ReadAll()
			if err != nil {
				t.Error(err)
				return
			}
			for rest := data; len(rest) > 0; {
				b, r, ok := record.Split(rest)
				if !ok {
					break
				}
				if b.CRC() != b.ComputeCRC() {
					t.Errorf("read a corrupt batch at %d", b.BaseOffset())
				}
				rest = r
			}
		}
	}()
	firstDirty := int64(0)
	for cleanings := 0; cleanings < 5 || l.LogEndOffset() < appends; cleanings++ {
		res, err := l.Clean(context.Background(), cleanerTestNow, firstDirty, -1)
		if err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatal(err)
		}
		firstDirty = res.FirstDirty
		time.Sleep(time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	res, err := l.Clean(context.Background(), cleanerTestNow, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	checkCompacted(t, written, consume(t, l), res.FirstDirty)
}

// TestCleanRandom compares random logs, cleaned and appended to in turns,
// with what was written.
func TestCleanRandom(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, seed))
			dir := filepath.Join(t.TempDir(), "t-0")
			l := compactedLog(t, dir, false)
			defer func() { l.Close() }()
			var written []rec
			firstDirty := int64(0)
			for round := range 6 {
				for range 5 + rng.IntN(30) {
					var kvs []kv
					for range 1 + rng.IntN(4) {
						kvs = append(kvs, kv{fmt.Sprintf("k%d", rng.IntN(20)), fmt.Sprintf("v%d", rng.IntN(1000))})
					}
					info, err := l.AppendAsLeader(kvBatch(t, record.Codec(rng.IntN(5)), kvs...), 0)
					if err != nil {
						t.Fatal(err)
					}
					for j, e := range kvs {
						written = append(written, rec{info.FirstOffset + int64(j), e.key, e.value})
					}
				}
				res, err := l.Clean(context.Background(), cleanerTestNow, firstDirty, -1)
				if err != nil {
					t.Fatal(err)
				}
				firstDirty = res.FirstDirty
				checkCompacted(t, written, consume(t, l), 0)
				if round%2 == 1 {
					if err := l.Close(); err != nil {
						t.Fatal(err)
					}
					l = compactedLog(t, dir, false)
				}
			}
		})
	}
}

// TestCleanTombstonesExpire: a tombstone outlives one cleaning by
// delete.retention.ms, then goes.
func TestCleanTombstonesExpire(t *testing.T) {
	l := compactedLog(t, filepath.Join(t.TempDir(), "t-0"), false)
	defer l.Close()
	cfg := l.Config()
	cfg.DeleteRetentionMs = time.Minute
	if err := l.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]kv{{{"a", "1"}, {"b", "1"}}, {{"a", "<tombstone>"}}} {
		if _, err := l.AppendAsLeader(kvBatch(t, record.CodecZstd, b...), 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := l.Clean(ctx, cleanerTestNow, 0, -1); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(consume(t, l)); got != "[{1 b 1} {2 a <tombstone>}]" {
		t.Fatalf("after the first cleaning: %s", got)
	}
	if _, err := l.Clean(ctx, cleanerTestNow.Add(time.Minute-time.Millisecond), 0, -1); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(consume(t, l)); got != "[{1 b 1} {2 a <tombstone>}]" {
		t.Fatalf("before the horizon: %s", got)
	}
	res, err := l.Clean(ctx, cleanerTestNow.Add(time.Minute), 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(consume(t, l)); got != "[{1 b 1}]" || res.TombstonesRemoved != 1 {
		t.Fatalf("at the horizon: %s, %+v", got, res)
	}
}

func TestCleanErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "t-0")
	cfg := DefaultConfig()
	l, err := Open(dir, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Clean(context.Background(), time.Now(), 0, -1); !errors.Is(err, ErrNotCompacted) {
		t.Errorf("clean of a delete-only log: %v", err)
	}
	cfg.Compact = true
	if err := l.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	cleaning.Store(l, struct{}{})
	if _, err := l.Clean(context.Background(), time.Now(), 0, -1); !errors.Is(err, ErrCleanerBusy) {
		t.Errorf("second cleaner: %v", err)
	}
	cleaning.Delete(l)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Clean(context.Background(), time.Now(), 0, -1); !errors.Is(err, ErrClosed) {
		t.Errorf("clean of a closed log: %v", err)
	}
}

// TestDirCleaner: the log dir's cleaner loop picks up a compacted log over
// its dirty ratio, cleans it and checkpoints where it stopped.
func TestDirCleaner(t *testing.T) {
	path := t.TempDir()
	dcfg := DefaultDirConfig(path)
	dcfg.CleanerBackoff = 5 * time.Millisecond
	d, err := OpenDir(dcfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Compact = true
	cfg.SegmentBytes = 600
	// The loop may clean before the last roll; what that roll leaves dirty
	// is a small part of the log.
	cfg.MinCleanableDirtyRatio = 0.01
	tp := TopicPartition{"compacted", 0}
	l, err := d.Create(tp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := d.Create(TopicPartition{"plain", 0}, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	written := fillCompacted(t, l, 40)
	plainWritten := fillCompacted(t, plain, 40)
	if err := errors.Join(l.Roll(), plain.Roll()); err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(path, CleanerCheckpointFile)
	deadline := time.Now().Add(10 * time.Second)
	var offsets map[TopicPartition]int64
	for {
		if offsets, err = ReadOffsetCheckpoint(ckpt); err != nil {
			t.Fatal(err)
		}
		if offsets[tp] == l.LogEndOffset() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cleaner did not clean %s: checkpoint %v, log end %d", tp, offsets, l.LogEndOffset())
		}
		time.Sleep(5 * time.Millisecond)
	}
	checkCompacted(t, written, consume(t, l), offsets[tp])
	if got := consume(t, plain); fmt.Sprint(got) != fmt.Sprint(plainWritten) {
		t.Error("the cleaner touched a log whose cleanup.policy is delete")
	}
	if len(offsets) != 1 {
		t.Errorf("checkpoint %v, want only %s", offsets, tp)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d, err = OpenDir(dcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	c := d.newCleaner()
	l, _ = d.Log(tp)
	if got := c.offsetFor(l); got != offsets[tp] {
		t.Errorf("after a restart the first dirty offset is %d, want %d", got, offsets[tp])
	}
}

// TestCleanPartialOffsetMap: when the offset map outgrows its budget, a
// cleaning stops at a segment boundary and the next one goes on from there.
func TestCleanPartialOffsetMap(t *testing.T) {
	l := compactedLog(t, filepath.Join(t.TempDir(), "t-0"), false)
	defer l.Close()
	written := fillCompacted(t, l, 40)
	segs := l.segments()
	res, err := l.clean(context.Background(), cleanerTestNow, 0, -1, cleanKnobs{mapBudget: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.FirstDirty != segs[1].base {
		t.Fatalf("first dirty %d after mapping one segment, want %d", res.FirstDirty, segs[1].base)
	}
	checkCompacted(t, written, consume(t, l), res.FirstDirty)
	for res.FirstDirty < res.FirstUncleanable {
		if res, err = l.clean(context.Background(), cleanerTestNow, res.FirstDirty, -1, cleanKnobs{mapBudget: 1}); err != nil {
			t.Fatal(err)
		}
		checkCompacted(t, written, consume(t, l), res.FirstDirty)
	}
	if res.FirstDirty != l.segments()[l.SegmentCount()-1].base {
		t.Errorf("cleanings stopped at %d, before the active segment", res.FirstDirty)
	}
}

// TestCleanKeepsUndecodableBatch: a batch whose CRC holds but whose
// compressed records do not decode (appends do not decompress) is kept as
// it is, and the rest of the log is cleaned around it.
func TestCleanKeepsUndecodableBatch(t *testing.T) {
	l := compactedLog(t, filepath.Join(t.TempDir(), "t-0"), false)
	defer l.Close()
	bad := kvBatch(t, record.CodecGzip, kv{"a", "1"})
	bad[len(bad)-3] ^= 0xff // inside the gzip stream's checksum
	crcFix(bad)
	if _, err := bad.DecodeRecords(); err == nil {
		t.Fatal("the damaged batch still decodes")
	}
	// A producer's batch is decompressed and refused; such a batch can
	// only be in the log from before that check, or replicated from one.
	if _, err := l.AppendAsLeader(append(record.Batch(nil), bad...), 0); !errors.Is(err, kerr.CorruptMessage) {
		t.Fatalf("a producer's undecodable batch: %v", err)
	}
	for _, b := range []record.Batch{kvBatch(t, record.CodecNone, kv{"a", "0"}), bad, kvBatch(t, record.CodecNone, kv{"a", "2"})} {
		b.SetBaseOffset(l.LogEndOffset())
		if _, err := l.AppendAsFollower(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Roll(); err != nil {
		t.Fatal(err)
	}
	res, err := l.Clean(context.Background(), cleanerTestNow, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	if res.RecordsRemoved != 1 || res.BatchesCopied != 2 || res.BatchesDropped != 1 {
		t.Errorf("cleaning around an undecodable batch: %+v", res)
	}
}

// crcFix recomputes the CRC of a batch changed after Build (offset 17).
func crcFix(b record.Batch) {
	crc := b.ComputeCRC()
	b[17], b[18], b[19], b[20] = byte(crc>>24), byte(crc>>16), byte(crc>>8), byte(crc)
}
