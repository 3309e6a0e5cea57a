package record

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestBuildValidateDecode(t *testing.T) {
	want := sampleRecords()
	for _, c := range allCodecs {
		t.Run(c.String(), func(t *testing.T) {
			opts := sampleOptions(c)
			b := mustBuild(t, opts, want)
			if err := Validate(b, FromClient, Limits{MaxBytes: 1 << 20}); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			got, err := b.DecodeRecords()
			if err != nil {
				t.Fatalf("DecodeRecords: %v", err)
			}
			sameRecords(t, got, want)

			if b.Codec() != c || b.BaseOffset() != 1000 || b.RecordCount() != int32(len(want)) ||
				b.LastOffsetDelta() != int32(len(want)-1) || b.ProducerID() != 42 ||
				b.ProducerEpoch() != 3 || b.BaseSequence() != 17 || b.PartitionLeaderEpoch() != -1 ||
				b.LogAppendTime() || b.Transactional() || b.Control() || b.HasDeleteHorizon() {
				t.Fatalf("header fields: %+v", b[:HeaderSize])
			}
			if want := opts.BaseTimestamp + 1<<40; b.MaxTimestamp() != want {
				t.Fatalf("max timestamp %d, want %d", b.MaxTimestamp(), want)
			}
			for i := range got {
				if off := b.RecordOffset(&got[i]); off != 1000+int64(i) {
					t.Errorf("record %d: offset %d", i, off)
				}
				if ts := b.RecordTimestamp(&got[i]); ts != opts.BaseTimestamp+timestampDelta(&want[i]) {
					t.Errorf("record %d: timestamp %d", i, ts)
				}
			}
			crossCheckFranzGo(t, b, want)
		})
	}
}

// crossCheckFranzGo reads b with kmsg's batch decoder and franz-go's
// decompressor, code that shares nothing with ours but the record codec.
func crossCheckFranzGo(t *testing.T, b Batch, want []kmsg.Record) {
	t.Helper()
	var kb kmsg.RecordBatch
	if err := kb.ReadFrom(b); err != nil {
		t.Fatalf("kmsg.RecordBatch: %v", err)
	}
	if kb.FirstOffset != b.BaseOffset() || kb.Length != b.Length() || kb.Magic != 2 ||
		uint32(kb.CRC) != b.ComputeCRC() || kb.Attributes != b.Attributes() ||
		kb.LastOffsetDelta != b.LastOffsetDelta() || kb.FirstTimestamp != b.BaseTimestamp() ||
		kb.MaxTimestamp != b.MaxTimestamp() || kb.ProducerID != b.ProducerID() ||
		kb.ProducerEpoch != b.ProducerEpoch() || kb.FirstSequence != b.BaseSequence() ||
		kb.NumRecords != int32(len(want)) {
		t.Fatalf("kmsg reads the header differently: %+v", kb)
	}
	raw, err := kgo.DefaultDecompressor().Decompress(kb.Records, kgo.CompressionCodecType(b.Codec()))
	if err != nil {
		t.Fatalf("franz-go decompress: %v", err)
	}
	got := make([]kmsg.Record, len(want))
	for i := range got {
		length, n := varint32(raw)
		if err := got[i].ReadFrom(raw[:n+int(length)]); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		raw = raw[n+int(length):]
	}
	if len(raw) != 0 {
		t.Fatalf("%d bytes after the last record", len(raw))
	}
	sameRecords(t, got, want)
}

func TestBuildDefaults(t *testing.T) {
	b := mustBuild(t, DefaultBuildOptions(), NewRecords(KV{Value: []byte("v")}))
	if b.ProducerID() != -1 || b.ProducerEpoch() != -1 || b.BaseSequence() != -1 || b.PartitionLeaderEpoch() != -1 {
		t.Fatalf("producer fields %d/%d/%d, leader epoch %d", b.ProducerID(), b.ProducerEpoch(), b.BaseSequence(), b.PartitionLeaderEpoch())
	}
	if err := Validate(b, FromClient, Limits{}); err != nil {
		t.Fatal(err)
	}
}

