package log_test

// TestRecoveryFromDamage: a log dir damaged on disk still opens, keeps every
// batch before the damage, and goes on working.
//
// The test writes one multi-segment partition (150 batches of every codec in
// 16 KiB segments, with index entries every 512 bytes and three leader
// epochs), closes it cleanly, and then, for each of 32 cases drawn from a
// seeded generator (every kind at least twice), damages a copy of it and
// reopens it:
//
//   - truncate a segment's .log inside a batch (a torn write);
//   - truncate a sealed segment's .log exactly at a batch boundary, which no
//     check can tell from the end of a segment the cleaner compacted: the
//     cut batches are lost and the offsets jump to the next segment;
//   - flip one to three bytes of one segment, in batch headers and records;
//   - flip one byte of a sealed segment (its length, its magic or a record)
//     and keep the clean-shutdown marker, so recovery trusts it (below);
//   - delete a segment's .index and/or .timeindex;
//   - truncate an index to a length that is not a multiple of its entry size;
//   - overwrite an index entry with random bytes;
//   - delete recovery-point-offset-checkpoint and log-start-offset-checkpoint;
//   - write garbage into recovery-point-offset-checkpoint;
//   - delete leader-epoch-checkpoint, write garbage into it, or leave it stale
//     (without the newest epochs: what a kill between an append and the
//     checkpoint's rename leaves);
//   - and, for the damage to indexes and checkpoints, either remove the
//     clean-shutdown marker (forcing the unclean path) or keep it (checking
//     that a clean start still catches bad indexes).
//
// Damage to a .log is only found by a recovery scan, and the scan covers only
// the segments from the one holding the recovery point on: with the marker
// present nothing is scanned beyond the active segment's tail, because a
// clean shutdown flushed everything and sealed segments' log bytes are
// trusted (a flipped byte in a sealed segment is then caught only by the
// CRC check of the client that reads it, as in Kafka; the test checks that
// everything else in the log still reads back, that no read of the damaged
// part hangs or hands out a batch with a valid CRC, and that appends go on).
// So the other log-damage cases remove the marker and the recovery-point
// checkpoint, which forces a scan of every segment, except where stated:
// damage to the active segment with the marker kept, and with the marker
// removed but the recovery point kept (which is the log end at a clean
// shutdown, so the scan covers the active segment only). A flipped byte is
// never put in a batch's base offset or partition leader epoch: Kafka leaves
// those two fields out of the CRC so that the broker can rewrite them, so
// damage there is invisible to any check.
//
// After reopening, each case checks that OpenDir succeeded (and did not
// panic); that the log end offset is the end of the last whole, valid batch
// before the damage (for log damage) or unchanged (for index and checkpoint
// damage); that every batch before the damage reads back byte for byte; that
// a read at every offset returns the batch containing it (or, in a gap, the
// next one), which exercises rebuilt offset indexes; that
// OffsetForTimestamp finds every batch by its first timestamp, which
// exercises rebuilt time indexes; that the leader-epoch cache is what it was,
// less the epochs that started at or after the new log end; and that new
// appends continue at the log end offset and read back after a clean close
// and another reopen.
//
// The seed is logged; TRIBUTARY_DAMAGE_SEED=<seed> replays the same cases.

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/record"
)

const (
	dmgEnvSeed  = "TRIBUTARY_DAMAGE_SEED"
	dmgBatches  = 150
	dmgCases    = 32
	dmgBaseTime = int64(1_700_000_000_000)
)

var dmgTP = log.TopicPartition{Topic: "events", Partition: 0}

func dmgDirConfig(path string, logger *slog.Logger) log.DirConfig {
	cfg := log.DefaultDirConfig(path)
	cfg.Defaults.SegmentBytes = 16 << 10
	cfg.Defaults.IndexIntervalBytes = 512
	cfg.Defaults.RetentionMs = -1
	cfg.CheckpointInterval = 0 // only Close writes checkpoints
	cfg.RetentionCheckInterval = 0
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cfg.Logger = logger
	return cfg
}

// dmgEpochFor is the leader epoch batch i of the template is appended with.
func dmgEpochFor(i int) int32 {
	switch {
	case i < 50:
		return 1
	case i < 100:
		return 3
	}
	return 4
}

// dmgSegment is one segment file of the template.
type dmgSegment struct {
	base    int64
	batches []int   // template batch indexes, in file order
	pos     []int64 // their positions in the file
	size    int64
}

