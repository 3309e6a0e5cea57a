package dump

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/record"
)

// The tests write segment files by hand, encoding batches with kmsg rather
// than with broker/record, so that the reader is checked against an
// independent writer.

type testRecord struct {
	key, value []byte
	headers    []kmsg.Header
}

type testBatch struct {
	base    int64
	ts      int64 // first timestamp; record i has ts+i
	records []testRecord
	attrs   int16 // codec bits come from codec
	codec   record.Codec
	maxTs   int64 // 0: ts + last record's delta
	pid     int64
	seq     int32
}

func simpleBatch(base, ts int64, n int) testBatch {
	b := testBatch{base: base, ts: ts, pid: -1, seq: -1}
	for i := range n {
		o := base + int64(i)
		b.records = append(b.records, testRecord{
			key:   fmt.Appendf(nil, "key-%d", o),
			value: fmt.Appendf(nil, "value-%d", o),
		})
	}
	return b
}

func (tb testBatch) encode(t testing.TB) []byte {
	t.Helper()
	var raw []byte
	for i, r := range tb.records {
		kr := kmsg.Record{
			TimestampDelta64: int64(i),
			OffsetDelta:      int32(i),
			Key:              r.key,
			Value:            r.value,
			Headers:          r.headers,
		}
		kr.Length = int32(len(kr.AppendTo(nil)) - 1) // the body after a 1-byte varint 0
		raw = kr.AppendTo(raw)
	}
	n := len(tb.records)
	if tb.codec != record.CodecNone {
		var err error
		if raw, err = record.Compress(tb.codec, nil, raw); err != nil {
			t.Fatal(err)
		}
	}
	maxTs := tb.maxTs
	if maxTs == 0 {
		maxTs = tb.ts + int64(n-1)
	}
	rb := kmsg.RecordBatch{
		FirstOffset:     tb.base,
		Length:          int32(record.HeaderSize - record.LogOverhead + len(raw)),
		Magic:           record.Magic,
		Attributes:      tb.attrs | int16(tb.codec),
		LastOffsetDelta: int32(n - 1),
		FirstTimestamp:  tb.ts,
		MaxTimestamp:    maxTs,
		ProducerID:      tb.pid,
		ProducerEpoch:   -1,
		FirstSequence:   tb.seq,
		NumRecords:      int32(n),
		Records:         raw,
	}
	if tb.pid >= 0 {
		rb.ProducerEpoch = 0
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[17:], record.Batch(b).ComputeCRC())
	if err := record.Validate(b, record.FromReplica, record.Limits{}); err != nil {
		t.Fatalf("test batch does not validate: %v", err)
	}
	return b
}

func segName(dir string, base int64, suffix string) string {
	return filepath.Join(dir, fmt.Sprintf("%020d%s", base, suffix))
}

func indexBytes(entries ...[2]int32) []byte {
	var b []byte
	for _, e := range entries {
		b = binary.BigEndian.AppendUint32(b, uint32(e[0]))
		b = binary.BigEndian.AppendUint32(b, uint32(e[1]))
	}
	return b
}

type tsEntry struct {
	ts  int64
	rel int32
}

func timeIndexBytes(entries ...tsEntry) []byte {
	var b []byte
	for _, e := range entries {
		b = binary.BigEndian.AppendUint64(b, uint64(e.ts))
		b = binary.BigEndian.AppendUint32(b, uint32(e.rel))
	}
	return b
}

func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// segment is a consistent segment at base 100: three batches, offsets
// 100-109, 110-114, 115-117; the third has a smaller max timestamp, so the
// time index has no entry for it.
type segment struct {
	dir                  string
	log, index, timeidx  string
	positions            []int32
	logBytes             []byte
	indexData, timeIndex []byte
}

