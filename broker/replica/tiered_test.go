package replica

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/tributary-io/tributary/broker/log"
)

// TestRebuildFromRemote: the producer state uploaded with a segment is the
// state at the segment's end even when the newest snapshot is older, and a
// follower that rebuilds from it (KIP-405) starts its empty log there with
// the leader's epochs and producers, as if it had copied the history: a
// producer's retry is a duplicate on it, and a restart keeps it all.
func TestRebuildFromRemote(t *testing.T) {
	d := testDir(t, t.TempDir())
	defer d.Close()
	p := testPartition(t, d)
	for seq := int32(0); seq < 6; seq += 3 {
		mustProduce(t, p, 1, 0, seq, 3)
	}
	if err := p.MaintainProducers(0); err != nil { // a snapshot at 6
		t.Fatal(err)
	}
	mid := p.Log.LogEndOffset()
	mustProduce(t, p, 2, 3, 0, 2)
	last := mustProduce(t, p, 1, 0, 6, 1)
	next := p.Log.LogEndOffset()
	if got := snapshotOffsets(t, p); !slices.Equal(got, []int64{mid}) {
		t.Fatalf("snapshots %v, want the one at %d only", got, mid)
	}
	data, ok, err := p.ProducerSnapshotAt(next)
	if err != nil || !ok {
		t.Fatalf("ProducerSnapshotAt(%d): %v %v", next, ok, err)
	}
	atMid, ok, err := p.ProducerSnapshotAt(mid)
	if err != nil || !ok {
		t.Fatalf("ProducerSnapshotAt(%d): %v %v", mid, ok, err)
	}

	fd := testDir(t, t.TempDir())
	f := testPartition(t, fd)
	mustProduce(t, f, 9, 0, 0, 2) // a stale log, wiped by the rebuild
	epochs := []log.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 4, StartOffset: 3}}
	if err := f.RebuildFromRemote(RemoteState{Next: 1, Epochs: epochs, Snapshot: data}); err == nil {
		t.Fatal("rebuilt at 1, below the log end 2")
	}
	if err := f.RebuildFromRemote(RemoteState{Next: next, Epochs: epochs, Snapshot: data}); err != nil {
		t.Fatal(err)
	}
	if s, e, hw := f.Log.LogStartOffset(), f.Log.LogEndOffset(), f.HighWatermark(); s != next || e != next || hw != next {
		t.Fatalf("after the rebuild: start %d end %d hw %d, want %d", s, e, hw, next)
	}
	if got := f.Log.LeaderEpochs(); !slices.Equal(got, epochs) {
		t.Fatalf("leader epochs %v, want %v", got, epochs)
	}
	// A snapshot keeps each producer's last batch, as Kafka's does.
	want := "producer 1 epoch 0 last-timestamp 1700000000000: [seq 6-6 offsets 8-8 ts 1700000000000]\n" +
		"producer 2 epoch 3 last-timestamp 1700000000000: [seq 0-1 offsets 6-7 ts 1700000000000]\n"
	if got := dumpProducers(f); got != want {
		t.Fatalf("producers after the rebuild:\n%s\nwant:\n%s", got, want)
	}

	// Restarted, the follower keeps it (the snapshot is on its disk).
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fd.Close(); err != nil {
		t.Fatal(err)
	}
	fd = testDir(t, fd.Path())
	defer fd.Close()
	f = testPartition(t, fd)
	if got := dumpProducers(f); got != want {
		t.Fatalf("producers after a restart:\n%s\nwant:\n%s", got, want)
	}
	if res, err := produce(t, f, 1, 0, 6, 1); err != nil || !res.Duplicate || res.BaseOffset != last {
		t.Fatalf("a retry of the last batch on the rebuilt replica: %+v, %v", res, err)
	}
	mustProduce(t, f, 2, 3, 2, 1)

	// The state at mid has producer 1's first batches only.
	gd := testDir(t, t.TempDir())
	defer gd.Close()
	g := testPartition(t, gd)
	if err := g.RebuildFromRemote(RemoteState{Next: mid, Snapshot: atMid}); err != nil {
		t.Fatal(err)
	}
	if got, want := dumpProducers(g), "producer 1 epoch 0 last-timestamp 1700000000000: [seq 3-5 offsets 3-5 ts 1700000000000]\n"; got != want {
		t.Fatalf("producers at %d:\n%s\nwant:\n%s", mid, got, want)
	}
}

