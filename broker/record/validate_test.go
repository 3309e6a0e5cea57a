package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestValidateCorruption(t *testing.T) {
	for _, c := range allCodecs {
		b := mustBuild(t, sampleOptions(c), sampleRecords())
		for name, edit := range map[string]func(Batch){
			"crc":     func(b Batch) { b[offCRC] ^= 0x01 },
			"records": func(b Batch) { b[len(b)-1] ^= 0x80 },
			"header":  func(b Batch) { b[offMaxTimestamp] ^= 0x01 },
		} {
			bad := append(Batch(nil), b...)
			edit(bad)
			err := Validate(bad, FromReplica, Limits{})
			if !errors.Is(err, kerr.CorruptMessage) {
				t.Errorf("%s/%s: %v", c, name, err)
			}
		}
		// The base offset and leader epoch are outside the CRC: the
		// broker rewrites them in place.
		b.SetBaseOffset(99)
		b.SetPartitionLeaderEpoch(7)
		if err := Validate(b, FromClient, Limits{}); err != nil {
			t.Errorf("%s: after rewriting the offset: %v", c, err)
		}
	}
}

func TestValidateCodes(t *testing.T) {
	good := func() Batch { return mustBuild(t, sampleOptions(CodecNone), sampleRecords()) }
	control := sampleOptions(CodecNone)
	control.Control = true
	gap := sampleOptions(CodecNone)
	gap.LastOffsetDelta = 20

	cases := []struct {
		name   string
		b      Batch
		origin Origin
		lim    Limits
		code   *kerr.Error
	}{
		{"too large", good(), FromClient, Limits{MaxBytes: len(good()) - 1}, kerr.MessageTooLarge},
		{"control from client", mustBuild(t, control, sampleRecords()), FromClient, Limits{}, kerr.InvalidRecord},
		{"no records from client", mustBuild(t, sampleOptions(CodecNone), nil), FromClient, Limits{}, kerr.InvalidRecord},
		{"offset gap from client", mustBuild(t, gap, sampleRecords()), FromClient, Limits{}, kerr.InvalidRecord},
		{"codec 5", good().withCodec(5), FromClient, Limits{}, kerr.UnsupportedCompressionType},
		{"codec 7", good().withCodec(7), FromReplica, Limits{}, kerr.UnsupportedCompressionType},
		{"magic 1", reseal(func() Batch { b := good(); b[offMagic] = 1; return b }()), FromClient, Limits{}, kerr.UnsupportedForMessageFormat},
		{"magic 3", reseal(func() Batch { b := good(); b[offMagic] = 3; return b }()), FromClient, Limits{}, kerr.CorruptMessage},
		{"length field", good()[:len(good())-1], FromClient, Limits{}, kerr.CorruptMessage},
		{"short", good()[:HeaderSize-1], FromClient, Limits{}, kerr.CorruptMessage},
		{"record count", withRecords(good(), 5, good().Records()), FromReplica, Limits{}, kerr.CorruptMessage},
	}
	for _, tc := range cases {
		err := Validate(tc.b, tc.origin, tc.lim)
		wantCode(t, err, tc.code)
		if KafkaCode(err) != tc.code {
			t.Errorf("%s: KafkaCode %v", tc.name, KafkaCode(err))
		}
	}
	// A follower copies what the leader took, whatever its size, and
	// control batches and offset gaps come with it.
	for _, b := range []Batch{good(), mustBuild(t, control, sampleRecords()), mustBuild(t, gap, sampleRecords())} {
		if err := Validate(b, FromReplica, Limits{MaxBytes: 10}); err != nil {
			t.Errorf("from replica: %v", err)
		}
	}
	if KafkaCode(errors.New("other")) != kerr.UnknownServerError {
		t.Error("KafkaCode of a foreign error")
	}
}