func writeSegment(t testing.TB) *segment {
	t.Helper()
	const base = 100
	s := &segment{dir: t.TempDir()}
	for _, tb := range []testBatch{
		simpleBatch(100, 1000, 10),
		simpleBatch(110, 2000, 5),
		simpleBatch(115, 1500, 3),
	} {
		s.positions = append(s.positions, int32(len(s.logBytes)))
		s.logBytes = append(s.logBytes, tb.encode(t)...)
	}
	s.indexData = indexBytes([2]int32{9, s.positions[0]}, [2]int32{14, s.positions[1]}, [2]int32{17, s.positions[2]})
	s.timeIndex = timeIndexBytes(tsEntry{1009, 9}, tsEntry{2004, 14})
	s.log = segName(s.dir, base, LogSuffix)
	s.index = segName(s.dir, base, IndexSuffix)
	s.timeidx = segName(s.dir, base, TimeIndexSuffix)
	writeFile(t, s.log, s.logBytes)
	writeFile(t, s.index, s.indexData)
	writeFile(t, s.timeidx, s.timeIndex)
	return s
}

func run(t testing.TB, opts Options, paths ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errw bytes.Buffer
	err = Run(&out, &errw, paths, opts)
	return out.String(), errw.String(), err
}

func TestDumpLog(t *testing.T) {
	s := writeSegment(t)
	out, _, err := run(t, Options{}, s.log)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"Dumping " + s.log + "\n",
		"Log starting offset: 100\n",
		"baseOffset: 100 lastOffset: 109 count: 10 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: 0 CreateTime: 1009 size: ",
		fmt.Sprintf("baseOffset: 110 lastOffset: 114 count: 5 baseSequence: -1 lastSequence: -1 producerId: -1 producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false deleteHorizonMs: OptionalLong.empty position: %d CreateTime: 2004 size: ", s.positions[1]),
		"magic: 2 compresscodec: none crc: ",
		"isvalid: true\n",
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if n := strings.Count(out, "baseOffset: "); n != 3 {
		t.Errorf("%d batches printed, want 3:\n%s", n, out)
	}
	if strings.Contains(out, "| offset") {
		t.Errorf("records printed without --deep:\n%s", out)
	}
}

func TestDumpIndexes(t *testing.T) {
	s := writeSegment(t)
	out, _, err := run(t, Options{}, s.index, s.timeidx)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`Dumping %s
offset: 109 position: 0
offset: 114 position: %d
offset: 117 position: %d
Dumping %s
timestamp: 1009 offset: 109
timestamp: 2004 offset: 114
`, s.index, s.positions[1], s.positions[2], s.timeidx)
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
}

func TestVerifyConsistentSegment(t *testing.T) {
	s := writeSegment(t)
	out, errOut, err := run(t, Options{Verify: true}, s.dir)
	if err != nil {
		t.Fatalf("verify failed on a consistent segment: %v\n%s", err, errOut)
	}
	// A directory is dumped in segment order: .log, .index, .timeindex.
	i, j, k := strings.Index(out, "Dumping "+s.log), strings.Index(out, "Dumping "+s.index), strings.Index(out, "Dumping "+s.timeidx)
	if i < 0 || j < i || k < j {
		t.Errorf("files not dumped in order log, index, timeindex:\n%s", out)
	}
	if !strings.Contains(errOut, "Verified 3 files: no problems found.") {
		t.Errorf("no verify summary: %q", errOut)
	}
}

