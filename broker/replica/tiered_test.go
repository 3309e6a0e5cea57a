package replica

import (
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
