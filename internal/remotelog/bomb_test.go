package remotelog

import (
	"bytes"
	"errors"
	"runtime"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestDecompressionBombRefused: a crafted remote segment whose one batch
// of a few kilobytes decompresses to megabytes (a record of zeros with a
// header as large: a ratio no producer's batch passes the broker with) is
// refused as corrupt, naming the batch and the bound. The zstd one claims
// 32 MiB and the reader allocates well under half of that (its bound is
// 1 MiB, max.message.bytes; doubled buffers and the race detector's
// bookkeeping come on top); franz-go's decompressor took all of it.
func TestDecompressionBombRefused(t *testing.T) {
	for _, c := range []struct {
		codec kgo.CompressionCodec
		value int
	}{
		{kgo.GzipCompression(), 2 << 20},
		{kgo.ZstdCompression(), 16 << 20},
	} {
		raw := batch(t, 0, -1, false, false, false, c.codec, strings.Repeat("\x00", c.value))
		if len(raw) > 16<<10 {
			t.Fatalf("the bomb is %d bytes, meant to be small", len(raw))
		}
		p, man := oneSegment(t, raw, 0, int64(len(raw)))
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		got, next, err := readValues(p, man, 0, 1)
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "decompresses to more than") {
			t.Fatalf("%v (%d bytes): got %d values, next %d, err %v; want a corrupt segment past the bound", c.codec, len(raw), len(got), next, err)
		}
		alloc := after.TotalAlloc - before.TotalAlloc
		if c.value >= 16<<20 && alloc > uint64(c.value) {
			t.Errorf("%v: refusing a batch that claims %d bytes allocated %d", c.codec, 2*c.value, alloc)
		}
		t.Logf("%v: %d bytes refused, %d bytes allocated: %v", c.codec, len(raw), alloc, err)
	}

	// Under the bound: 2 × 400 KiB of zeros in one batch reads back.
	small := strings.Repeat("\x00", 400<<10)
	raw := batch(t, 0, -1, false, false, false, kgo.GzipCompression(), small)
	p, man := oneSegment(t, raw, 0, int64(len(raw)))
	var n int
	_, err := p.ReadCommitted(t.Context(), man, 0, 1, func(rs []Record) error {
		for _, r := range rs {
			if !bytes.Equal(r.Value, []byte(small)) {
				t.Errorf("value of %d bytes, want %d", len(r.Value), len(small))
			}
			n++
		}
		return nil
	})
	if err != nil || n != 1 {
		t.Fatalf("a batch within the bound: %d records, %v", n, err)
	}
}

// TestReadHonoursTopicMaxMessageBytes: a batch the broker took under a
// topic's max.message.bytes of 8 MiB (6 MiB of zeros, compressed far more
// than 256 to 1) reads back when the segment's metadata records that
// limit, as the uploader writes it; with the default it is refused.
func TestReadHonoursTopicMaxMessageBytes(t *testing.T) {
	value := strings.Repeat("\x00", 3<<20) // a value and a header as large
	raw := batch(t, 0, -1, false, false, false, kgo.GzipCompression(), value)
	p, man := oneSegment(t, raw, 0, int64(len(raw)))
	if _, _, err := readValues(p, man, 0, 1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("at the default max.message.bytes: %v, want refused", err)
	}
	man.Segments[0].MaxMessageBytes = 8 << 20
	got, next, err := readValues(p, man, 0, 1)
	if err != nil || len(got) != 1 || next != 1 {
		t.Fatalf("at max.message.bytes 8 MiB: %d values, next %d, %v", len(got), next, err)
	}
}
