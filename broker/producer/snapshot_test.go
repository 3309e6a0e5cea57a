package producer

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// testState has producers that exercise every field: several batches, a
// batch wrapping the sequence ring, an epoch above 0.
func testState(t testing.TB) *State {
	s := NewState()
	s.Update(testBatch(t, 1, 0, 0, 3, 0, 1000), 5000)
	s.Update(testBatch(t, 1, 0, 3, 2, 3, 1100), 5100)
	s.Update(testBatch(t, 900, 7, math.MaxInt32-1, 4, 5, 1200), 5200)
	s.Update(testBatch(t, math.MaxInt64, math.MaxInt16, 0, 1, 9, 1300), 5300)
	return s
}

// TestSnapshotLayout checks EncodeSnapshot byte by byte against the diagram
// in snapshot.go.
func TestSnapshotLayout(t *testing.T) {
	s := NewState()
	s.Update(testBatch(t, 900, 7, math.MaxInt32-1, 4, 5, 1200), 5200) // seq 2147483646..1, offsets 5..8
	s.Update(testBatch(t, 3, 1, 10, 2, 9, 1300), 5300)                // seq 10..11, offsets 9..10

	be := binary.BigEndian
	var want []byte
	want = be.AppendUint16(want, 1)
	want = be.AppendUint32(want, 0) // CRC, below
	want = be.AppendUint32(want, 2)
	for _, e := range []struct {
		pid        int64
		epoch      int16
		lastSeq    int32
		lastOffset int64
		delta      int32
		ts         int64
	}{{3, 1, 11, 10, 1, 5300}, {900, 7, 1, 8, 3, 5200}} { // sorted by producer id
		want = be.AppendUint64(want, uint64(e.pid))
		want = be.AppendUint16(want, uint16(e.epoch))
		want = be.AppendUint32(want, uint32(e.lastSeq))
		want = be.AppendUint64(want, uint64(e.lastOffset))
		want = be.AppendUint32(want, uint32(e.delta))
		want = be.AppendUint64(want, uint64(e.ts))
		want = be.AppendUint32(want, 0xffffffff)
		want = be.AppendUint64(want, 0xffffffffffffffff)
	}
	be.PutUint32(want[2:], crc32.Checksum(want[6:], crc32.MakeTable(crc32.Castagnoli)))

	if got := EncodeSnapshot(s); !bytes.Equal(got, want) {
		t.Fatalf("EncodeSnapshot\n got %x\nwant %x", got, want)
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	s := testState(t)
	got, err := DecodeSnapshot(EncodeSnapshot(s))
	if err != nil {
		t.Fatal(err)
	}
	// What survives is each producer's epoch, expiry reference and last batch.
	want := NewState()
	for pid, e := range s.Producers() {
		l := e.Batches[len(e.Batches)-1]
		l.Timestamp = e.LastTimestamp
		want.producers[pid] = &Entry{ProducerID: pid, Epoch: e.Epoch, LastTimestamp: e.LastTimestamp, Batches: []BatchMeta{l}}
	}
	if a, b := dumpState(got), dumpState(want); a != b {
		t.Fatalf("round trip:\n%s\nwant:\n%s", a, b)
	}
	for pid, e := range want.Producers() {
		if g := got.Producers()[pid]; !slices.Equal(g.Batches, e.Batches) {
			t.Errorf("producer %d: batches %+v, want %+v", pid, g.Batches, e.Batches)
		}
	}
	if empty, err := DecodeSnapshot(EncodeSnapshot(NewState())); err != nil || empty.Len() != 0 {
		t.Fatalf("empty state: %v, %d producers", err, empty.Len())
	}
}

// TestDecodeSnapshotRejects: anything but a whole version-1 file with a good
// CRC and sane entries is ErrCorruptSnapshot.
func TestDecodeSnapshotRejects(t *testing.T) {
	good := EncodeSnapshot(testState(t))
	be := binary.BigEndian
	resum := func(b []byte) []byte {
		be.PutUint32(b[2:], crc32.Checksum(b[6:], castagnoli))
		return b
	}
	cases := map[string][]byte{
		"empty":             nil,
		"short header":      good[:9],
		"torn entry":        good[:len(good)-1],
		"torn, resummed":    resum(slices.Clone(good[:len(good)-1])),
		"trailing bytes":    resum(append(slices.Clone(good), 0)),
		"negative count":    resum(func() []byte { b := slices.Clone(good); be.PutUint32(b[6:], 0xffffffff); return b }()),
		"count too large":   resum(func() []byte { b := slices.Clone(good); be.PutUint32(b[6:], 1<<30); return b }()),
		"version 0":         func() []byte { b := slices.Clone(good); be.PutUint16(b, 0); return b }(),
		"version 2":         func() []byte { b := slices.Clone(good); be.PutUint16(b, 2); return b }(),
		"negative pid":      resum(func() []byte { b := slices.Clone(good); b[10] |= 0x80; return b }()),
		"negative delta":    resum(func() []byte { b := slices.Clone(good); be.PutUint32(b[10+22:], 0xffffffff); return b }()),
		"negative seq":      resum(func() []byte { b := slices.Clone(good); be.PutUint32(b[10+10:], 0xffffffff); return b }()),
		"starts below 0":    resum(func() []byte { b := slices.Clone(good); be.PutUint64(b[10+14:], 0); return b }()),
		"crc field flipped": func() []byte { b := slices.Clone(good); b[3] ^= 1; return b }(),
	}
	for i := 6; i < len(good); i++ {
		b := slices.Clone(good)
		b[i] ^= 0x10
		cases[fmt.Sprintf("byte %d flipped", i)] = b
	}
	for name, data := range cases {
		if _, err := DecodeSnapshot(data); !errors.Is(err, ErrCorruptSnapshot) {
			t.Errorf("%s: err = %v, want ErrCorruptSnapshot", name, err)
		}
	}
}

func FuzzDecodeSnapshot(f *testing.F) {
	good := EncodeSnapshot(testState(f))
	f.Add(good)
	f.Add(good[:10])
	f.Add(good[:len(good)-1])
	f.Add(EncodeSnapshot(NewState()))
	maximal := slices.Clone(good[:10])
	binary.BigEndian.PutUint32(maximal[6:], math.MaxInt32)
	f.Add(maximal)
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := DecodeSnapshot(data)
		if err != nil {
			if !errors.Is(err, ErrCorruptSnapshot) {
				t.Fatalf("error %v does not wrap ErrCorruptSnapshot", err)
			}
			return
		}
		// What decodes re-encodes to a file that decodes to the same state.
		again, err := DecodeSnapshot(EncodeSnapshot(s))
		if err != nil {
			t.Fatalf("re-encoded snapshot: %v", err)
		}
		if a, b := dumpState(again), dumpState(s); a != b {
			t.Fatalf("re-encoded state differs:\n%s\nwant\n%s", a, b)
		}
	})
}