func TestVerifyCorruptIndex(t *testing.T) {
	s := writeSegment(t)
	writeFile(t, s.index, indexBytes(
		[2]int32{9, s.positions[0]},
		[2]int32{13, s.positions[1]},     // batch 110-114: last offset is 114, not 113
		[2]int32{17, s.positions[2] + 5}, // inside the third batch
		[2]int32{0, 0},                   // preallocated tail
	))
	_, errOut, err := run(t, Options{Verify: true}, s.index)
	if !errors.Is(err, ErrVerify) {
		t.Fatalf("err = %v, want ErrVerify", err)
	}
	for _, w := range []string{
		fmt.Sprintf("%s: entry 1: offset 113 position %d: expected a batch with last offset 113 at position %d, found last offset 114", s.index, s.positions[1], s.positions[1]),
		fmt.Sprintf("%s: entry 2: offset 117 position %d: expected a batch boundary", s.index, s.positions[2]+5),
		fmt.Sprintf("%s: entry 3: all zeros", s.index),
	} {
		if !strings.Contains(errOut, w) {
			t.Errorf("problems lack %q:\n%s", w, errOut)
		}
	}
	if !strings.Contains(err.Error(), "3 problems in 1 files") {
		t.Errorf("err = %v", err)
	}
}

func TestVerifyIndexOrder(t *testing.T) {
	s := writeSegment(t)
	writeFile(t, s.index, append(indexBytes([2]int32{14, s.positions[1]}, [2]int32{9, s.positions[0]}), 1, 2, 3))
	_, errOut, err := run(t, Options{Verify: true}, s.index)
	if !errors.Is(err, ErrVerify) {
		t.Fatalf("err = %v, want ErrVerify", err)
	}
	for _, w := range []string{
		"3 trailing bytes are not a whole 8-byte entry",
		"entry 1: offset 109 does not increase over entry 0's offset 114",
		"entry 1: position 0 does not increase over entry 0's position",
	} {
		if !strings.Contains(errOut, w) {
			t.Errorf("problems lack %q:\n%s", w, errOut)
		}
	}
}

func TestVerifyCorruptTimeIndex(t *testing.T) {
	s := writeSegment(t)
	writeFile(t, s.timeidx, timeIndexBytes(
		tsEntry{1009, 9},
		tsEntry{2003, 14}, // max timestamp of 110-114 is 2004
		tsEntry{2003, 16}, // no batch ends at 116; not increasing
		tsEntry{2500, 17}, // batch 115-117 has max 1502
	))
	_, errOut, err := run(t, Options{Verify: true}, s.timeidx)
	if !errors.Is(err, ErrVerify) {
		t.Fatalf("err = %v, want ErrVerify", err)
	}
	for _, w := range []string{
		s.timeidx + ": entry 1: timestamp 2003 offset 114: expected max timestamp 2003 in the batch with last offset 114, found 2004",
		s.timeidx + ": entry 2: timestamp 2003 does not increase over entry 1's timestamp 2003",
		s.timeidx + ": entry 2: timestamp 2003 offset 116: expected a batch with last offset 116, found none",
		s.timeidx + ": entry 3: timestamp 2500 offset 117: expected max timestamp 2500 in the batch with last offset 117, found 1502",
	} {
		if !strings.Contains(errOut, w) {
			t.Errorf("problems lack %q:\n%s", w, errOut)
		}
	}
}

func TestVerifyTimeIndexNotMaxSoFar(t *testing.T) {
	s := writeSegment(t)
	// 1502 is the third batch's max, but 2004 came before it.
	writeFile(t, s.timeidx, timeIndexBytes(tsEntry{1502, 17}))
	_, errOut, err := run(t, Options{Verify: true}, s.timeidx)
	if !errors.Is(err, ErrVerify) || !strings.Contains(errOut, "expected the largest timestamp so far, an earlier batch has 2004") {
		t.Fatalf("err = %v\n%s", err, errOut)
	}
}

