package remotelog

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"path"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/fsys"
)

// batch encodes a magic v2 batch at base: values are its records, or
// with control a marker (commit or abort).
func batch(t *testing.T, base, pid int64, txn, control, commit bool, codec kgo.CompressionCodec, values ...string) []byte {
	t.Helper()
	var recs []byte
	enc := func(r kmsg.Record) []byte {
		b := r.AppendTo(nil)
		r.Length = int32(len(b) - 1)
		return r.AppendTo(nil)
	}
	n := len(values)
	if control {
		key := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, 0), map[bool]uint16{true: 1}[commit])
		recs = enc(kmsg.Record{Key: key, Value: []byte{0, 0, 0, 0, 0, 0}})
		n = 1
	}
	for i, v := range values {
		recs = append(recs, enc(kmsg.Record{OffsetDelta: int32(i), TimestampDelta64: int64(i), Key: nil, Value: []byte(v),
			Headers: []kmsg.Header{{Key: "h", Value: []byte(v)}}})...)
	}
	var attrs int16
	if codec != (kgo.CompressionCodec{}) {
		comp, err := kgo.DefaultCompressor(codec)
		if err != nil {
			t.Fatal(err)
		}
		var typ kgo.CompressionCodecType
		recs, typ = comp.Compress(new(bytes.Buffer), recs)
		attrs |= int16(typ)
	}
	if txn {
		attrs |= 0x10 // transactional
	}
	if control {
		attrs |= 0x20 // control
	}
	kb := kmsg.RecordBatch{FirstOffset: base, Magic: 2, Attributes: attrs, LastOffsetDelta: int32(n - 1), FirstTimestamp: 1000 + base,
		MaxTimestamp: 1000 + base, ProducerID: pid, NumRecords: int32(n), Records: recs}
	b := kb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-logOverhead))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

func txnEntry(pid, first, last int64) []byte {
	be := binary.BigEndian
	b := be.AppendUint16(nil, 0)
	b = be.AppendUint64(b, uint64(pid))
	b = be.AppendUint64(b, uint64(first))
	b = be.AppendUint64(b, uint64(last))
	return be.AppendUint64(b, uint64(last+1))
}

// TestReadCommitted: plain records, a committed transaction, an aborted
// one (in the .txnindex) and one undecided at the remote end, read as a
// read_committed consumer would, over gzip and uncompressed batches.
func TestReadCommitted(t *testing.T) {
	dir := t.TempDir()
	fs, err := fsys.Open("file://"+dir, fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	p := &Partition{FS: fs, Dir: Dir("t", "id", 0)}
	gz := kgo.GzipCompression()
	none := kgo.CompressionCodec{}
	var seg0, seg1 []byte
	seg0 = append(seg0, batch(t, 0, -1, false, false, false, gz, "a", "b")...)
	seg0 = append(seg0, batch(t, 2, 7, true, false, false, none, "c", "d")...)
	seg0 = append(seg0, batch(t, 4, -1, false, false, false, none, "e")...)
	seg0 = append(seg0, batch(t, 5, 8, true, false, false, gz, "aborted")...)
	seg0 = append(seg0, batch(t, 6, 8, true, true, false, none)...) // abort marker
	seg1 = append(seg1, batch(t, 7, 7, true, true, true, none)...)  // commit marker
	seg1 = append(seg1, batch(t, 8, 9, true, false, false, none, "undecided")...)
	seg1 = append(seg1, batch(t, 9, -1, false, false, false, none, "after")...)
	write := func(name string, data []byte) {
		if err := fs.WriteFileAtomic(path.Join(p.Dir, name), data); err != nil {
			t.Fatal(err)
		}
	}
	man := &Manifest{Topic: "t", TopicID: "id", Segments: []SegmentMetadata{
		{ID: NewSegmentID(), BaseOffset: 0, EndOffset: 6, Size: int64(len(seg0)), Files: map[string]int64{SuffixLog: int64(len(seg0)), SuffixTxnIndex: 34}},
		{ID: NewSegmentID(), BaseOffset: 7, EndOffset: 9, Size: int64(len(seg1)), Files: map[string]int64{SuffixLog: int64(len(seg1))}},
	}}
	write(man.Segments[0].FileName(SuffixLog), seg0)
	write(man.Segments[0].FileName(SuffixTxnIndex), txnEntry(8, 5, 6))
	write(man.Segments[1].FileName(SuffixLog), seg1)
	if _, err := Commit(fs, p.Dir, nil, 0, func(*Manifest) (*Manifest, error) { return man, nil }); err != nil {
		t.Fatal(err)
	}
	if man, err = p.Manifest(); err != nil || man == nil || man.Sequence != 1 {
		t.Fatalf("manifest read back: %+v %v", man, err)
	}
	read := func(from, to int64) ([]string, int64) {
		var got []string
		next, err := p.ReadCommitted(context.Background(), man, from, to, func(rs []Record) error {
			for _, r := range rs {
				if r.Key != nil || len(r.Headers) != 1 || string(r.Headers[0].Value) != string(r.Value) || r.Timestamp != 1000+r.Offset {
					t.Errorf("record %d: %+v", r.Offset, r)
				}
				got = append(got, fmt.Sprintf("%d:%s", r.Offset, r.Value))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got, next
	}
	for _, c := range []struct {
		from, to int64
		want     []string
		next     int64
	}{
		// The undecided transaction at 8 and what follows it are left
		// to the broker.
		{0, 100, []string{"0:a", "1:b", "2:c", "3:d", "4:e"}, 8},
		{1, 4, []string{"1:b", "2:c", "3:d"}, 4},
		{3, 8, []string{"3:d", "4:e"}, 8},
		{5, 7, nil, 7},
		{10, 20, nil, 10}, // past the remote end
	} {
		got, next := read(c.from, c.to)
		if !reflect.DeepEqual(got, c.want) || next != c.next {
			t.Errorf("[%d, %d): %v, next %d; want %v, next %d", c.from, c.to, got, next, c.want, c.next)
		}
	}

	// Without the .txnindex, the abort marker decides alone.
	man.Segments[0].Files = map[string]int64{SuffixLog: int64(len(seg0))}
	if got, next := read(0, 100); !reflect.DeepEqual(got, []string{"0:a", "1:b", "2:c", "3:d", "4:e"}) || next != 8 {
		t.Errorf("without the index: %v, next %d", got, next)
	}

	// Below the remote log start.
	man.LogStartOffset = 3
	if _, err := p.ReadCommitted(context.Background(), man, 1, 5, func([]Record) error { return nil }); err == nil {
		t.Error("a read below the remote log start succeeded")
	}
}
