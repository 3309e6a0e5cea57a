package record

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

var allCodecs = []Codec{CodecNone, CodecGzip, CodecSnappy, CodecLZ4, CodecZstd}

// wantCode fails t unless err is a *Error carrying code.
func wantCode(t testing.TB, err error, code *kerr.Error) {
	t.Helper()
	var re *Error
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T), want *Error with %v", err, err, code)
	}
	if !errors.Is(err, code) {
		t.Fatalf("error %v has code %v, want %v", err, re.Kafka, code)
	}
}

// payloads cover the empty input, one tiny input, and inputs spanning several
// xerial chunks and lz4 blocks, compressible and not.
func payloads() map[string][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 300<<10)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	var text bytes.Buffer
	for i := 0; text.Len() < 200<<10; i++ {
		fmt.Fprintf(&text, `{"event":"page_view","user":%d,"url":"/p/%d"}`+"\n", i%97, i%13)
	}
	return map[string][]byte{
		"empty":  {},
		"tiny":   []byte("hello"),
		"text":   text.Bytes(),
		"random": random,
	}
}

// sampleRecords has what a decoder can get wrong: null and empty keys and
// values, headers with null values, negative and large timestamp deltas,
// and a value larger than a compression block.
func sampleRecords() []kmsg.Record {
	big := bytes.Repeat([]byte("0123456789abcdef"), 10<<10)
	return NewRecords(
		KV{Key: []byte("k0"), Value: []byte("v0")},
		KV{Key: nil, Value: []byte("no key"), TimestampDelta: 5},
		KV{Key: []byte("tombstone"), Value: nil, TimestampDelta: -3},
		KV{Key: []byte{}, Value: []byte{}, TimestampDelta: 1 << 40},
		KV{Key: []byte("h"), Value: []byte("headers"), Headers: []kmsg.Header{
			{Key: "trace", Value: []byte("abc")},
			{Key: "", Value: nil},
		}},
		KV{Key: []byte("big"), Value: big, TimestampDelta: 7},
	)
}

func sampleOptions(c Codec) BuildOptions {
	o := DefaultBuildOptions()
	o.Codec = c
	o.BaseOffset = 1000
	o.BaseTimestamp = 1_700_000_000_000
	o.ProducerID, o.ProducerEpoch, o.BaseSequence = 42, 3, 17
	return o
}

func mustBuild(t testing.TB, opts BuildOptions, recs []kmsg.Record) Batch {
	t.Helper()
	b, err := Build(opts, recs)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return b
}

// reseal rewrites the length and CRC after a test edits a batch, so that
// only the edit is wrong.
func reseal(b Batch) Batch {
	binary.BigEndian.PutUint32(b[offLength:], uint32(len(b)-LogOverhead))
	binary.BigEndian.PutUint32(b[offCRC:], b.ComputeCRC())
	return b
}

// withRecords replaces b's records section and count.
func withRecords(b Batch, count int32, raw []byte) Batch {
	out := append(append([]byte(nil), b[:HeaderSize]...), raw...)
	binary.BigEndian.PutUint32(out[offRecordCount:], uint32(count))
	return reseal(out)
}

// rawRecord encodes one record field by field, so tests can write what
// Build never would. binary.AppendVarint zig-zags as Kafka does.
func rawRecord(extra []byte, fields ...int64) []byte {
	var body []byte
	body = append(body, 0) // attributes
	for _, f := range fields {
		body = binary.AppendVarint(body, f)
	}
	body = append(body, extra...)
	return append(binary.AppendVarint(nil, int64(len(body))), body...)
}

func sameRecords(t testing.TB, got, want []kmsg.Record) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d records, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := &got[i], &want[i]
		if g.OffsetDelta != w.OffsetDelta || timestampDelta(g) != timestampDelta(w) {
			t.Fatalf("record %d: deltas %d/%d, want %d/%d", i, g.OffsetDelta, timestampDelta(g), w.OffsetDelta, timestampDelta(w))
		}
		if (g.Key == nil) != (w.Key == nil) || !bytes.Equal(g.Key, w.Key) {
			t.Fatalf("record %d: key %q, want %q", i, g.Key, w.Key)
		}
		if (g.Value == nil) != (w.Value == nil) || !bytes.Equal(g.Value, w.Value) {
			t.Fatalf("record %d: value of %d bytes, want %d", i, len(g.Value), len(w.Value))
		}
		if len(g.Headers) != len(w.Headers) {
			t.Fatalf("record %d: %d headers, want %d", i, len(g.Headers), len(w.Headers))
		}
		for j := range w.Headers {
			gh, wh := g.Headers[j], w.Headers[j]
			if gh.Key != wh.Key || (gh.Value == nil) != (wh.Value == nil) || !bytes.Equal(gh.Value, wh.Value) {
				t.Fatalf("record %d header %d: %q=%q, want %q=%q", i, j, gh.Key, gh.Value, wh.Key, wh.Value)
			}
		}
	}
}

// allocated is how many bytes fn allocates on the heap.
func allocated(fn func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