func TestCorruptBatch(t *testing.T) {
	s := writeSegment(t)
	data := bytes.Clone(s.logBytes)
	data[s.positions[1]+record.HeaderSize+3] ^= 0xff // a record byte of the second batch
	writeFile(t, s.log, append(data, 0, 0, 0, 0, 0)) // and a torn tail
	out, _, err := run(t, Options{}, s.log)
	if err != nil {
		t.Fatalf("without --verify a corrupt log is printed, not an error: %v", err)
	}
	if got := strings.Count(out, "isvalid: false"); got != 1 {
		t.Errorf("%d invalid batches printed, want 1:\n%s", got, out)
	}
	if !strings.Contains(out, "Found 5 invalid bytes at the end of 00000000000000000100.log") {
		t.Errorf("torn tail not reported:\n%s", out)
	}

	_, errOut, err := run(t, Options{Verify: true}, s.log)
	if !errors.Is(err, ErrVerify) {
		t.Fatalf("err = %v, want ErrVerify", err)
	}
	for _, w := range []string{
		fmt.Sprintf("%s: batch at position %d (offsets 110-114): broker/record: crc", s.log, s.positions[1]),
		fmt.Sprintf("%s: 5 bytes at position %d are not a whole batch", s.log, len(data)),
	} {
		if !strings.Contains(errOut, w) {
			t.Errorf("problems lack %q:\n%s", w, errOut)
		}
	}
}

func TestVerifyOffsetsIncrease(t *testing.T) {
	dir := t.TempDir()
	log := segName(dir, 100, LogSuffix)
	var data []byte
	for _, b := range []testBatch{simpleBatch(90, 0, 2), simpleBatch(100, 0, 5), simpleBatch(103, 0, 2)} {
		data = append(data, b.encode(t)...)
	}
	writeFile(t, log, data)
	_, errOut, err := run(t, Options{Verify: true}, log)
	if !errors.Is(err, ErrVerify) {
		t.Fatalf("err = %v, want ErrVerify", err)
	}
	for _, w := range []string{
		"(offsets 90-91): base offset is below the segment's base offset 100",
		"(offsets 103-104): base offset does not follow the previous batch's last offset 104",
	} {
		if !strings.Contains(errOut, w) {
			t.Errorf("problems lack %q:\n%s", w, errOut)
		}
	}
}

func TestMissingFile(t *testing.T) {
	s := writeSegment(t)
	missing := segName(s.dir, 999, LogSuffix)
	out, _, err := run(t, Options{}, missing, s.index)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("err = %v, want fs.ErrNotExist", err)
	}
	if !strings.Contains(err.Error(), missing) {
		t.Errorf("error %q does not name %s", err, missing)
	}
	if !strings.Contains(out, "Dumping "+s.index) {
		t.Errorf("the file after the missing one was not dumped:\n%s", out)
	}
}

func TestVerifyIndexWithoutLog(t *testing.T) {
	s := writeSegment(t)
	os.Remove(s.log)
	if _, _, err := run(t, Options{}, s.index); err != nil {
		t.Fatalf("an index is dumped without its log: %v", err)
	}
	_, _, err := run(t, Options{Verify: true}, s.index)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), s.log) {
		t.Fatalf("err = %v, want one naming the missing %s", err, s.log)
	}
}

func TestBadArguments(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "leader-epoch-checkpoint")
	badName := filepath.Join(dir, "segment.log")
	writeFile(t, other, []byte("0\n0\n"))
	writeFile(t, badName, nil)
	for _, path := range []string{other, badName, dir} {
		if _, _, err := run(t, Options{}, path); err == nil {
			t.Errorf("%s: no error", path)
		}
	}
}

func TestAbsolutePath(t *testing.T) {
	s := writeSegment(t)
	t.Chdir(s.dir)
	out, _, err := run(t, Options{}, filepath.Base(s.index))
	if err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(out, "\n"); first != "Dumping "+s.index {
		t.Errorf("first line %q, want the absolute path %s", first, s.index)
	}
}

func TestEmptyFiles(t *testing.T) {
	dir := t.TempDir()
	for _, suffix := range []string{LogSuffix, IndexSuffix, TimeIndexSuffix} {
		writeFile(t, segName(dir, 0, suffix), nil)
	}
	out, errOut, err := run(t, Options{Verify: true}, dir)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if strings.Count(out, " is empty.") != 1 { // .index only, as Kafka
		t.Errorf("empty indexes not reported:\n%s", out)
	}
}

