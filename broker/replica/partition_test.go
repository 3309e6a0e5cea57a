package replica

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/producer"
	"github.com/tributary-io/tributary/broker/record"
)

// The broker's clock in these tests, and every batch's timestamp, so that
// state rebuilt from the log (which stores batch timestamps) and state built
// by appends (which records the append time) compare equal.
var testNow = time.UnixMilli(1_700_000_000_000)

var testTP = log.TopicPartition{Topic: "events", Partition: 0}

// testDir is a log dir with background work off: nothing is flushed,
// checkpointed or deleted behind the test's back.
func testDir(t *testing.T, root string) *log.Dir {
	t.Helper()
	cfg := log.DefaultDirConfig(root)
	cfg.CheckpointInterval, cfg.RetentionCheckInterval, cfg.FlushCheckInterval = 0, 0, 0
	cfg.CleanerEnable = false
	cfg.Logger = slog.New(slog.DiscardHandler)
	d, err := log.OpenDir(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// testPartition opens (or creates) the test partition in d, as the
// manager does.
func testPartition(t *testing.T, d *log.Dir) *Partition {
	t.Helper()
	l, ok := d.Log(testTP)
	if !ok {
		var err error
		if l, err = d.Create(testTP, log.DefaultConfig()); err != nil {
			t.Fatal(err)
		}
	}
	meta := cluster.Partition{Leader: 1, Replicas: []int32{1}, ISR: []int32{1}}
	p, err := newPartition(testTP, cluster.TopicID{}, l, 1, meta, -1, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.now = func() time.Time { return testNow }
	p.applyMeta(meta, 1)
	return p
}

// produce appends one batch of n records of producer pid (-1: not
// idempotent) as a client would send it.
func produce(t *testing.T, p *Partition, pid int64, epoch int16, seq int32, n int) (AppendResult, error) {
	t.Helper()
	opts := record.DefaultBuildOptions()
	opts.BaseTimestamp = testNow.UnixMilli()
	if pid >= 0 {
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = pid, epoch, seq
	}
	recs := make([]kmsg.Record, n)
	for i := range recs {
		recs[i] = kmsg.Record{OffsetDelta: int32(i), Value: fmt.Appendf(nil, "%d-%d-%d", pid, seq, i)}
	}
	b, err := record.Build(opts, recs)
	if err != nil {
		t.Fatal(err)
	}
	return p.AppendAsLeader(b)
}

// mustProduce appends a batch that must not be a duplicate.
func mustProduce(t *testing.T, p *Partition, pid int64, epoch int16, seq int32, n int) int64 {
	t.Helper()
	res, err := produce(t, p, pid, epoch, seq, n)
	if err != nil || res.Duplicate {
		t.Fatalf("producer %d epoch %d seq %d: %+v, %v", pid, epoch, seq, res, err)
	}
	return res.BaseOffset
}

// dumpProducers prints a partition's producer state, by producer id.
func dumpProducers(p *Partition) string {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	var pids []int64
	for pid := range p.producers.Producers() {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	var sb strings.Builder
	for _, pid := range pids {
		e := p.producers.Producers()[pid]
		fmt.Fprintf(&sb, "producer %d epoch %d last-timestamp %d:", pid, e.Epoch, e.LastTimestamp)
		for _, bm := range e.Batches {
			fmt.Fprintf(&sb, " [seq %d-%d offsets %d-%d ts %d]", bm.FirstSeq, bm.LastSeq, bm.FirstOffset, bm.LastOffset, bm.Timestamp)
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

func snapshotOffsets(t *testing.T, p *Partition) []int64 {
	t.Helper()
	ents, err := os.ReadDir(p.Log.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var offs []int64
	for _, e := range ents {
		var off int64
		if n, _ := fmt.Sscanf(e.Name(), "%020d.snapshot", &off); n == 1 && strings.HasSuffix(e.Name(), ".snapshot") {
			offs = append(offs, off)
		}
	}
	return offs
}

// crashCopy copies a log dir as a crash would leave it while the broker
// runs: whatever was written, no clean-shutdown marker, no final snapshot.
func crashCopy(t *testing.T, root string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "crashed")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dst, log.CleanShutdownFile)); err == nil {
		t.Fatal("a running log dir has a clean-shutdown marker")
	}
	return dst
}

// captureLogs sends the default logger, which partitions log with, to a
// buffer until the test ends.
func captureLogs(t *testing.T) *bytes.Buffer {
	var buf bytes.Buffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(old) })
	return &buf
}

func TestProducerStateSurvivesCleanRestart(t *testing.T) {
	root := t.TempDir()
	d := testDir(t, root)
	p := testPartition(t, d)
	mustProduce(t, p, -1, 0, 0, 2)
	for seq := int32(0); seq < 9; seq += 3 {
		mustProduce(t, p, 1, 0, seq, 3)
	}
	last := mustProduce(t, p, 2, 5, 100, 1)
	before := dumpProducers(p)
	end := p.Log.LogEndOffset()

	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = testDir(t, root)
	defer d.Close()
	p = testPartition(t, d)
	if got := snapshotOffsets(t, p); !slices.Equal(got, []int64{end}) {
		t.Fatalf("snapshots %v, want one at the log end %d", got, end)
	}
	if p.snapSegs == 0 {
		t.Error("a restart from a snapshot at the log end replayed batches")
	}
	// The snapshot keeps each producer's last batch.
	want := "producer 1 epoch 0 last-timestamp 1700000000000: [seq 6-8 offsets 8-10 ts 1700000000000]\n" +
		"producer 2 epoch 5 last-timestamp 1700000000000: [seq 100-100 offsets 11-11 ts 1700000000000]\n"
	if got := dumpProducers(p); got != want {
		t.Fatalf("after restart:\n%s\nwant:\n%s\nbefore:\n%s", got, want, before)
	}
	if res, err := produce(t, p, 2, 5, 100, 1); err != nil || !res.Duplicate || res.BaseOffset != last {
		t.Fatalf("retry of the last batch: %+v, %v", res, err)
	}
	// An older in-flight batch's retry is answered as Kafka answers it.
	if _, err := produce(t, p, 1, 0, 3, 3); !errors.Is(err, kerr.OutOfOrderSequenceNumber) {
		t.Fatalf("retry of an older batch: %v", err)
	}
	if _, err := produce(t, p, 2, 4, 101, 1); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("an older epoch: %v", err)
	}
	mustProduce(t, p, 1, 0, 9, 1)
	mustProduce(t, p, 2, 5, 101, 1)
}

func TestProducerStateRecoveredAfterCrash(t *testing.T) {
	root := t.TempDir()
	d := testDir(t, root)
	defer d.Close()
	p := testPartition(t, d)
	mustProduce(t, p, 1, 0, 0, 2)
	mustProduce(t, p, 1, 0, 2, 2)
	mustProduce(t, p, 2, 0, 0, 1)
	mustProduce(t, p, 4, 0, 0, 1)
	if err := p.MaintainProducers(24 * time.Hour); err != nil {
		t.Fatal(err)
	}
	snap := p.Log.LogEndOffset()
	if got := snapshotOffsets(t, p); !slices.Equal(got, []int64{snap}) {
		t.Fatalf("snapshots %v, want one at %d", got, snap)
	}
	// The tail no snapshot covers: producer 1 goes on for six batches (more
	// than are remembered), 3 is new, 4 bumps its epoch.
	var tail []int64
	for seq := int32(4); seq < 16; seq += 2 {
		tail = append(tail, mustProduce(t, p, 1, 0, seq, 2))
	}
	mustProduce(t, p, 3, 0, 0, 3)
	mustProduce(t, p, 3, 0, 3, 1)
	mustProduce(t, p, 4, 1, 0, 2)
	mustProduce(t, p, -1, 0, 0, 4)
	want := dumpProducers(p)

	crashed := crashCopy(t, root)
	logs := captureLogs(t)
	d2 := testDir(t, crashed)
	defer d2.Close()
	p2 := testPartition(t, d2)
	if p2.Log.LogEndOffset() != p.Log.LogEndOffset() {
		t.Fatalf("log end %d after the crash, %d before", p2.Log.LogEndOffset(), p.Log.LogEndOffset())
	}
	if got := dumpProducers(p2); got != want {
		t.Fatalf("recovered:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(logs.String(), "producer state recovered") {
		t.Errorf("no recovery logged: %s", logs)
	}
	// Every remembered tail batch's retry is answered with its offsets.
	for i, seq := 1, int32(6); seq < 16; i, seq = i+1, seq+2 {
		if res, err := produce(t, p2, 1, 0, seq, 2); err != nil || !res.Duplicate || res.BaseOffset != tail[i] {
			t.Fatalf("retry of seq %d: %+v, %v; want offset %d", seq, res, err, tail[i])
		}
	}
	// The replay makes a snapshot due.
	if err := p2.MaintainProducers(24 * time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := snapshotOffsets(t, p2); !slices.Equal(got, []int64{snap, p2.Log.LogEndOffset()}) {
		t.Fatalf("snapshots %v after maintenance", got)
	}
}

func TestCorruptSnapshotFallsBack(t *testing.T) {
	root := t.TempDir()
	d := testDir(t, root)
	p := testPartition(t, d)
	var snaps []int64
	for seq := int32(0); seq < 3; seq++ {
		mustProduce(t, p, 1, 0, seq, 1)
		mustProduce(t, p, 2, 0, seq, 1)
		if err := p.Log.Roll(); err != nil {
			t.Fatal(err)
		}
		if err := p.MaintainProducers(24 * time.Hour); err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, p.Log.LogEndOffset())
	}
	mustProduce(t, p, 1, 0, 3, 1)
	want := dumpProducers(p)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	snaps = append(snaps, p.Log.LogEndOffset())
	// keepSnapshots of them are left: damage the two newest.
	if got := snapshotOffsets(t, p); !slices.Equal(got, snaps[1:]) {
		t.Fatalf("snapshots %v, want %v", got, snaps[1:])
	}
	for _, off := range snaps[2:] {
		path := filepath.Join(p.Log.Dir(), producer.SnapshotFileName(off))
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)-1] ^= 1
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	logs := captureLogs(t)
	d = testDir(t, root)
	defer d.Close()
	p = testPartition(t, d)
	// From the intact snapshot, each producer's last batch before it, then
	// the batches after it, replayed.
	recovered := "producer 1 epoch 0 last-timestamp 1700000000000: [seq 1-1 offsets 2-2 ts 1700000000000] [seq 2-2 offsets 4-4 ts 1700000000000] [seq 3-3 offsets 6-6 ts 1700000000000]\n" +
		"producer 2 epoch 0 last-timestamp 1700000000000: [seq 1-1 offsets 3-3 ts 1700000000000] [seq 2-2 offsets 5-5 ts 1700000000000]\n"
	if got := dumpProducers(p); got != recovered {
		t.Fatalf("recovered:\n%s\nwant:\n%s\nbefore the restart:\n%s", got, recovered, want)
	}
	mustProduce(t, p, 1, 0, 4, 1)
	mustProduce(t, p, 2, 0, 3, 1)
	if got := snapshotOffsets(t, p); !slices.Equal(got, snaps[1:2]) {
		t.Fatalf("snapshots %v, want only the intact %d", got, snaps[1])
	}
	if n := strings.Count(logs.String(), "CRC"); n != 2 {
		t.Errorf("%d CRC warnings, want 2:\n%s", n, logs)
	}
}

// TestSnapshotPastLogEndIsDeleted: a crash loses the unflushed tail after a
// snapshot covering it was written; the snapshot describes batches the log
// no longer has.
func TestSnapshotPastLogEndIsDeleted(t *testing.T) {
	root := t.TempDir()
	d := testDir(t, root)
	defer d.Close()
	p := testPartition(t, d)
	mustProduce(t, p, 1, 0, 0, 1)
	mustProduce(t, p, 1, 0, 1, 1)
	lost := mustProduce(t, p, 1, 0, 2, 1)
	if err := p.MaintainProducers(24 * time.Hour); err != nil {
		t.Fatal(err)
	}
	crashed := crashCopy(t, root)
	// The last batch never reached the disk.
	seg := filepath.Join(crashed, testTP.String(), "00000000000000000000.log")
	slice, err := p.Log.Read(lost, log.ReadOptions{MaxBytes: 1 << 20, UpTo: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(seg, slice.Pos); err != nil {
		t.Fatal(err)
	}

	d2 := testDir(t, crashed)
	defer d2.Close()
	p2 := testPartition(t, d2)
	if end := p2.Log.LogEndOffset(); end != lost {
		t.Fatalf("log end %d after losing the batch at %d", end, lost)
	}
	if got := snapshotOffsets(t, p2); len(got) != 0 {
		t.Fatalf("snapshots %v past the log end %d were kept", got, lost)
	}
	// The lost batch is not a duplicate: its retry is appended.
	if res, err := produce(t, p2, 1, 0, 2, 1); err != nil || res.Duplicate || res.BaseOffset != lost {
		t.Fatalf("retry of the lost batch: %+v, %v", res, err)
	}
}

func TestMaintainProducers(t *testing.T) {
	d := testDir(t, t.TempDir())
	defer d.Close()
	p := testPartition(t, d)
	maintain := func() {
		t.Helper()
		if err := p.MaintainProducers(time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	expect := func(want ...int64) {
		t.Helper()
		if got := snapshotOffsets(t, p); !slices.Equal(got, want) {
			t.Fatalf("snapshots %v, want %v", got, want)
		}
	}

	maintain()
	expect() // an empty log needs none
	mustProduce(t, p, 1, 0, 0, 1)
	maintain()
	expect(1) // data and no snapshot
	mustProduce(t, p, 1, 0, 1, 1)
	maintain()
	expect(1) // no roll, little growth: not due
	p.snapMu.Lock()
	p.snapSize -= snapshotEveryBytes
	p.snapMu.Unlock()
	maintain()
	expect(1, 2) // grown by snapshotEveryBytes
	for i := int32(2); i < 5; i++ {
		if err := p.Log.Roll(); err != nil {
			t.Fatal(err)
		}
		mustProduce(t, p, 1, 0, i, 1)
		maintain()
	}
	expect(3, 4, 5) // a roll makes one due; keepSnapshots are kept
	maintain()
	expect(3, 4, 5) // nothing appended since

	// The log start moves past every snapshot: a new one is written first,
	// so that the state of producers whose batches are gone survives.
	mustProduce(t, p, 2, 0, 0, 1)
	if err := p.Log.DeleteRecordsBefore(6); err != nil {
		t.Fatal(err)
	}
	maintain()
	expect(6)

	// Expiry: producer 1 has been idle for two hours, producer 2 appends now.
	p.now = func() time.Time { return testNow.Add(2 * time.Hour) }
	mustProduce(t, p, 2, 0, 1, 1)
	maintain()
	if got := dumpProducers(p); !strings.HasPrefix(got, "producer 2 ") || strings.Count(got, "\n") != 1 {
		t.Fatalf("after expiry:\n%s", got)
	}
	expect(6)

	// After Close, maintenance writes nothing.
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	expect(6, 7)
	mustProduce(t, p, 2, 0, 2, 1)
	if err := p.Log.Roll(); err != nil {
		t.Fatal(err)
	}
	maintain()
	expect(6, 7)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	expect(6, 7)
}

// TestNewPartitionWithoutSnapshots: a log written before snapshots existed
// (or whose snapshots were all lost) is replayed from its start.
func TestNewPartitionWithoutSnapshots(t *testing.T) {
	root := t.TempDir()
	d := testDir(t, root)
	p := testPartition(t, d)
	for seq := int32(0); seq < 4; seq++ {
		mustProduce(t, p, 7, 3, seq, 1)
	}
	want := dumpProducers(p)
	if err := d.Close(); err != nil { // no Partition.Close: no snapshot
		t.Fatal(err)
	}
	d = testDir(t, root)
	defer d.Close()
	p = testPartition(t, d)
	if got := dumpProducers(p); got != want {
		t.Fatalf("replayed:\n%s\nwant:\n%s", got, want)
	}
	if got := snapshotOffsets(t, p); len(got) != 0 {
		t.Fatalf("snapshots %v", got)
	}
}

// TestMaintainDuringAppends: snapshots taken while producers append are
// consistent: a restart from the last of them, with the tail replayed,
// rebuilds the state the appends left. Run it with -race.
func TestMaintainDuringAppends(t *testing.T) {
	root := t.TempDir()
	d := testDir(t, root)
	defer d.Close()
	p := testPartition(t, d)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 300 {
			pid := int64(i % 3)
			if _, err := produce(t, p, pid, 0, int32(i/3), 1); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
			if err := p.Log.Roll(); err != nil {
				t.Fatal(err)
			}
			if err := p.MaintainProducers(time.Hour); err != nil {
				t.Fatal(err)
			}
		}
	}
	d2 := testDir(t, crashCopy(t, root))
	defer d2.Close()
	p2 := testPartition(t, d2)
	// Each producer's remembered batches are the last of those it had: at
	// least the one the last snapshot kept, and every one appended after it.
	want, got := p.producers.Producers(), p2.producers.Producers()
	if len(got) != len(want) {
		t.Fatalf("recovered:\n%s\nwant:\n%s", dumpProducers(p2), dumpProducers(p))
	}
	for pid, e := range want {
		g := got[pid]
		if g == nil || len(g.Batches) == 0 || g.Epoch != e.Epoch ||
			!slices.Equal(g.Batches, e.Batches[len(e.Batches)-len(g.Batches):]) {
			t.Fatalf("recovered:\n%s\nwant a suffix of:\n%s", dumpProducers(p2), dumpProducers(p))
		}
	}
	if base, _ := p2.snapshotBaseLocked(); p2.snapSegs != 0 && base != p.Log.LogEndOffset() {
		t.Fatalf("replayed from %d, but no snapshot is due", base)
	}
}

// A log file that cannot be written (a full disk) answers
// KAFKA_STORAGE_ERROR, which producers retry; a closed log is
// NOT_LEADER_OR_FOLLOWER; anything else unknown is UNKNOWN_SERVER_ERROR.
func TestKafkaError(t *testing.T) {
	full := fmt.Errorf("broker/log: write 00000000000000000000.log: %w",
		&fs.PathError{Op: "write", Path: "00000000000000000000.log", Err: syscall.ENOSPC})
	for _, tc := range []struct {
		err  error
		want *kerr.Error
	}{
		{full, kerr.KafkaStorageError},
		{fmt.Errorf("appending: %w", log.ErrClosed), kerr.NotLeaderForPartition},
		{&record.Error{Kafka: kerr.CorruptMessage, Reason: "bad"}, kerr.CorruptMessage},
		{errors.New("something else"), kerr.UnknownServerError},
	} {
		if got := KafkaError(tc.err); got != tc.want {
			t.Errorf("KafkaError(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// TestVerificationGuard: a marker written between a transactional
// produce's verification and its append (the transaction ended) makes the
// append INVALID_TXN_STATE instead of opening a transaction no coordinator
// knows; a fresh verification's append opens it, and later batches of the
// open transaction need no guard.
func TestVerificationGuard(t *testing.T) {
	d := testDir(t, t.TempDir())
	defer d.Close()
	p := testPartition(t, d)
	defer p.Close()
	batch := func(seq int32) []byte {
		opts := record.DefaultBuildOptions()
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = 7, 0, seq, true
		opts.BaseTimestamp = testNow.UnixMilli()
		b, err := record.Build(opts, record.NewRecords(record.KV{Value: []byte("v")}))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	open, g := p.BeginTxnVerification(7, 0)
	if open || g == nil {
		t.Fatalf("no transaction open: BeginTxnVerification %v %v", open, g)
	}
	if _, err := p.AppendMarker(7, 0, false, 0, 0); err != nil {
		t.Fatal(err)
	}
	end := p.Log.LogEndOffset()
	if _, err := p.AppendTxnAsLeader(batch(0), nil, g); !errors.Is(err, kerr.InvalidTxnState) {
		t.Fatalf("append after a marker cleared its guard: %v, want INVALID_TXN_STATE", err)
	}
	if got := p.Log.LogEndOffset(); got != end {
		t.Fatalf("the refused append moved the log end to %d from %d", got, end)
	}
	_, g = p.BeginTxnVerification(7, 0)
	if _, err := p.AppendTxnAsLeader(batch(0), nil, g); err != nil {
		t.Fatalf("append with its guard: %v", err)
	}
	if open, _ := p.BeginTxnVerification(7, 0); !open {
		t.Fatal("the transaction is not open after its first batch")
	}
	if _, err := p.AppendTxnAsLeader(batch(1), nil, nil); err != nil {
		t.Fatalf("a later batch of the open transaction: %v", err)
	}
}

// TestTxnV2MarkerStrict: with transactions v2 a transaction's markers
// carry the epoch after its own, the epoch of the producer's next
// transaction. A late duplicate of such a marker, arriving once that next
// transaction is open in the partition, is refused (INVALID_PRODUCER_EPOCH)
// and the transaction stays open; the same marker again while nothing is
// open is a retry and accepted; a v1 marker at the open transaction's
// epoch still ends it.
func TestTxnV2MarkerStrict(t *testing.T) {
	d := testDir(t, t.TempDir())
	defer d.Close()
	p := testPartition(t, d)
	defer p.Close()
	appendAt := func(epoch int16) {
		t.Helper()
		opts := record.DefaultBuildOptions()
		opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = 7, epoch, 0, true
		opts.BaseTimestamp = testNow.UnixMilli()
		b, err := record.Build(opts, record.NewRecords(record.KV{Value: []byte("v")}))
		if err != nil {
			t.Fatal(err)
		}
		_, g := p.BeginTxnVerification(7, epoch)
		if _, err := p.AppendTxnAsLeader(b, nil, g); err != nil {
			t.Fatalf("append at epoch %d: %v", epoch, err)
		}
	}
	open := func() bool { o, _ := p.BeginTxnVerification(7, 1); return o }
	appendAt(0)
	if _, err := p.AppendMarker(7, 1, true, 0, 2); err != nil {
		t.Fatalf("v2 commit marker at the bumped epoch: %v", err)
	}
	if _, err := p.AppendMarker(7, 1, true, 0, 2); err != nil {
		t.Fatalf("its retry, nothing open: %v", err)
	}
	appendAt(1) // the next transaction, at the bumped epoch
	if _, err := p.AppendMarker(7, 1, true, 0, 2); !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("late duplicate v2 marker while the next transaction is open: %v, want INVALID_PRODUCER_EPOCH", err)
	}
	if !open() {
		t.Fatal("the late duplicate marker ended the open transaction")
	}
	if _, err := p.AppendMarker(7, 1, false, 0, 0); err != nil || open() {
		t.Fatalf("v1 marker at the open transaction's epoch: %v, open %v", err, open())
	}
}

// TestAppendAfterLeadershipMoved: a produce looks its partition up, then
// may spend a replicated write or a round trip verifying or adding it to
// its transaction; if leadership moves meanwhile, the append it then
// makes is refused with NOT_LEADER_OR_FOLLOWER and leaves the log as it
// was, rather than writing into what is now a follower's log a batch the
// new leader lacks, under the new leader's epoch.
func TestAppendAfterLeadershipMoved(t *testing.T) {
	d := testDir(t, t.TempDir())
	defer d.Close()
	p := testPartition(t, d)
	defer p.Close()
	mustProduce(t, p, 3, 0, 0, 1)
	open, g := p.BeginTxnVerification(7, 0)
	if open || g == nil {
		t.Fatalf("no transaction open: BeginTxnVerification %v %v", open, g)
	}
	// The verification's round trip: node 2 takes over.
	p.applyMeta(cluster.Partition{Leader: 2, LeaderEpoch: 1, Replicas: []int32{1, 2}, ISR: []int32{1, 2}}, 1)
	end := p.Log.LogEndOffset()
	opts := record.DefaultBuildOptions()
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence, opts.Transactional = 7, 0, 0, true
	opts.BaseTimestamp = testNow.UnixMilli()
	b, err := record.Build(opts, record.NewRecords(record.KV{Value: []byte("v")}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.AppendTxnAsLeader(b, nil, g); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("transactional append after losing the leadership: %v, want NOT_LEADER_OR_FOLLOWER", err)
	}
	if _, err := produce(t, p, 3, 0, 1, 1); !errors.Is(err, kerr.NotLeaderForPartition) {
		t.Fatalf("idempotent append after losing the leadership: %v, want NOT_LEADER_OR_FOLLOWER", err)
	}
	if got := p.Log.LogEndOffset(); got != end {
		t.Fatalf("a deposed leader's appends moved the log end to %d from %d", got, end)
	}
}