// dmgTemplate is the undamaged log.
type dmgTemplate struct {
	dir     string         // log dir, closed cleanly
	batches []record.Batch // as stored: offsets and epochs assigned
	segs    []dmgSegment   // by base offset
	seg     []int          // segment of each batch
	epochs  []log.EpochEntry
	end     int64
	nextTs  int64 // timestamp for the next record appended
}

// dmgBuild makes one batch with strictly increasing record timestamps from
// *ts on.
func dmgBuild(rng *rand.Rand, ts *int64, minValue int) record.Batch {
	n := 1 + rng.IntN(8)
	kvs := make([]record.KV, n)
	base := *ts
	for i := range kvs {
		kv := &kvs[i]
		if rng.IntN(3) != 0 {
			kv.Key = fmt.Appendf(nil, "user-%d", rng.IntN(500))
		}
		size := minValue + 20 + rng.IntN(800)
		if rng.IntN(10) == 0 {
			size = minValue + 2000 + rng.IntN(3000)
		}
		kv.Value = make([]byte, size)
		if rng.IntN(2) == 0 {
			for j := range kv.Value {
				kv.Value[j] = byte(rng.Uint32())
			}
		} else {
			for j := range kv.Value {
				kv.Value[j] = "abcdefgh"[(j/7)%8]
			}
		}
		kv.TimestampDelta = *ts - base
		*ts += 10
	}
	opts := record.DefaultBuildOptions()
	opts.Codec, opts.BaseTimestamp = record.Codec(rng.IntN(5)), base
	b, err := record.Build(opts, record.NewRecords(kvs...))
	if err != nil {
		panic(err)
	}
	return b
}

func dmgBuildTemplate(t *testing.T, seed uint64) *dmgTemplate {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x74656d70))
	tm := &dmgTemplate{dir: filepath.Join(t.TempDir(), "template"), nextTs: dmgBaseTime}
	cfg := dmgDirConfig(tm.dir, nil)
	d, err := log.OpenDir(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := d.Create(dmgTP, cfg.Defaults)
	if err != nil {
		t.Fatal(err)
	}
	for i := range dmgBatches {
		b := dmgBuild(rng, &tm.nextTs, 0)
		info, err := l.AppendAsLeader(b, dmgEpochFor(i)) // stamps b in place
		if err != nil {
			t.Fatal(err)
		}
		if info.FirstOffset != b.BaseOffset() {
			t.Fatalf("append %d: first offset %d, batch says %d", i, info.FirstOffset, b.BaseOffset())
		}
		tm.batches = append(tm.batches, b)
	}
	tm.epochs, tm.end = l.LeaderEpochs(), l.LogEndOffset()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	// Where each batch is on disk.
	byBase := map[int64]int{}
	for i, b := range tm.batches {
		byBase[b.BaseOffset()] = i
	}
	pdir := filepath.Join(tm.dir, dmgTP.String())
	names, _ := filepath.Glob(filepath.Join(pdir, "*.log"))
	slices.Sort(names)
	tm.seg = make([]int, len(tm.batches))
	found := 0
	for si, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		base, _ := strconv.ParseInt(strings.TrimSuffix(filepath.Base(name), ".log"), 10, 64)
		s := dmgSegment{base: base, size: int64(len(data))}
		pos := int64(0)
		for rest := data; len(rest) > 0; {
			b, r, ok := record.Split(rest)
			if !ok {
				t.Fatalf("template %s: torn batch at %d", name, pos)
			}
			i, ok := byBase[b.BaseOffset()]
			if !ok || !bytes.Equal(b, tm.batches[i]) {
				t.Fatalf("template %s: batch at byte %d is not what was appended", name, pos)
			}
			s.batches, s.pos = append(s.batches, i), append(s.pos, pos)
			tm.seg[i] = si
			found++
			pos += int64(len(b))
			rest = r
		}
		tm.segs = append(tm.segs, s)
	}
	if found != len(tm.batches) || len(tm.segs) < 6 {
		t.Fatalf("template: %d of %d batches in %d segments; want all of them in at least 6", found, len(tm.batches), len(tm.segs))
	}
	return tm
}

func (tm *dmgTemplate) segPath(si int, suffix string) string {
	return filepath.Join(tm.dir, dmgTP.String(), fmt.Sprintf("%020d%s", tm.segs[si].base, suffix))
}

