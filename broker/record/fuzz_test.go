package record

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fuzzSeeds are valid batches of every codec, the same cut short, and
// batches whose length fields claim the most they can.
func fuzzSeeds(t testing.TB) [][]byte {
	recs := NewRecords(
		KV{Key: []byte("k"), Value: []byte("value"), Headers: []kmsg.Header{{Key: "h", Value: []byte("x")}}},
		KV{Key: nil, Value: nil, TimestampDelta: -1},
		KV{Key: []byte("k2"), Value: []byte("a longer value, a longer value, a longer value"), TimestampDelta: 1000},
	)
	var seeds [][]byte
	add := func(b []byte) { seeds = append(seeds, append([]byte(nil), b...)) }
	set32 := func(b Batch, off int, v uint32) Batch {
		b = append(Batch(nil), b...)
		binary.BigEndian.PutUint32(b[off:], v)
		return b
	}
	for _, c := range allCodecs {
		b := mustBuild(t, sampleOptions(c), recs)
		add(b)
		for _, n := range []int{len(b) - 1, len(b) / 2, HeaderSize, HeaderSize - 1, LogOverhead, 0} {
			add(b[:n])
		}
		add(set32(b, offLength, math.MaxInt32))
		add(reseal(set32(b, offRecordCount, math.MaxInt32)))
		add(reseal(set32(b, offLastDelta, math.MaxInt32)))
	}

	base := mustBuild(t, sampleOptions(CodecNone), nil)
	const max = math.MaxInt32
	for _, raw := range [][]byte{
		rawRecord(nil, max),                        // timestamp delta, then nothing
		rawRecord(nil, 0, 0, max),                  // key length
		rawRecord(nil, 0, 0, -1, max),              // value length
		rawRecord(nil, 0, 0, -1, -1, max),          // header count
		rawRecord(nil, 0, 0, -1, -1, 1, max),       // header key length
		rawRecord(nil, 0, 0, -1, -1, 1, 0, max),    // header value length
		binary.AppendVarint(nil, max),              // record length
		{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, // overlong varint
	} {
		add(withRecords(base, 1, raw))
		add(withRecords(base, max, raw))
	}

	// Compressed sections whose headers claim the most.
	zstdFrame := binary.LittleEndian.AppendUint64([]byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0}, math.MaxUint64)
	xerial := append(append([]byte(nil), xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)
	lz4Frame := lz4Header()
	for c, raw := range map[Codec][]byte{
		CodecSnappy: {0xff, 0xff, 0xff, 0xff, 0x0f, 0x00},
		CodecZstd:   append(zstdFrame, 0x01, 0, 0),
		CodecLZ4:    append(lz4Frame, 0xff, 0xff, 0x3f, 0x00),
		CodecGzip:   {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff},
	} {
		add(withRecords(base, 1, raw).withCodec(c))
	}
	add(withRecords(base, 1, binary.BigEndian.AppendUint32(xerial, math.MaxUint32)).withCodec(CodecSnappy))
	add(withRecords(base, 1, binary.BigEndian.AppendUint32(xerial, math.MaxInt32)).withCodec(CodecSnappy))
	return seeds
}

// lz4Header is a frame header declaring 4 MiB blocks and the largest
// content size, with its checksum right.
func lz4Header() []byte {
	var buf appendWriter
	w := lz4.NewWriter(&buf)
	_ = w.Apply(lz4.BlockSizeOption(lz4.Block4Mb), lz4.SizeOption(math.MaxInt64))
	_, _ = w.Write([]byte("x"))
	// The header is what precedes the first block; cut the frame there.
	const magic, descriptor = 4, 2 + 8 + 1
	return buf.b[:magic+descriptor]
}

func FuzzValidate(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	warmUp()
	f.Fuzz(func(t *testing.T, data []byte) {
		check := func(b Batch) {
			for _, origin := range []Origin{FromClient, FromReplica} {
				err := Validate(b, origin, Limits{MaxBytes: 1 << 20})
				if err != nil {
					wantRecordError(t, err)
					continue
				}
				recs := checkDecode(t, b)
				if origin == FromClient && recs != nil {
					checkClientRules(t, b, recs)
				}
			}
		}
		check(Batch(data))
		// Most mutations break the CRC; sealing a copy lets the
		// fuzzer reach the checks behind it.
		if len(data) >= HeaderSize {
			check(reseal(append(Batch(nil), data...)))
		}
	})
}

// checkClientRules holds what Validate promised for a client's batch to
// what DecodeRecords read: dense offset deltas; and it re-checks the batch
// under a compacted topic's and timestamp bounds' rules, which must agree
// with the decoded keys and timestamps and cost no more memory than the
// stream's buffers, whatever the batch inflates to.
func checkClientRules(t *testing.T, b Batch, recs []kmsg.Record) {
	anyKeyless, maxTs := false, int64(math.MinInt64)
	for i := range recs {
		if recs[i].OffsetDelta != int32(i) {
			t.Fatalf("record %d has offset delta %d", i, recs[i].OffsetDelta)
		}
		anyKeyless = anyKeyless || recs[i].Key == nil
		maxTs = max(maxTs, b.RecordTimestamp(&recs[i]))
	}
	const now = 1_700_000_000_000
	lim := Limits{MaxBytes: 1 << 20, Compact: true, NowMs: now, TimestampBeforeMaxMs: 3_600_000, TimestampAfterMaxMs: 3_600_000}
	var c Checked
	var err error
	n := allocated(func() { c, err = Check(b, FromClient, lim) })
	if bound := 80*len(b) + 24<<20; n > uint64(bound) {
		t.Fatalf("Check of %d bytes allocated %d", len(b), n)
	}
	var re *Error
	switch {
	case err == nil:
		if anyKeyless {
			t.Fatal("a keyless record passed on a compacted topic")
		}
		if c.MaxTimestamp != maxTs {
			t.Fatalf("max timestamp %d, records say %d", c.MaxTimestamp, maxTs)
		}
	case errors.As(err, &re) && (re.Kafka == kerr.InvalidRecord || re.Kafka == kerr.InvalidTimestamp) && len(re.Records) > 0:
		for _, e := range re.Records {
			r := &recs[e.Index]
			ts := b.RecordTimestamp(r)
			if r.Key != nil && (ts == NoTimestamp || (ts >= now-3_600_000 && ts <= now+3_600_000)) && !b.LogAppendTime() {
				t.Fatalf("record %d refused: %s", e.Index, e.Message)
			}
		}
	default:
		t.Fatalf("a valid batch under a compacted topic's rules: %v", err)
	}
}

func FuzzDecodeRecords(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s)
	}
	warmUp()
	f.Fuzz(func(t *testing.T, data []byte) {
		recs := checkDecode(t, Batch(data))
		if recs == nil {
			return
		}
		// What decodes must build again and decode the same.
		b := Batch(data)
		opts := b.BuildOptions()
		opts.Codec = CodecNone
		again, err := Build(opts, recs)
		if err != nil {
			return // offsets out of order: Build refuses what Kafka would not write
		}
		if err := Validate(again, FromReplica, Limits{}); err != nil {
			t.Fatalf("rebuilt batch: %v", err)
		}
		got, err := again.DecodeRecords()
		if err != nil {
			t.Fatalf("rebuilt batch: %v", err)
		}
		sameRecords(t, got, recs)
		for i := range got {
			if again.RecordOffset(&got[i]) != b.RecordOffset(&recs[i]) || again.RecordTimestamp(&got[i]) != b.RecordTimestamp(&recs[i]) {
				t.Fatalf("record %d moved", i)
			}
		}
	})
}