func TestBuildKeepsOffsetRange(t *testing.T) {
	// What the cleaner leaves of a batch of 11: offsets 0, 3 and 7.
	recs := NewRecords(KV{Key: []byte("a")}, KV{Key: []byte("b")}, KV{Key: []byte("c")})
	recs[1].OffsetDelta, recs[2].OffsetDelta = 3, 7
	opts := sampleOptions(CodecLZ4)
	opts.LastOffsetDelta = 10
	b := mustBuild(t, opts, recs)
	if b.LastOffsetDelta() != 10 || b.LastOffset() != 1010 {
		t.Fatalf("last offset delta %d", b.LastOffsetDelta())
	}
	if err := Validate(b, FromReplica, Limits{}); err != nil {
		t.Fatal(err)
	}
	wantCode(t, Validate(b, FromClient, Limits{}), kerr.InvalidRecord)
	got, err := b.DecodeRecords()
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []int64{1000, 1003, 1007} {
		if off := b.RecordOffset(&got[i]); off != want {
			t.Errorf("record %d at %d, want %d", i, off, want)
		}
	}
}

func TestBuildEmpty(t *testing.T) {
	for _, c := range allCodecs {
		opts := sampleOptions(c)
		opts.LastOffsetDelta = 4
		b := mustBuild(t, opts, nil)
		if b.RecordCount() != 0 || b.LastOffsetDelta() != 4 || b.MaxTimestamp() != opts.BaseTimestamp {
			t.Fatalf("%s: count %d, last delta %d", c, b.RecordCount(), b.LastOffsetDelta())
		}
		if err := Validate(b, FromReplica, Limits{}); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		wantCode(t, Validate(b, FromClient, Limits{}), kerr.InvalidRecord)
		if recs, err := b.DecodeRecords(); err != nil || len(recs) != 0 {
			t.Fatalf("%s: %d records, %v", c, len(recs), err)
		}
	}
	// Kafka's cleaner writes empty batches with no records section.
	b := withRecords(mustBuild(t, sampleOptions(CodecZstd), nil), 0, nil)
	if recs, err := b.DecodeRecords(); err != nil || len(recs) != 0 {
		t.Fatalf("no records section: %d records, %v", len(recs), err)
	}
}

func TestBuildDeleteHorizon(t *testing.T) {
	want := sampleRecords()
	opts := sampleOptions(CodecGzip)
	opts.DeleteHorizonMs = opts.BaseTimestamp + 86_400_000
	b := mustBuild(t, opts, want)
	if !b.HasDeleteHorizon() || b.BaseTimestamp() != opts.DeleteHorizonMs {
		t.Fatalf("delete horizon %v, base timestamp %d", b.HasDeleteHorizon(), b.BaseTimestamp())
	}
	if b.MaxTimestamp() != opts.BaseTimestamp+1<<40 {
		t.Fatalf("max timestamp %d", b.MaxTimestamp())
	}
	got, err := b.DecodeRecords()
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if ts, w := b.RecordTimestamp(&got[i]), opts.BaseTimestamp+timestampDelta(&want[i]); ts != w {
			t.Errorf("record %d: timestamp %d, want %d", i, ts, w)
		}
	}
}

func TestBuildLogAppendTime(t *testing.T) {
	opts := sampleOptions(CodecSnappy)
	opts.LogAppendTime = true
	opts.MaxTimestamp = 1_800_000_000_000
	b := mustBuild(t, opts, sampleRecords())
	got, err := b.DecodeRecords()
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if ts := b.RecordTimestamp(&got[i]); ts != opts.MaxTimestamp {
			t.Errorf("record %d: timestamp %d", i, ts)
		}
	}
}

func TestSetLogAppendTime(t *testing.T) {
	for _, c := range allCodecs {
		b := mustBuild(t, sampleOptions(c), sampleRecords())
		const now = 1_750_000_000_000
		b.SetLogAppendTime(now)
		if err := Validate(b, FromClient, Limits{}); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if !b.LogAppendTime() || b.MaxTimestamp() != now || b.Codec() != c {
			t.Fatalf("%s: attributes %x, max timestamp %d", c, b.Attributes(), b.MaxTimestamp())
		}
		got, err := b.DecodeRecords()
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if ts := b.RecordTimestamp(&got[i]); ts != now {
				t.Fatalf("%s: record %d: timestamp %d", c, i, ts)
			}
		}
	}
}