func writeTestSnapshots(t *testing.T, dir string, offsets ...int64) *Snapshots {
	t.Helper()
	snaps, err := OpenSnapshots(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range offsets {
		s := NewState()
		s.Update(testBatch(t, off, 0, 0, 1, off-1, 1), off) // a producer named after the offset
		if err := snaps.Write(off, EncodeSnapshot(s)); err != nil {
			t.Fatal(err)
		}
	}
	return snaps
}

func snapshotFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestSnapshotsWriteAndOpen(t *testing.T) {
	dir := t.TempDir()
	writeTestSnapshots(t, dir, 20, 10)
	// A write a crash interrupted, and files that are not snapshots.
	for _, name := range []string{"00000000000000000030.snapshot.tmp", "00000000000000000000.log", "1.snapshot", "leader-epoch-checkpoint"} {
		os.WriteFile(filepath.Join(dir, name), []byte("x"), 0o644)
	}
	snaps, err := OpenSnapshots(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := snaps.Offsets(); !slices.Equal(got, []int64{10, 20}) {
		t.Fatalf("offsets %v", got)
	}
	want := []string{"00000000000000000000.log", "00000000000000000010.snapshot", "00000000000000000020.snapshot", "1.snapshot", "leader-epoch-checkpoint"}
	if got := snapshotFiles(t, dir); !slices.Equal(got, want) {
		t.Fatalf("files %v, want %v", got, want)
	}
	// Rewriting a snapshot replaces it.
	if err := snaps.Write(20, EncodeSnapshot(NewState())); err != nil {
		t.Fatal(err)
	}
	if st, err := ReadSnapshot(filepath.Join(dir, SnapshotFileName(20))); err != nil || st.Len() != 0 {
		t.Fatalf("rewritten snapshot: %v, %d producers", err, st.Len())
	}
	if got := snaps.Offsets(); !slices.Equal(got, []int64{10, 20}) {
		t.Fatalf("offsets after rewrite %v", got)
	}
}

func TestSnapshotsLoad(t *testing.T) {
	t.Run("newest at or below the log end; those past it are deleted", func(t *testing.T) {
		dir := t.TempDir()
		snaps := writeTestSnapshots(t, dir, 10, 20, 30)
		st, from, err := snaps.Load(0, 25)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := st.Producers()[20]; from != 20 || !ok {
			t.Fatalf("loaded %s from %d", dumpState(st), from)
		}
		if got := snaps.Offsets(); !slices.Equal(got, []int64{10, 20}) {
			t.Fatalf("offsets %v", got)
		}
		if _, err := os.Stat(filepath.Join(dir, SnapshotFileName(30))); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("snapshot past the log end still there: %v", err)
		}
	})
	t.Run("a corrupt snapshot falls back to an older one and is deleted", func(t *testing.T) {
		dir := t.TempDir()
		snaps := writeTestSnapshots(t, dir, 10, 20)
		path := filepath.Join(dir, SnapshotFileName(20))
		data, _ := os.ReadFile(path)
		data[len(data)-1] ^= 1
		os.WriteFile(path, data, 0o644)
		st, from, err := snaps.Load(0, 20)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := st.Producers()[10]; from != 10 || !ok {
			t.Fatalf("loaded %s from %d", dumpState(st), from)
		}
		if got := snaps.Offsets(); !slices.Equal(got, []int64{10}) {
			t.Fatalf("offsets %v", got)
		}
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("corrupt snapshot still there: %v", err)
		}
	})
	t.Run("without a usable snapshot, empty from the log start", func(t *testing.T) {
		dir := t.TempDir()
		snaps := writeTestSnapshots(t, dir, 10)
		os.WriteFile(filepath.Join(dir, SnapshotFileName(10)), nil, 0o644)
		st, from, err := snaps.Load(4, 50)
		if err != nil || from != 4 || st.Len() != 0 {
			t.Fatalf("loaded %d producers from %d: %v", st.Len(), from, err)
		}
		if got := snaps.Offsets(); len(got) != 0 {
			t.Fatalf("offsets %v", got)
		}
	})
	t.Run("a snapshot below the log start is still used", func(t *testing.T) {
		snaps := writeTestSnapshots(t, t.TempDir(), 10)
		if _, from, err := snaps.Load(40, 50); err != nil || from != 10 {
			t.Fatalf("from %d: %v", from, err)
		}
	})
}