func TestJSON(t *testing.T) {
	s := writeSegment(t)
	writeFile(t, s.index, indexBytes([2]int32{9, 0}, [2]int32{13, s.positions[1]}))
	out, _, err := run(t, Options{JSON: true, Verify: true}, s.dir)
	if !errors.Is(err, ErrVerify) {
		t.Fatalf("err = %v, want ErrVerify", err)
	}
	types := map[string]int{}
	for line := range strings.Lines(out) {
		var v struct {
			Type, File string
			Entry      *int
			Message    string
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if v.File == "" {
			t.Errorf("line without file: %s", line)
		}
		if v.Type == "problem" && (v.File != s.index || v.Entry == nil || *v.Entry != 1) {
			t.Errorf("problem names the wrong place: %s", line)
		}
		types[v.Type]++
	}
	want := map[string]int{"file": 3, "batch": 3, "index": 2, "timeindex": 2, "problem": 1}
	if fmt.Sprint(types) != fmt.Sprint(want) {
		t.Errorf("line types %v, want %v", types, want)
	}
}

func TestDeep(t *testing.T) {
	dir := t.TempDir()
	plain := simpleBatch(0, 1000, 2)
	plain.records[1].key = nil
	plain.records[1].headers = []kmsg.Header{{Key: "trace", Value: []byte("t1")}, {Key: "bin", Value: []byte{0, '\n'}}}
	plain.pid, plain.seq = 7, 1<<31-1 // sequences wrap
	zstd := simpleBatch(2, 2000, 3)
	zstd.codec = record.CodecZstd
	zstd.attrs = 0x40 // base timestamp is a delete horizon
	appendTime := simpleBatch(5, 3000, 2)
	appendTime.attrs, appendTime.maxTs = 0x08, 9999
	marker := testBatch{base: 7, ts: 4000, attrs: 0x30, pid: 7, seq: -1, // transactional control batch
		records: []testRecord{{key: []byte{0, 0, 0, 1}, value: []byte{0, 0, 0, 0, 0, 5}}}}
	var data []byte
	for _, b := range []testBatch{plain, zstd, appendTime, marker} {
		data = append(data, b.encode(t)...)
	}
	log := segName(dir, 0, LogSuffix)
	writeFile(t, log, data)

	out, errOut, err := run(t, Options{Deep: true, Verify: true}, log)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	for _, w := range []string{
		"baseOffset: 0 lastOffset: 1 count: 2 baseSequence: 2147483647 lastSequence: 0 producerId: 7 producerEpoch: 0 ",
		"\n| offset: 0 CreateTime: 1000 keySize: 5 valueSize: 7 sequence: 2147483647 headerKeys: []\n",
		"\n| offset: 1 CreateTime: 1001 keySize: -1 valueSize: 7 sequence: 0 headerKeys: [trace,bin]\n",
		"isControl: false deleteHorizonMs: OptionalLong[2000] position: ",
		"compresscodec: zstd",
		"\n| offset: 4 CreateTime: 2002 keySize: 5 valueSize: 7 sequence: -1 headerKeys: []\n",
		"LogAppendTime: 9999 size:",
		"\n| offset: 6 LogAppendTime: 9999 keySize: 5 ",
		"isTransactional: true isControl: true",
		"\n| offset: 7 CreateTime: 4000 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] endTxnMarker: COMMIT coordinatorEpoch: 5\n",
	} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "payload:") {
		t.Errorf("data printed without --print-data:\n%s", out)
	}

	out, _, err = run(t, Options{PrintData: true}, log)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{
		"headerKeys: [] key: key-0 payload: value-0\n",
		"headerKeys: [trace,bin] payload: value-1\n", // null key: no key
		"endTxnMarker: COMMIT coordinatorEpoch: 5\n", // no data for markers
	} {
		if !strings.Contains(out, w) {
			t.Errorf("--print-data output lacks %q:\n%s", w, out)
		}
	}

	out, _, err = run(t, Options{PrintData: true, JSON: true}, log)
	if err != nil {
		t.Fatal(err)
	}
	var second RecordInfo
	for line := range strings.Lines(out) {
		if strings.Contains(line, `"type":"record"`) && strings.Contains(line, `"offset":1,`) {
			if err := json.Unmarshal([]byte(line), &second); err != nil {
				t.Fatal(err)
			}
		}
	}
	if second.Key != nil || second.Payload == nil || *second.Payload != "value-1" || len(second.Headers) != 2 ||
		*second.Headers[0].Value != "t1" || *second.Headers[1].Value != `"\x00\n"` {
		t.Errorf("record 1 in JSON: %+v", second)
	}
}