func TestBuildRejects(t *testing.T) {
	twice := NewRecords(KV{}, KV{})
	twice[1].OffsetDelta = 0
	negative := NewRecords(KV{})
	negative[0].OffsetDelta = -1
	below := sampleOptions(CodecNone)
	below.LastOffsetDelta = 1
	negDelta := sampleOptions(CodecNone)
	negDelta.LastOffsetDelta = -2

	for name, tc := range map[string]struct {
		opts BuildOptions
		recs []kmsg.Record
	}{
		"repeated offset delta":          {sampleOptions(CodecNone), twice},
		"negative offset delta":          {sampleOptions(CodecNone), negative},
		"last offset delta below record": {below, sampleRecords()},
		"negative last offset delta":     {negDelta, nil},
	} {
		if _, err := Build(tc.opts, tc.recs); !errors.Is(err, ErrInvalidBuild) {
			t.Errorf("%s: %v", name, err)
		}
	}
	bad := sampleOptions(5)
	_, err := Build(bad, sampleRecords())
	wantCode(t, err, kerr.UnsupportedCompressionType)
}

func TestBuildLeavesRecordsAlone(t *testing.T) {
	recs := sampleRecords()
	opts := sampleOptions(CodecNone)
	opts.DeleteHorizonMs = 1
	mustBuild(t, opts, recs)
	sameRecords(t, recs, sampleRecords())
	for i := range recs {
		if recs[i].Length != 0 {
			t.Fatalf("record %d: Length set to %d", i, recs[i].Length)
		}
	}
}

func TestDecodeRecordsRefuses(t *testing.T) {
	base := mustBuild(t, sampleOptions(CodecNone), nil)
	good := withRecords(base, 1, rawRecordOK())

	cases := map[string]Batch{
		"short":                  good[:HeaderSize-1],
		"count above records":    withRecords(base, 2, rawRecordOK()),
		"count below records":    withRecords(base, 1, append(rawRecordOK(), rawRecordOK()...)),
		"forged count":           withRecords(base, math.MaxInt32, rawRecordOK()),
		"negative count":         withRecords(base, -1, rawRecordOK()),
		"bytes left in record":   withRecords(base, 1, rawRecord([]byte{0, 0}, 0, 0, -1, -1, 0)),
		"negative header count":  withRecords(base, 1, rawRecord(nil, 0, 0, -1, -1, -1)),
		"null header key":        withRecords(base, 1, rawRecord(nil, 0, 0, -1, -1, 1, -1, -1)),
		"header count too large": withRecords(base, 1, rawRecord(nil, 0, 0, -1, -1, 1000)),
		"length past end":        withRecords(base, 1, rawRecordOK()[:5]),
		"key past record":        withRecords(base, 1, rawRecord(nil, 0, 0, 100)),
		"count with no records":  withRecords(base, 3, nil),
	}
	if _, err := good.DecodeRecords(); err != nil {
		t.Fatalf("the well-formed record: %v", err)
	}
	for name, b := range cases {
		recs, err := b.DecodeRecords()
		if err == nil {
			t.Errorf("%s: decoded %d records", name, len(recs))
			continue
		}
		wantCode(t, err, kerr.CorruptMessage)
	}
	_, err := withRecords(base, 1, rawRecordOK()).withCodec(6).DecodeRecords()
	wantCode(t, err, kerr.UnsupportedCompressionType)
}

// rawRecordOK is a well-formed record: null key, value "x", no headers.
func rawRecordOK() []byte {
	body := []byte{0, 0, 0, 1, 2, 'x', 0} // attrs, ts, offset, key -1, value len 1, x, 0 headers
	return append([]byte{byte(len(body) << 1)}, body...)
}

// withLastDelta sets b's last offset delta and reseals it.
func (b Batch) withLastDelta(d int32) Batch {
	binary.BigEndian.PutUint32(b[offLastDelta:], uint32(d))
	return reseal(b)
}

func (b Batch) withCodec(c Codec) Batch {
	b[offAttributes+1] = b[offAttributes+1]&^attrCodecMask | byte(c)
	return reseal(b)
}