// dmgCase is one damage and what recovery must make of it.
type dmgCase struct {
	name string
	// what, in words, for failure messages.
	detail string
	// damage is applied to the copy of the partition directory and log dir.
	damage func(t *testing.T, logDir, partDir string)
	// keepMarker leaves the clean-shutdown marker in place; dropRecovery
	// deletes recovery-point-offset-checkpoint.
	keepMarker, dropRecovery bool
	// survivors are the template batches that must survive, in order.
	survivors []int
	end       int64
	// trusted is damage that recovery does not look for: a flipped byte
	// in a sealed segment after a clean shutdown. damaged is the batch.
	trusted bool
	damaged int
}

// dmgFile names a file of a copy by the template's name for it.
func dmgFile(tm *dmgTemplate, partDir string, si int, suffix string) string {
	return filepath.Join(partDir, filepath.Base(tm.segPath(si, suffix)))
}

// dmgCut is the expectation for damage that starts at template batch cut:
// it and everything after it are gone.
func (c *dmgCase) dmgCut(tm *dmgTemplate, cut int) {
	c.survivors = nil
	for i := range cut {
		c.survivors = append(c.survivors, i)
	}
	c.end = tm.batches[cut].BaseOffset()
}

func (c *dmgCase) all(tm *dmgTemplate) {
	c.survivors = nil
	for i := range tm.batches {
		c.survivors = append(c.survivors, i)
	}
	c.end = tm.end
}