func TestSnapshotsRetain(t *testing.T) {
	for _, c := range []struct {
		have     []int64
		logStart int64
		keep     int
		want     []int64
	}{
		{[]int64{10, 20, 30, 40}, 0, 3, []int64{20, 30, 40}},
		{[]int64{10, 20, 30, 40}, 25, 3, []int64{30, 40}},
		{[]int64{10, 20, 30, 40}, 30, 3, []int64{30, 40}},
		{[]int64{10, 20}, 100, 3, []int64{20}}, // the newest is never deleted
		{[]int64{10, 20}, 0, 0, []int64{20}},
		{nil, 100, 3, nil},
	} {
		dir := t.TempDir()
		snaps := writeTestSnapshots(t, dir, c.have...)
		if err := snaps.Retain(c.logStart, c.keep); err != nil {
			t.Fatal(err)
		}
		if got := snaps.Offsets(); !slices.Equal(got, c.want) {
			t.Errorf("Retain(%d, %d) of %v kept %v, want %v", c.logStart, c.keep, c.have, got, c.want)
		}
		var files []string
		for _, off := range c.want {
			files = append(files, SnapshotFileName(off))
		}
		if got := snapshotFiles(t, dir); !slices.Equal(got, files) {
			t.Errorf("files %v, want %v", got, files)
		}
	}
}

func TestSnapshotsDeleteAbove(t *testing.T) {
	dir := t.TempDir()
	snaps := writeTestSnapshots(t, dir, 10, 20, 30)
	if err := snaps.DeleteAbove(20); err != nil {
		t.Fatal(err)
	}
	if got := snaps.Offsets(); !slices.Equal(got, []int64{10, 20}) {
		t.Fatalf("offsets %v", got)
	}
}