// A producer's batch is checked record by record, whatever its codec, with
// the codes and per-record errors Kafka's LogValidator answers.
func TestValidateClientRecords(t *testing.T) {
	const now = 1_700_000_000_000
	bounded := Limits{NowMs: now, TimestampBeforeMaxMs: 3_600_000, TimestampAfterMaxMs: 60_000}
	keyed := func(n int, tsDelta func(int) int64) []kmsg.Record {
		recs := make([]kmsg.Record, n)
		for i := range recs {
			recs[i] = kmsg.Record{OffsetDelta: int32(i), Key: []byte{'k', byte(i)}, Value: []byte("v")}
			if tsDelta != nil {
				recs[i].TimestampDelta64 = tsDelta(i)
			}
		}
		return recs
	}
	at := func(c Codec, ts int64, recs []kmsg.Record) Batch {
		o := DefaultBuildOptions()
		o.Codec, o.BaseTimestamp = c, ts
		return mustBuild(t, o, recs)
	}
	// raw is an uncompressed batch of hand-written records.
	raw := func(count int32, recs ...[]byte) Batch {
		return withRecords(at(CodecNone, now, keyed(1, nil)), count, bytes.Join(recs, nil)).withLastDelta(count - 1)
	}
	rec := func(offsetDelta int64) []byte { return rawRecord(nil, 0, offsetDelta, -1, -1, 0) }

	cases := []struct {
		name    string
		b       Batch
		lim     Limits
		code    *kerr.Error
		records []int32
	}{
		{"keyless on compacted", at(CodecNone, now, []kmsg.Record{{Key: []byte("a")}, {OffsetDelta: 1}}), Limits{Compact: true}, kerr.InvalidRecord, []int32{1}},
		{"keyless on compacted, zstd", at(CodecZstd, now, []kmsg.Record{{}, {OffsetDelta: 1}, {OffsetDelta: 2, Key: []byte{}}}), Limits{Compact: true}, kerr.InvalidRecord, []int32{0, 1}},
		{"keyless, not compacted", at(CodecLZ4, now, []kmsg.Record{{}, {OffsetDelta: 1}}), Limits{}, nil, nil},
		{"too old", at(CodecGzip, now-3_600_001, keyed(3, func(i int) int64 { return int64(i) })), bounded, kerr.InvalidTimestamp, []int32{0}},
		{"oldest allowed", at(CodecGzip, now-3_600_000, keyed(2, nil)), bounded, nil, nil},
		{"too far ahead", at(CodecSnappy, now, keyed(3, func(i int) int64 { return int64(i) * 30_001 })), bounded, kerr.InvalidTimestamp, []int32{2}},
		{"no timestamp", at(CodecNone, NoTimestamp, keyed(2, nil)), bounded, nil, nil},
		{"unchecked without a clock", at(CodecNone, 0, keyed(2, nil)), Limits{TimestampAfterMaxMs: 0}, nil, nil},
		{"timestamps unchecked on LogAppendTime", at(CodecNone, 0, keyed(2, nil)), Limits{NowMs: now, LogAppendTime: true}, nil, nil},
		{"producer claims LogAppendTime", func() Batch {
			o := DefaultBuildOptions()
			o.LogAppendTime, o.BaseTimestamp, o.MaxTimestamp = true, now, now
			return mustBuild(t, o, keyed(2, nil))
		}(), Limits{NowMs: now, LogAppendTime: true}, kerr.InvalidTimestamp, []int32{0, 1}},
		{"key and timestamp: key first", at(CodecNone, 0, []kmsg.Record{{}}), Limits{Compact: true, NowMs: now, TimestampBeforeMaxMs: 1, TimestampAfterMaxMs: 1}, kerr.InvalidRecord, []int32{0}},
		{"a bad timestamp makes the batch INVALID_TIMESTAMP", at(CodecNone, now-7_200_000, []kmsg.Record{{}, {OffsetDelta: 1, Key: []byte("k")}}),
			Limits{Compact: true, NowMs: now, TimestampBeforeMaxMs: 3_600_000, TimestampAfterMaxMs: 1}, kerr.InvalidTimestamp, []int32{0, 1}},
		{"offset deltas out of order", raw(2, rec(1), rec(0)), Limits{}, kerr.InvalidRecord, nil},
		{"offset delta repeated", raw(2, rec(0), rec(0)), Limits{}, kerr.InvalidRecord, nil},
		{"more records than counted", raw(1, rec(0), rec(1)).withLastDelta(0), Limits{}, kerr.InvalidRecord, nil},
		{"fewer records than counted", raw(3, rec(0), rec(1)), Limits{}, kerr.InvalidRecord, nil},
		{"trailing byte", raw(1, rec(0), []byte{0}), Limits{}, kerr.InvalidRecord, nil},
		{"bytes left inside a record", raw(1, rawRecord([]byte{9}, 0, 0, -1, -1, 0)), Limits{}, kerr.InvalidRecord, nil},
		{"value past its record", raw(1, rawRecord(nil, 0, 0, -1, 5)), Limits{}, kerr.InvalidRecord, nil},
		{"null header key", raw(1, rawRecord(nil, 0, 0, -1, -1, 1, -1, -1)), Limits{}, kerr.InvalidRecord, nil},
		{"negative header count", raw(1, rawRecord(nil, 0, 0, -1, -1, -1)), Limits{}, kerr.InvalidRecord, nil},
		{"producer id without a sequence", func() Batch {
			o := sampleOptions(CodecNone)
			o.BaseSequence = -1
			return mustBuild(t, o, keyed(1, nil))
		}(), Limits{}, kerr.InvalidRecord, nil},
	}
	for _, tc := range cases {
		err := Validate(tc.b, FromClient, tc.lim)
		if tc.code == nil {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, tc.code) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.code)
			continue
		}
		var re *Error
		errors.As(err, &re)
		var got []int32
		for _, r := range re.Records {
			got = append(got, r.Index)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.records) {
			t.Errorf("%s: record errors %v, want %v (%v)", tc.name, got, tc.records, err)
		}
		// A follower copies what its leader took without these checks.
		if tc.b.Codec() != CodecNone {
			if err := Validate(tc.b, FromReplica, tc.lim); err != nil {
				t.Errorf("%s: from a replica: %v", tc.name, err)
			}
		}
	}
}