func TestDeepUndecodable(t *testing.T) {
	dir := t.TempDir()
	tb := simpleBatch(0, 0, 3)
	b := tb.encode(t)
	// Claim 4 records: the framing no longer matches; fix the CRC so
	// only the records are wrong.
	binary.BigEndian.PutUint32(b[57:], 4)
	binary.BigEndian.PutUint32(b[17:], record.Batch(b).ComputeCRC())
	log := segName(dir, 0, LogSuffix)
	writeFile(t, log, b)
	out, _, err := run(t, Options{Deep: true}, log)
	if err != nil || !strings.Contains(out, "batch at position 0 (offsets 0-2): cannot decode records") {
		t.Errorf("err = %v, output:\n%s", err, out)
	}
	_, errOut, err := run(t, Options{Deep: true, Verify: true}, log)
	if !errors.Is(err, ErrVerify) || !strings.Contains(errOut, log+": batch at position 0 (offsets 0-2): cannot decode records") {
		t.Errorf("err = %v, problems:\n%s", err, errOut)
	}
}

func TestSequenceAt(t *testing.T) {
	for _, c := range []struct{ base, delta, want int32 }{
		{-1, 5, -1},
		{0, 9, 9},
		{1<<31 - 1, 0, 1<<31 - 1},
		{1<<31 - 1, 1, 0},
		{1<<31 - 3, 4, 1},
	} {
		if got := sequenceAt(c.base, c.delta); got != c.want {
			t.Errorf("sequenceAt(%d, %d) = %d, want %d", c.base, c.delta, got, c.want)
		}
	}
}

// FuzzRun feeds arbitrary bytes as a segment's three files: whatever they
// hold, dumping and verifying them must not panic or hang.
func FuzzRun(f *testing.F) {
	s := writeSegment(f)
	f.Add(s.logBytes, s.indexData, s.timeIndex)
	f.Add(s.logBytes[:len(s.logBytes)-1], s.indexData[:7], s.timeIndex[:11])
	f.Add([]byte{}, []byte{}, []byte{})
	huge := bytes.Clone(s.logBytes[:record.HeaderSize])
	binary.BigEndian.PutUint32(huge[8:], 1<<31-1) // maximal batch length
	f.Add(huge, indexBytes([2]int32{-1, -1}), timeIndexBytes(tsEntry{-1, -1}))
	f.Fuzz(func(t *testing.T, log, index, timeIndex []byte) {
		dir := t.TempDir()
		writeFile(t, segName(dir, 0, LogSuffix), log)
		writeFile(t, segName(dir, 0, IndexSuffix), index)
		writeFile(t, segName(dir, 0, TimeIndexSuffix), timeIndex)
		for _, opts := range []Options{{Verify: true, PrintData: true}, {JSON: true, Verify: true, Deep: true}} {
			var out, errw bytes.Buffer
			if err := Run(&out, &errw, []string{dir}, opts); err != nil && !errors.Is(err, ErrVerify) {
				t.Fatalf("%+v: %v", opts, err)
			}
		}
	})
}
