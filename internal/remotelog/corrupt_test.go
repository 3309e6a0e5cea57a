package remotelog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/fsys"
)

// oneSegment writes seg as the remote segment at 0 whose manifest says it
// holds offsets 0..end in size bytes. Its files are named as before
// versioned manifests (by base offset alone), which readers still read.
func oneSegment(t *testing.T, seg []byte, end, size int64) (*Partition, *Manifest) {
	t.Helper()
	fs, err := fsys.Open("file://"+t.TempDir(), fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fs.Close() })
	p := &Partition{FS: fs, Dir: Dir("t", "id", 0)}
	if err := fs.WriteFileAtomic(path.Join(p.Dir, SegmentFileName(0, SuffixLog)), seg); err != nil {
		t.Fatal(err)
	}
	man := &Manifest{Version: ManifestVersion, Topic: "t", TopicID: "id", Segments: []SegmentMetadata{
		{BaseOffset: 0, EndOffset: end, Size: size, OffsetNamed: true, Files: map[string]int64{SuffixLog: size}}}}
	return p, man
}

func readValues(p *Partition, man *Manifest, from, to int64) ([]string, int64, error) {
	var got []string
	next, err := p.ReadCommitted(context.Background(), man, from, to, func(rs []Record) error {
		for _, r := range rs {
			got = append(got, fmt.Sprintf("%d:%s", r.Offset, r.Value))
		}
		return nil
	})
	return got, next, err
}

func fourBatches(t *testing.T) []byte {
	var seg []byte
	for i := range int64(4) {
		seg = append(seg, batch(t, i, -1, false, false, false, kgo.CompressionCodec{}, fmt.Sprint("v", i))...)
	}
	return seg
}

// TestReadCorruptSegments: what does not match the manifest, or its CRC,
// is ErrCorrupt; never a silent skip of offsets the unit then reports
// read (review 5, 6).
func TestReadCorruptSegments(t *testing.T) {
	t.Parallel()
	t.Run("short", func(t *testing.T) {
		seg := fourBatches(t)
		p, man := oneSegment(t, seg[:len(seg)/2], 3, int64(len(seg)))
		got, next, err := readValues(p, man, 0, 4)
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("a .log cut short: got %v, next %d, err %v; want ErrCorrupt", got, next, err)
		}
	})
	t.Run("short then next", func(t *testing.T) {
		seg := fourBatches(t)
		p, man := oneSegment(t, seg[:len(seg)/2], 3, int64(len(seg)))
		seg2 := batch(t, 4, -1, false, false, false, kgo.CompressionCodec{}, "v4")
		if err := p.FS.WriteFileAtomic(path.Join(p.Dir, SegmentFileName(4, SuffixLog)), seg2); err != nil {
			t.Fatal(err)
		}
		man.Segments = append(man.Segments, SegmentMetadata{BaseOffset: 4, EndOffset: 4, Size: int64(len(seg2)), OffsetNamed: true, Files: map[string]int64{SuffixLog: int64(len(seg2))}})
		got, next, err := readValues(p, man, 0, 5)
		if !errors.Is(err, ErrCorrupt) || next > 2 {
			t.Errorf("a .log cut short before another segment: got %v, next %d, err %v; want ErrCorrupt and next <= 2", got, next, err)
		}
	})
	t.Run("index past the end", func(t *testing.T) {
		seg := fourBatches(t)
		p, man := oneSegment(t, seg, 3, int64(len(seg)))
		idx := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 1), 1<<30)
		if err := p.FS.WriteFileAtomic(path.Join(p.Dir, SegmentFileName(0, SuffixIndex)), idx); err != nil {
			t.Fatal(err)
		}
		man.Segments[0].Files[SuffixIndex] = 8
		got, next, err := readValues(p, man, 2, 4)
		if err != nil || next != 4 || fmt.Sprint(got) != "[2:v2 3:v3]" {
			t.Errorf("an index entry past the end: got %v, next %d, err %v; want [2:v2 3:v3] read from the start", got, next, err)
		}
	})
	t.Run("index past the offset", func(t *testing.T) {
		seg := fourBatches(t)
		p, man := oneSegment(t, seg, 3, int64(len(seg)))
		// Offset 1 said to be at batch 3's position.
		idx := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, 1), uint32(3*len(seg)/4))
		if err := p.FS.WriteFileAtomic(path.Join(p.Dir, SegmentFileName(0, SuffixIndex)), idx); err != nil {
			t.Fatal(err)
		}
		man.Segments[0].Files[SuffixIndex] = 8
		got, next, err := readValues(p, man, 1, 4)
		if err != nil || next != 4 || fmt.Sprint(got) != "[1:v1 2:v2 3:v3]" {
			t.Errorf("an index entry past the offset: got %v, next %d, err %v; want [1:v1 2:v2 3:v3]", got, next, err)
		}
	})
	t.Run("hole", func(t *testing.T) {
		// Offsets 2-3 in no segment (metadata that lost one): read up
		// to the hole, then the broker is asked from 2.
		seg := fourBatches(t)
		half := int64(len(seg) / 2)
		p, man := oneSegment(t, seg[:half], 1, half)
		seg2 := batch(t, 4, -1, false, false, false, kgo.CompressionCodec{}, "v4")
		if err := p.FS.WriteFileAtomic(path.Join(p.Dir, SegmentFileName(4, SuffixLog)), seg2); err != nil {
			t.Fatal(err)
		}
		man.Segments = append(man.Segments, SegmentMetadata{BaseOffset: 4, EndOffset: 4, Size: int64(len(seg2)), OffsetNamed: true, Files: map[string]int64{SuffixLog: int64(len(seg2))}})
		if !man.Hole(2) || man.Hole(4) {
			t.Errorf("Hole(2) %v, Hole(4) %v", man.Hole(2), man.Hole(4))
		}
		got, next, err := readValues(p, man, 0, 5)
		if err != nil || next != 2 || fmt.Sprint(got) != "[0:v0 1:v1]" {
			t.Errorf("a hole: got %v, next %d, err %v; want [0:v0 1:v1] and the broker asked from 2", got, next, err)
		}
	})
	t.Run("crc", func(t *testing.T) {
		seg := batch(t, 0, -1, false, false, false, kgo.CompressionCodec{}, "hello")
		seg[len(seg)-2] ^= 1 // in the last record's header value
		p, man := oneSegment(t, seg, 0, int64(len(seg)))
		if got, _, err := readValues(p, man, 0, 1); !errors.Is(err, ErrCorrupt) {
			t.Errorf("a batch whose CRC does not match: got %v, err %v; want ErrCorrupt", got, err)
		}
	})
	t.Run("magic", func(t *testing.T) {
		seg := batch(t, 0, -1, false, false, false, kgo.CompressionCodec{}, "hello")
		seg[16] = 1 // magic, which the CRC does not cover
		p, man := oneSegment(t, seg, 0, int64(len(seg)))
		if got, _, err := readValues(p, man, 0, 1); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "magic 1") {
			t.Errorf("a batch of magic 1: got %v, err %v; want ErrCorrupt", got, err)
		}
	})
}