// The max timestamp in the header is what the records hold, whatever the
// producer wrote, as Kafka sets it.
func TestCheckMaxTimestamp(t *testing.T) {
	o := DefaultBuildOptions()
	o.BaseTimestamp, o.MaxTimestamp = 1000, 5
	b := mustBuild(t, o, NewRecords(KV{Key: []byte("a")}, KV{Key: []byte("b"), TimestampDelta: 70}, KV{Key: []byte("c"), TimestampDelta: -3}))
	c, err := Check(b, FromClient, Limits{})
	if err != nil || c.MaxTimestamp != 1070 {
		t.Fatalf("Check: %+v %v", c, err)
	}
	b.SetMaxTimestamp(c.MaxTimestamp)
	if err := Validate(b, FromReplica, Limits{}); err != nil || b.MaxTimestamp() != 1070 {
		t.Fatalf("after SetMaxTimestamp: %v, max %d", err, b.MaxTimestamp())
	}
}

// A batch that inflates past DecompressLimit is refused having cost only
// the stream's small buffers, however much it claims.
func TestValidateDecompressionBomb(t *testing.T) {
	const size = 64 << 20
	rec := []byte{0}
	rec = binary.AppendVarint(rec, 0)
	rec = binary.AppendVarint(rec, 0)
	rec = binary.AppendVarint(rec, -1)
	rec = binary.AppendVarint(rec, size)
	section := append(binary.AppendVarint(nil, int64(len(rec)+size+1)), rec...)
	section = append(section, make([]byte, size+1)...)
	base := mustBuild(t, sampleOptions(CodecNone), NewRecords(KV{Key: []byte("k")}))
	warmUp()
	for _, c := range []Codec{CodecGzip, CodecZstd, CodecLZ4} {
		compressed, err := Compress(c, nil, section)
		if err != nil {
			t.Fatal(err)
		}
		b := withRecords(base, 1, compressed).withCodec(c)
		limit := DecompressLimit(len(b), 1<<20)
		var verr error
		n := allocated(func() { verr = Validate(b, FromClient, Limits{MaxBytes: 1 << 20}) })
		t.Logf("%s: %d bytes, limit %d, allocated %d: %v", c, len(b), limit, n, verr)
		if c == CodecLZ4 {
			// lz4 cannot expand past 255x, under DecompressRatio: the
			// record is valid, and streamed all the same.
			if limit < size || verr != nil {
				t.Errorf("lz4: limit %d: %v", limit, verr)
			}
		} else {
			if limit >= size {
				t.Fatalf("%s: %d bytes may decompress to %d: not a bomb", c, len(b), limit)
			}
			wantCode(t, verr, kerr.InvalidRecord)
		}
		if n > 16<<20 {
			t.Errorf("%s: checking %d bytes that inflate to %d allocated %d", c, len(b), size, n)
		}
	}
	if got := DecompressLimit(100, 0); got != defaultMaxMessageBytes {
		t.Errorf("floor %d", got)
	}
	if got := DecompressLimit(1<<30, 0); got != MaxDecompressedSize {
		t.Errorf("cap %d", got)
	}
	if got := DecompressLimit(1<<20, 1<<10); got != DecompressRatio<<20 {
		t.Errorf("ratio %d", got)
	}
}

// A zstd frame whose header claims a window past zstdMaxWindow is refused
// before the decoder sizes anything by it.
func TestValidateZstdWindow(t *testing.T) {
	// Magic, a descriptor with no content size, a 16 MiB window (log 24:
	// exponent 14), then one raw last block of 1 byte.
	frame := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 14 << 3, 1<<3 | 1, 0, 0, 0}
	base := mustBuild(t, sampleOptions(CodecNone), NewRecords(KV{Key: []byte("k")}))
	b := withRecords(base, 1, frame).withCodec(CodecZstd)
	var err error
	if n := allocated(func() { err = Validate(b, FromClient, Limits{}) }); n > 4<<20 {
		t.Errorf("allocated %d", n)
	}
	wantCode(t, err, kerr.InvalidRecord)
	t.Log(err)
}

// Tiny batches that each inflate to under max.message.bytes cannot add up
// past the request's budget: a request's decompression stays proportional
// to its size, however many batches it carries.
func TestValidateBudget(t *testing.T) {
	value := make([]byte, 512<<10)
	o := DefaultBuildOptions()
	o.Codec = CodecZstd
	b := mustBuild(t, o, NewRecords(KV{Key: []byte("k"), Value: value}))
	if err := Validate(b, FromClient, Limits{}); err != nil {
		t.Fatalf("one batch alone: %v", err)
	}
	const n = 100
	budget := NewBudget(n * len(b))
	var accepted int
	var err error
	for range n {
		if err = Validate(b, FromClient, Limits{Budget: budget}); err != nil {
			break
		}
		accepted++
	}
	t.Logf("%d-byte batches of 512 KiB: %d of %d accepted within the budget of %d bytes: %v", len(b), accepted, n, DecompressRatio*n*len(b), err)
	wantCode(t, err, kerr.InvalidRecord)
	if want := DecompressRatio * n * len(b) / (512 << 10); accepted < want-1 || accepted > want+1 {
		t.Errorf("%d accepted, want about %d", accepted, want)
	}
}