// dmgNewCase draws case n.
func dmgNewCase(tm *dmgTemplate, rng *rand.Rand, n int) dmgCase {
	kinds := []string{
		"truncate-log", "flip-log", "truncate-active-log-marker-kept", "flip-active-log-recovery-point-kept",
		"truncate-log-at-batch-boundary", "delete-index", "odd-length-index", "garbage-index",
		"truncate-log", "flip-log", "delete-offset-checkpoints", "garbage-recovery-checkpoint",
		"delete-epoch-checkpoint", "stale-epoch-checkpoint", "garbage-epoch-checkpoint",
		"flip-sealed-log-marker-kept",
	}
	kind := kinds[n%len(kinds)]
	last := len(tm.segs) - 1
	c := dmgCase{name: fmt.Sprintf("%02d-%s", n, kind)}
	c.all(tm)
	randomMarker := func() {
		c.keepMarker = rng.IntN(2) == 0
		c.detail += fmt.Sprintf("; clean-shutdown marker kept: %v", c.keepMarker)
	}
	// A batch of segment si and a byte strictly inside it.
	inside := func(si int) (bi int, at int64) {
		s := tm.segs[si]
		k := rng.IntN(len(s.batches))
		bi = s.batches[k]
		return bi, s.pos[k] + 1 + rng.Int64N(int64(len(tm.batches[bi]))-1)
	}
	truncate := func(si int) {
		bi, at := inside(si)
		c.detail = fmt.Sprintf("truncate segment %d (base %d, %d bytes) to %d bytes, inside batch %d at offset %d",
			si, tm.segs[si].base, tm.segs[si].size, at, bi, tm.batches[bi].BaseOffset())
		c.damage = func(t *testing.T, _, partDir string) {
			if err := os.Truncate(dmgFile(tm, partDir, si, ".log"), at); err != nil {
				t.Fatal(err)
			}
		}
		c.dmgCut(tm, bi)
	}
	flip := func(si int) {
		type flipAt struct {
			at  int64
			xor byte
		}
		var flips []flipAt
		cut := len(tm.batches)
		c.detail = fmt.Sprintf("flip bytes of segment %d (base %d)", si, tm.segs[si].base)
		for range 1 + rng.IntN(3) {
			s := tm.segs[si]
			k := rng.IntN(len(s.batches))
			bi := s.batches[k]
			var rel int64
			if rng.IntN(2) == 0 { // in the header, not in the base offset or epoch
				for rel = 8 + rng.Int64N(record.HeaderSize-8); rel >= 12 && rel < 16; {
					rel = 8 + rng.Int64N(record.HeaderSize-8)
				}
			} else {
				rel = record.HeaderSize + rng.Int64N(int64(len(tm.batches[bi]))-record.HeaderSize)
			}
			f := flipAt{s.pos[k] + rel, byte(1 + rng.IntN(255))}
			flips = append(flips, f)
			cut = min(cut, bi)
			c.detail += fmt.Sprintf(", byte %d of batch %d (offset %d, %s) ^= %#02x", rel, bi, tm.batches[bi].BaseOffset(), tm.batches[bi].Codec(), f.xor)
		}
		c.damage = func(t *testing.T, _, partDir string) {
			f, err := os.OpenFile(dmgFile(tm, partDir, si, ".log"), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for _, fl := range flips {
				var b [1]byte
				if _, err := f.ReadAt(b[:], fl.at); err != nil {
					t.Fatal(err)
				}
				b[0] ^= fl.xor
				if _, err := f.WriteAt(b[:], fl.at); err != nil {
					t.Fatal(err)
				}
			}
		}
		c.dmgCut(tm, cut)
	}
	// A segment whose index (suffix) has entries.
	indexed := func(suffix string) int {
		var with []int
		for si := range tm.segs {
			if st, err := os.Stat(tm.segPath(si, suffix)); err == nil && st.Size() > 0 {
				with = append(with, si)
			}
		}
		if len(with) == 0 {
			panic("template has no " + suffix + " with entries")
		}
		return with[rng.IntN(len(with))]
	}
	index := func() (suffix string, width int) {
		if rng.IntN(2) == 0 {
			return ".index", 8
		}
		return ".timeindex", 12
	}

	switch kind {
	case "truncate-log":
		truncate(rng.IntN(len(tm.segs)))
		c.dropRecovery = true
	case "flip-log":
		flip(rng.IntN(len(tm.segs)))
		c.dropRecovery = true
	case "truncate-active-log-marker-kept":
		truncate(last)
		c.keepMarker = true
		c.detail += "; clean-shutdown marker kept"
	case "flip-active-log-recovery-point-kept":
		flip(last)
	case "flip-sealed-log-marker-kept":
		// Not found at open, by design: only a client's CRC check (or a
		// scan) would see it. The log must still open, serve every other
		// batch, answer every read without hanging, and take appends.
		si := rng.IntN(last)
		s := tm.segs[si]
		k := rng.IntN(len(s.batches))
		bi := s.batches[k]
		var rel int64
		var field string
		switch rng.IntN(3) {
		case 0:
			rel, field = 8+rng.Int64N(4), "batchLength"
		case 1:
			rel, field = 16, "magic"
		default:
			rel, field = record.HeaderSize+rng.Int64N(int64(len(tm.batches[bi]))-record.HeaderSize), "records"
		}
		at, xor := s.pos[k]+rel, byte(1+rng.IntN(255))
		c.detail = fmt.Sprintf("flip byte %d (%s) of batch %d (offset %d, %s) in sealed segment %d (base %d) ^= %#02x; clean-shutdown marker kept",
			rel, field, bi, tm.batches[bi].BaseOffset(), tm.batches[bi].Codec(), si, s.base, xor)
		c.damage = func(t *testing.T, _, partDir string) {
			f, err := os.OpenFile(dmgFile(tm, partDir, si, ".log"), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var b [1]byte
			if _, err := f.ReadAt(b[:], at); err != nil {
				t.Fatal(err)
			}
			b[0] ^= xor
			if _, err := f.WriteAt(b[:], at); err != nil {
				t.Fatal(err)
			}
		}
		c.keepMarker, c.trusted, c.damaged = true, true, bi
	case "truncate-log-at-batch-boundary":
		si := rng.IntN(last)
		s := tm.segs[si]
		k := rng.IntN(len(s.batches))
		at := s.pos[k]
		c.detail = fmt.Sprintf("truncate sealed segment %d (base %d, %d bytes) to %d bytes, where batch %d at offset %d starts",
			si, s.base, s.size, at, s.batches[k], tm.batches[s.batches[k]].BaseOffset())
		c.damage = func(t *testing.T, _, partDir string) {
			if err := os.Truncate(dmgFile(tm, partDir, si, ".log"), at); err != nil {
				t.Fatal(err)
			}
		}
		lost := s.batches[k:]
		c.survivors = slices.DeleteFunc(c.survivors, func(i int) bool { return slices.Contains(lost, i) })
		c.dropRecovery = true
	case "delete-index":
		si := rng.IntN(len(tm.segs))
		which := [][]string{{".index"}, {".timeindex"}, {".index", ".timeindex"}}[rng.IntN(3)]
		c.detail = fmt.Sprintf("delete %v of segment %d (base %d)", which, si, tm.segs[si].base)
		c.damage = func(t *testing.T, _, partDir string) {
			for _, suf := range which {
				if err := os.Remove(dmgFile(tm, partDir, si, suf)); err != nil {
					t.Fatal(err)
				}
			}
		}
		randomMarker()
	case "odd-length-index":
		suffix, width := index()
		si := indexed(suffix)
		st, _ := os.Stat(tm.segPath(si, suffix))
		size := st.Size() - 1 - rng.Int64N(int64(width)-1)
		c.detail = fmt.Sprintf("truncate %s of segment %d (base %d) from %d to %d bytes", suffix, si, tm.segs[si].base, st.Size(), size)
		c.damage = func(t *testing.T, _, partDir string) {
			if err := os.Truncate(dmgFile(tm, partDir, si, suffix), size); err != nil {
				t.Fatal(err)
			}
		}
		randomMarker()
	case "garbage-index":
		suffix, width := index()
		si := indexed(suffix)
		st, _ := os.Stat(tm.segPath(si, suffix))
		entry := rng.Int64N(st.Size() / int64(width))
		garbage := make([]byte, width)
		for i := range garbage {
			garbage[i] = byte(rng.Uint32())
		}
		c.detail = fmt.Sprintf("overwrite entry %d of %d in %s of segment %d (base %d) with %x", entry, st.Size()/int64(width), suffix, si, tm.segs[si].base, garbage)
		c.damage = func(t *testing.T, _, partDir string) {
			f, err := os.OpenFile(dmgFile(tm, partDir, si, suffix), os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt(garbage, entry*int64(width)); err != nil {
				t.Fatal(err)
			}
		}
		randomMarker()
	case "delete-offset-checkpoints":
		c.detail = "delete recovery-point-offset-checkpoint and log-start-offset-checkpoint"
		c.damage = func(t *testing.T, logDir, _ string) {
			for _, f := range []string{log.RecoveryPointFile, log.LogStartOffsetFile} {
				if err := os.Remove(filepath.Join(logDir, f)); err != nil {
					t.Fatal(err)
				}
			}
		}
		randomMarker()
	case "garbage-recovery-checkpoint":
		c.detail = "garbage in recovery-point-offset-checkpoint"
		c.damage = func(t *testing.T, logDir, _ string) {
			if err := os.WriteFile(filepath.Join(logDir, log.RecoveryPointFile), []byte("0\n3\nevents 0 x\n\x00\x01"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		randomMarker()
	case "delete-epoch-checkpoint":
		c.detail = "delete leader-epoch-checkpoint"
		c.damage = func(t *testing.T, _, partDir string) {
			if err := os.Remove(filepath.Join(partDir, log.LeaderEpochFile)); err != nil {
				t.Fatal(err)
			}
		}
		randomMarker()
	case "garbage-epoch-checkpoint":
		c.detail = "garbage in leader-epoch-checkpoint"
		c.damage = func(t *testing.T, _, partDir string) {
			if err := os.WriteFile(filepath.Join(partDir, log.LeaderEpochFile), []byte("0\n2\n1 0\n\xff\xfe garbage\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		randomMarker()
	case "stale-epoch-checkpoint":
		// A kill after the first append of a new epoch and before the
		// checkpoint's rename: the checkpoint lacks the newest epoch(s),
		// and the batches that start them are past the recovery point,
		// which is at most where the newest lost epoch starts.
		keep := 1 + rng.IntN(len(tm.epochs)-1)
		lost := tm.epochs[keep]
		rp := lost.StartOffset - rng.Int64N(lost.StartOffset-tm.epochs[keep-1].StartOffset+1)
		c.detail = fmt.Sprintf("leader-epoch-checkpoint keeps only %v of %v; recovery point %d", tm.epochs[:keep], tm.epochs, rp)
		c.damage = func(t *testing.T, logDir, partDir string) {
			var buf bytes.Buffer
			fmt.Fprintf(&buf, "0\n%d\n", keep)
			for _, e := range tm.epochs[:keep] {
				fmt.Fprintf(&buf, "%d %d\n", e.Epoch, e.StartOffset)
			}
			if err := os.WriteFile(filepath.Join(partDir, log.LeaderEpochFile), buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := log.WriteOffsetCheckpoint(filepath.Join(logDir, log.RecoveryPointFile), map[log.TopicPartition]int64{dmgTP: rp}, false); err != nil {
				t.Fatal(err)
			}
		}
	}
	if c.dropRecovery {
		c.detail += "; recovery-point-offset-checkpoint deleted, so every segment is scanned"
	}
	if !c.keepMarker && !strings.Contains(c.detail, "marker kept") {
		c.detail += "; clean-shutdown marker removed"
	}
	return c
}

// dmgExpectEpochs is the template's epoch cache less what starts at or after end.
func dmgExpectEpochs(tm *dmgTemplate, end int64) []log.EpochEntry {
	var out []log.EpochEntry
	for _, e := range tm.epochs {
		if e.StartOffset < end {
			out = append(out, e)
		}
	}
	return out
}

// dmgCheck reads a reopened log every way a client can and compares it with
// want, the batches that must be there in order.
func dmgCheck(t *testing.T, what string, l *log.Log, want []record.Batch, end int64, epochs []log.EpochEntry) {
	t.Helper()
	if got := l.LogEndOffset(); got != end {
		t.Errorf("%s: log end offset %d, want %d", what, got, end)
	}
	if got := l.LogStartOffset(); got != 0 {
		t.Errorf("%s: log start offset %d, want 0", what, got)
	}
	if got := l.LeaderEpochs(); !slices.Equal(got, epochs) {
		t.Errorf("%s: leader epochs %v, want %v", what, got, epochs)
	}
	// Sequentially, as a consumer reads.
	k := 0
	for next := int64(0); next < l.LogEndOffset(); {
		s, err := l.Read(next, log.ReadOptions{MaxBytes: 64 << 10, MinOneBatch: true, UpTo: -1})
		if err != nil {
			t.Fatalf("%s: read at %d: %v", what, next, err)
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
			switch {
			case k >= len(want):
				t.Fatalf("%s: read at %d found a batch at %d past the %d expected ones", what, next, b.BaseOffset(), len(want))
			case !bytes.Equal(b, want[k]):
				t.Fatalf("%s: batch %d read at %d is at offset %d, %d bytes, CRC valid %v; want offset %d, %d bytes, byte for byte",
					what, k, next, b.BaseOffset(), len(b), record.Validate(b, record.FromReplica, record.Limits{}) == nil, want[k].BaseOffset(), len(want[k]))
			}
			k++
			next = b.LastOffset() + 1
		}
		if n == 0 {
			t.Fatalf("%s: read at %d (log end %d) returned %d bytes, no whole batch", what, next, l.LogEndOffset(), len(data))
		}
	}
	if k != len(want) {
		t.Fatalf("%s: read %d batches, want %d", what, k, len(want))
	}
	// At every offset: the batch holding it, or the next one in a gap.
	for j, b := range want {
		from := int64(0)
		if j > 0 {
			from = want[j-1].LastOffset() + 1
		}
		for o := from; o <= b.LastOffset(); o++ {
			s, err := l.Read(o, log.ReadOptions{MaxBytes: 1, MinOneBatch: true, UpTo: -1})
			if err != nil {
				t.Fatalf("%s: read at offset %d: %v", what, o, err)
			}
			data, err := s.ReadAll()
			if err != nil || s.FirstOffset != b.BaseOffset() || !bytes.Equal(data, b) {
				t.Fatalf("%s: read at offset %d returned first offset %d (%d bytes, err %v), want the batch at %d (%d bytes)",
					what, o, s.FirstOffset, len(data), err, b.BaseOffset(), len(b))
			}
		}
	}
	// By timestamp: record timestamps increase along the log, so each
	// batch's base timestamp finds its first offset.
	for _, b := range want {
		o, ts, ok, err := l.OffsetForTimestamp(b.BaseTimestamp())
		if err != nil || !ok || o != b.BaseOffset() || ts != b.BaseTimestamp() {
			t.Fatalf("%s: OffsetForTimestamp(%d) = %d, %d, %v, %v; want %d, %d, true", what, b.BaseTimestamp(), o, ts, ok, err, b.BaseOffset(), b.BaseTimestamp())
		}
	}
	if len(want) > 0 {
		if o, _, ok, err := l.OffsetForTimestamp(want[len(want)-1].MaxTimestamp() + 1); ok || err != nil {
			t.Fatalf("%s: OffsetForTimestamp past the newest record = %d, %v, %v; want none", what, o, ok, err)
		}
	}
}

// dmgTestLogger sends the log's warnings to the test's output.
func dmgTestLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(dmgTestWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

type dmgTestWriter struct{ t *testing.T }

func (w dmgTestWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// dmgCheckTrusted checks a log with a damaged batch that recovery trusted:
// every batch before it in its segment, and every batch of every other
// segment, reads back byte for byte and is found by its timestamp; a read of
// the damaged batch does not hand out bytes that pass the CRC; reads and
// timestamp lookups of the batches after it in its segment may give any
// answer or CORRUPT_MESSAGE, but must give one, quickly (a flipped length or
// magic byte once sent OffsetForTimestamp round a loop for ever). extra are
// batches appended since, which must read back whole.
func dmgCheckTrusted(t *testing.T, what string, l *log.Log, tm *dmgTemplate, damaged int, extra []record.Batch, end int64, epochs []log.EpochEntry) {
	t.Helper()
	if got := l.LogEndOffset(); got != end {
		t.Errorf("%s: log end offset %d, want %d", what, got, end)
	}
	if got := l.LeaderEpochs(); !slices.Equal(got, epochs) {
		t.Errorf("%s: leader epochs %v, want %v", what, got, epochs)
	}
	si := tm.seg[damaged]
	var damagedPos int64
	for k, bi := range tm.segs[si].batches {
		if bi == damaged {
			damagedPos = tm.segs[si].pos[k]
		}
	}
	type check struct {
		b    record.Batch
		safe bool // must read back exactly
	}
	var checks []check
	for j, b := range tm.batches {
		safe := tm.seg[j] != si
		for k, bj := range tm.segs[si].batches {
			if bj == j && tm.segs[si].pos[k] < damagedPos {
				safe = true
			}
		}
		checks = append(checks, check{b, safe})
	}
	for _, b := range extra {
		checks = append(checks, check{b, true})
	}
	var errs []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		for j, c := range checks {
			for o := c.b.BaseOffset(); o <= c.b.LastOffset(); o++ {
				s, err := l.Read(o, log.ReadOptions{MaxBytes: 1, MinOneBatch: true, UpTo: -1})
				if err != nil && !c.safe && errors.Is(err, kerr.CorruptMessage) {
					// A read that lands on the damage says so, rather than
					// skipping to later records.
					continue
				}
				if err != nil {
					errs = append(errs, fmt.Sprintf("read at %d: %v", o, err))
					continue
				}
				data, err := s.ReadAll()
				switch {
				case c.safe && (err != nil || s.FirstOffset != c.b.BaseOffset() || !bytes.Equal(data, c.b)):
					errs = append(errs, fmt.Sprintf("read at %d returned first offset %d (%d bytes, err %v), want the batch at %d (%d bytes)",
						o, s.FirstOffset, len(data), err, c.b.BaseOffset(), len(c.b)))
				case j == damaged && s.FirstOffset == c.b.BaseOffset():
					if b, _, ok := record.Split(data); ok && record.Validate(b, record.FromReplica, record.Limits{}) == nil {
						errs = append(errs, fmt.Sprintf("read at %d returned the damaged batch with a valid CRC", o))
					}
				}
			}
			o, ts, ok, err := l.OffsetForTimestamp(c.b.BaseTimestamp())
			if c.safe && (err != nil || !ok || o != c.b.BaseOffset() || ts != c.b.BaseTimestamp()) {
				errs = append(errs, fmt.Sprintf("OffsetForTimestamp(%d) = %d, %d, %v, %v; want %d, %d, true",
					c.b.BaseTimestamp(), o, ts, ok, err, c.b.BaseOffset(), c.b.BaseTimestamp()))
			}
			if len(errs) > 10 {
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		// Closing the log at the end of the test makes the stuck reader's
		// reads fail, which ends it.
		t.Fatalf("%s: reads and OffsetForTimestamp lookups of the %d batches did not finish in 20s: a read loops forever", what, len(checks))
	}
	for _, e := range errs {
		t.Errorf("%s: %s", what, e)
	}
}

// dmgOpen opens a log dir, turning a panic into a test failure; the dir is
// closed once, by closeDir or at the end of the test.
func dmgOpen(t *testing.T, what, path string) (closeDir func() error, l *log.Log) {
	t.Helper()
	var d *log.Dir
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("%s: OpenDir panicked: %v\n%s", what, r, debug.Stack())
			}
		}()
		d, err = log.OpenDir(dmgDirConfig(path, dmgTestLogger(t)))
	}()
	if err != nil {
		t.Fatalf("%s: OpenDir refused to start: %v", what, err)
	}
	var once sync.Once
	var cerr error
	closeDir = func() error {
		once.Do(func() { cerr = d.Close() })
		return cerr
	}
	t.Cleanup(func() { closeDir() })
	l, ok := d.Log(dmgTP)
	if !ok {
		t.Fatalf("%s: partition %s is gone", what, dmgTP)
	}
	if _, err := os.Stat(filepath.Join(path, log.CleanShutdownFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s: the clean-shutdown marker survived OpenDir (%v)", what, err)
	}
	return closeDir, l
}

func TestRecoveryFromDamage(t *testing.T) {
	seed := uint64(0)
	if s := os.Getenv(dmgEnvSeed); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", dmgEnvSeed, s, err)
		}
	} else {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with %s=%d)", seed, dmgEnvSeed, seed)
	tm := dmgBuildTemplate(t, seed)
	t.Logf("template: %d batches in %d segments, log end %d, epochs %v", len(tm.batches), len(tm.segs), tm.end, tm.epochs)
	rng := rand.New(rand.NewPCG(seed, 0x64616d67))
	for n := range dmgCases {
		c := dmgNewCase(tm, rng, n)
		appendSeed := rng.Uint64()
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			t.Logf("seed %d: %s", seed, c.detail)
			what := fmt.Sprintf("seed %d, %s", seed, c.name)
			logDir := filepath.Join(t.TempDir(), "logdir")
			if err := os.CopyFS(logDir, os.DirFS(tm.dir)); err != nil {
				t.Fatal(err)
			}
			c.damage(t, logDir, filepath.Join(logDir, dmgTP.String()))
			if !c.keepMarker {
				if err := os.Remove(filepath.Join(logDir, log.CleanShutdownFile)); err != nil {
					t.Fatal(err)
				}
			}
			if c.dropRecovery {
				if err := os.Remove(filepath.Join(logDir, log.RecoveryPointFile)); err != nil {
					t.Fatal(err)
				}
			}

			closeDir, l := dmgOpen(t, what+": reopen after damage", logDir)
			want := make([]record.Batch, 0, len(c.survivors))
			for _, i := range c.survivors {
				want = append(want, tm.batches[i])
			}
			epochs := dmgExpectEpochs(tm, c.end)
			check := func(what string, l *log.Log, want []record.Batch, end int64, epochs []log.EpochEntry) {
				t.Helper()
				if c.trusted {
					dmgCheckTrusted(t, what, l, tm, c.damaged, want[len(tm.batches):], end, epochs)
					return
				}
				dmgCheck(t, what, l, want, end, epochs)
			}
			check(what+": reopen after damage", l, want, c.end, epochs)

			// New appends continue at the log end, one of them larger
			// than a segment, and survive a clean close and reopen.
			rng := rand.New(rand.NewPCG(appendSeed, 1))
			ts := tm.nextTs
			for i := range 3 {
				minValue := 0
				if i == 1 {
					minValue = 4 << 10
				}
				b := dmgBuild(rng, &ts, minValue)
				end := l.LogEndOffset()
				info, err := l.AppendAsLeader(b, 7)
				if err != nil {
					t.Fatalf("%s: append after recovery: %v", what, err)
				}
				if info.FirstOffset != end {
					t.Fatalf("%s: append after recovery got offset %d, log end was %d", what, info.FirstOffset, end)
				}
				want = append(want, b)
			}
			epochs = append(epochs, log.EpochEntry{Epoch: 7, StartOffset: c.end})
			end := want[len(want)-1].LastOffset() + 1
			check(what+": after new appends", l, want, end, epochs)
			if err := closeDir(); err != nil {
				t.Fatalf("%s: close after new appends: %v", what, err)
			}
			_, l = dmgOpen(t, what+": clean reopen after new appends", logDir)
			check(what+": clean reopen after new appends", l, want, end, epochs)
		})
	}
}