// warmUp makes the shared decoders before allocations are counted.
func warmUp() {
	for _, c := range allCodecs {
		out, _ := Compress(c, nil, []byte("warm"))
		_, _ = Decompress(c, out)
	}
}

// expansion is the most each codec's format lets one input byte become,
// which bounds what its decoder may preallocate.
var expansion = map[Codec]int{CodecNone: 1, CodecGzip: 1032, CodecSnappy: 22, CodecLZ4: 255, CodecZstd: 32768}

// checkDecode decodes b, checking that it neither panics nor allocates more
// than the input and its real decompressed size account for: nothing may be
// sized from a length field alone.
func checkDecode(t *testing.T, b Batch) []kmsg.Record {
	var raw []byte
	if len(b) >= HeaderSize {
		raw, _ = Decompress(b.Codec(), b.Records())
	}
	var recs []kmsg.Record
	var err error
	n := allocated(func() { recs, err = b.DecodeRecords() })
	bound := 80*(len(b)+len(raw)) + 16<<20
	if len(b) >= HeaderSize {
		bound += 2 * min(expansion[b.Codec()]*len(b.Records()), MaxDecompressedSize)
	}
	if n > uint64(bound) {
		t.Fatalf("DecodeRecords of %d bytes (%d decompressed) allocated %d", len(b), len(raw), n)
	}
	if err != nil {
		wantRecordError(t, err)
		return nil
	}
	if len(recs) != int(b.RecordCount()) {
		t.Fatalf("%d records, batch says %d", len(recs), b.RecordCount())
	}
	return recs
}

func wantRecordError(t *testing.T, err error) {
	var re *Error
	if !errors.As(err, &re) || re.Kafka == nil {
		t.Fatalf("error %v (%T) is not a record error", err, err)
	}
}