// TestHeldBytesCountHeaders: records with empty values and large headers,
// behind an undecided transaction, count against maxHeld.
func TestHeldBytesCountHeaders(t *testing.T) {
	t.Parallel()
	r := &committedReader{from: 0, to: 1, fn: func([]Record) error { return nil }, open: map[int64]bool{}, verdict: map[*Batch]bool{}}
	if err := r.batch(&Batch{BaseOffset: 0, LastOffset: 0, ProducerID: 9, Transactional: true, Records: []Record{{Offset: 0}}}); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 1<<10)
	for i := int64(1); i <= 1000; i++ {
		if err := r.batch(&Batch{BaseOffset: i, LastOffset: i, ProducerID: -1, Records: []Record{{Offset: i, Headers: []kmsg.Header{{Key: "h", Value: big}}}}}); err != nil {
			t.Fatal(err)
		}
	}
	if r.heldLen < 1000*int64(len(big)) {
		t.Errorf("1000 held batches with 1 KiB headers count %d bytes against maxHeld", r.heldLen)
	}
	// And a decoded batch counts its records' bytes, not only values.
	raw := batch(t, 0, -1, false, false, false, kgo.CompressionCodec{}, "")
	b, err := NewBatchReader(bytes.NewReader(raw)).Next()
	if err != nil {
		t.Fatal(err)
	}
	if b.Size() < 128 {
		t.Errorf("a decoded batch of one empty record has Size %d", b.Size())
	}
}

// TestIsAbortedIndexed: checking a batch against the aborted transactions
// is a lookup by producer, not a scan of all of them (review 9): 20,000
// aborts and 40,000 checks take milliseconds (a scan: 8*10^8 comparisons,
// tens of seconds under -race).
func TestIsAbortedIndexed(t *testing.T) {
	t.Parallel()
	fs, err := fsys.Open("file://"+t.TempDir(), fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	p := &Partition{FS: fs, Dir: Dir("t", "id", 0)}
	const n = 20000
	var idx []byte
	for i := range int64(n) {
		idx = append(idx, txnEntry(i%100, 10*i, 10*i+5)...)
	}
	if err := fs.WriteFileAtomic(path.Join(p.Dir, SegmentFileName(0, SuffixTxnIndex)), idx); err != nil {
		t.Fatal(err)
	}
	r := &committedReader{p: p, loaded: map[int64]bool{}}
	if err := r.loadTxnIndex(SegmentMetadata{BaseOffset: 0, OffsetNamed: true, Files: map[string]int64{SuffixTxnIndex: int64(len(idx))}}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range int64(n) {
		if !r.isAborted(i%100, 10*i+3) {
			t.Fatalf("producer %d at %d: not aborted", i%100, 10*i+3)
		}
		if r.isAborted(i%100, 10*i+7) || r.isAborted((i+1)%100, 10*i+3) {
			t.Fatalf("producer %d at %d: aborted", i%100, 10*i+7)
		}
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("60,000 checks against 20,000 aborts took %v", d)
	}
}