// tieredDir opens a log dir whose logs are tiered (remote.storage.enable),
// whose leader epochs below the log start survive a restart.
func tieredDir(t *testing.T, root string) *log.Dir {
	t.Helper()
	cfg := log.DefaultDirConfig(root)
	cfg.CheckpointInterval, cfg.RetentionCheckInterval, cfg.FlushCheckInterval = 0, 0, 0
	cfg.CleanerEnable = false
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Defaults.RemoteStorage = true
	d, err := log.OpenDir(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.Log(testTP); !ok {
		if _, err := d.Create(testTP, cfg.Defaults); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// TestRebuildFromRemoteCrash: a follower killed at any step of a rebuild
// from remote storage opens with the rebuilt state (the log empty at Next,
// the remote epochs and producers), never the wiped log's producers under
// a log that starts at Next, which nothing would repair: the leader's
// local start is then at or below Next and never asks for another rebuild.
func TestRebuildFromRemoteCrash(t *testing.T) {
	ld := testDir(t, t.TempDir())
	defer ld.Close()
	lp := testPartition(t, ld)
	mustProduce(t, lp, 1, 0, 0, 3)
	mustProduce(t, lp, 2, 3, 0, 2)
	next := lp.Log.LogEndOffset()
	data, ok, err := lp.ProducerSnapshotAt(next)
	if err != nil || !ok {
		t.Fatalf("ProducerSnapshotAt(%d): %v %v", next, ok, err)
	}
	want := "producer 1 epoch 0 last-timestamp 1700000000000: [seq 0-2 offsets 0-2 ts 1700000000000]\n" +
		"producer 2 epoch 3 last-timestamp 1700000000000: [seq 0-1 offsets 3-4 ts 1700000000000]\n"
	epochs := []log.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 3, StartOffset: 3}}
	st := RemoteState{Next: next, Epochs: epochs, Snapshot: data}

	for _, step := range []string{"marker", "log", "old snapshots", "snapshot"} {
		t.Run(step, func(t *testing.T) {
			root := t.TempDir()
			fd := tieredDir(t, root)
			f := testPartition(t, fd)
			mustProduce(t, f, 9, 0, 0, 2) // the stale log the rebuild wipes
			if err := f.MaintainProducers(0); err != nil {
				t.Fatal(err)
			}
			if got := snapshotOffsets(t, f); len(got) == 0 {
				t.Fatal("no snapshot of the stale log")
			}
			crash := errors.New("crash")
			rebuildFault = func(s string) error {
				if s == step {
					return crash
				}
				return nil
			}
			err := f.RebuildFromRemote(st)
			rebuildFault = nil
			if !errors.Is(err, crash) {
				t.Fatalf("rebuild: %v, want the crash after %q", err, step)
			}
			crashed := crashCopy(t, root)
			f.Close()
			fd.Close()

			rd := tieredDir(t, crashed)
			defer rd.Close()
			r := testPartition(t, rd)
			if s, e := r.Log.LogStartOffset(), r.Log.LogEndOffset(); s != next || e != next {
				t.Fatalf("restarted: log [%d, %d), want [%d, %d)", s, e, next, next)
			}
			if got := r.Log.LeaderEpochs(); !slices.Equal(got, epochs) {
				t.Fatalf("restarted: leader epochs %v, want %v", got, epochs)
			}
			if got := dumpProducers(r); got != want {
				t.Fatalf("restarted: producers\n%s\nwant\n%s", got, want)
			}
			if _, err := os.Stat(filepath.Join(r.Log.Dir(), rebuildPendingFile)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the marker is left: %v", err)
			}
		})
	}
}

// TestTruncateBelowRebuiltStart: a follower rebuilt from remote storage at
// Next whose new leader's history diverges below Next (an unclean
// election, remote metadata that disagrees with the new leader) is emptied
// there as Kafka's truncateTo does, rather than fail the truncation, which
// stalled every partition fetched from that leader.
func TestTruncateBelowRebuiltStart(t *testing.T) {
	ld := testDir(t, t.TempDir())
	defer ld.Close()
	lp := testPartition(t, ld)
	mustProduce(t, lp, 1, 0, 0, 3)
	mustProduce(t, lp, 2, 3, 0, 2)
	next := lp.Log.LogEndOffset()
	data, _, err := lp.ProducerSnapshotAt(next)
	if err != nil {
		t.Fatal(err)
	}
	for _, local := range []int{0, 2} { // records fetched after the rebuild
		fd := tieredDir(t, t.TempDir())
		f := testPartition(t, fd)
		epochs := []log.EpochEntry{{Epoch: 0, StartOffset: 0}, {Epoch: 3, StartOffset: 3}}
		if err := f.RebuildFromRemote(RemoteState{Next: next, Epochs: epochs, Snapshot: data}); err != nil {
			t.Fatal(err)
		}
		if local > 0 {
			mustProduce(t, f, 1, 0, 3, local)
		}
		// The new leader ends epoch 3 at 4, below Next.
		to := f.divergence(3, 4)
		if to != 4 {
			t.Fatalf("divergence %d, want 4", to)
		}
		if err := f.TruncateTo(to); err != nil {
			t.Fatalf("%d local records: truncating below the log start: %v", local, err)
		}
		if s, e, hw := f.Log.LogStartOffset(), f.Log.LogEndOffset(), f.HighWatermark(); s != 4 || e != 4 || hw != 4 {
			t.Fatalf("after the truncation: start %d end %d hw %d, want 4", s, e, hw)
		}
		if got := f.Log.LeaderEpochs(); len(got) != 0 {
			t.Fatalf("leader epochs %v kept", got)
		}
		if got := dumpProducers(f); got != "" {
			t.Fatalf("producers of a log that holds none of their batches:\n%s", got)
		}
		if got := snapshotOffsets(t, f); len(got) != 0 {
			t.Fatalf("snapshots %v kept", got)
		}
		f.Close()
		fd.Close()
	}
}

// TestResetToDropsProducers: a log emptied at the leader's log start keeps
// no producer of the log it held (Kafka's truncateFullyAndStartAt deletes
// every snapshot); the newest snapshot below the new start was loaded as
// its state.
func TestResetToDropsProducers(t *testing.T) {
	d := testDir(t, t.TempDir())
	defer d.Close()
	p := testPartition(t, d)
	mustProduce(t, p, 9, 0, 0, 2)
	if err := p.MaintainProducers(0); err != nil {
		t.Fatal(err)
	}
	if err := p.ResetTo(100); err != nil {
		t.Fatal(err)
	}
	if got := dumpProducers(p); got != "" {
		t.Fatalf("producers after ResetTo(100):\n%s", got)
	}
	if got := snapshotOffsets(t, p); len(got) != 0 {
		t.Fatalf("snapshots %v kept", got)
	}
}

// TestRebuiltHighWatermarkNotBelowStart: a follower rebuilt at Next whose
// new leader's high watermark is still below Next (the uploads were an
// older leader's) keeps its high watermark at its log start.
func TestRebuiltHighWatermarkNotBelowStart(t *testing.T) {
	d := tieredDir(t, t.TempDir())
	defer d.Close()
	f := testPartition(t, d)
	if err := f.RebuildFromRemote(RemoteState{Next: 5, Epochs: []log.EpochEntry{{Epoch: 0, StartOffset: 0}}}); err != nil {
		t.Fatal(err)
	}
	f.followHW(2)
	if hw, start := f.HighWatermark(), f.Log.LogStartOffset(); hw != start {
		t.Fatalf("high watermark %d, below the log start %d", hw, start)
	}
}
