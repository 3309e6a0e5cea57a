package record

import (
	"bytes"
	"encoding/binary"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestCompressRoundTrip(t *testing.T) {
	for _, c := range allCodecs {
		for name, p := range payloads() {
			t.Run(c.String()+"/"+name, func(t *testing.T) {
				prefix := []byte("keep me")
				out, err := Compress(c, append([]byte(nil), prefix...), p)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasPrefix(out, prefix) {
					t.Fatalf("Compress did not append to dst")
				}
				got, err := Decompress(c, out[len(prefix):])
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, p) {
					t.Fatalf("round trip: %d bytes, want %d", len(got), len(p))
				}
			})
		}
	}
}

// franz-go's codecs are an independent implementation of the same
// framings: each side must read what the other writes.
func TestCompressAgreesWithFranzGo(t *testing.T) {
	opts := map[Codec]kgo.CompressionCodec{
		CodecGzip:   kgo.GzipCompression(),
		CodecSnappy: kgo.SnappyCompression(),
		CodecLZ4:    kgo.Lz4Compression(),
		CodecZstd:   kgo.ZstdCompression(),
	}
	dec := kgo.DefaultDecompressor()
	for c, opt := range opts {
		comp, err := kgo.DefaultCompressor(opt)
		if err != nil {
			t.Fatal(err)
		}
		for name, p := range payloads() {
			if len(p) == 0 {
				continue
			}
			t.Run(c.String()+"/"+name, func(t *testing.T) {
				ours, err := Compress(c, nil, p)
				if err != nil {
					t.Fatal(err)
				}
				got, err := dec.Decompress(ours, kgo.CompressionCodecType(c))
				if err != nil || !bytes.Equal(got, p) {
					t.Fatalf("franz-go reading ours: %d bytes, err %v", len(got), err)
				}
				theirs, used := comp.Compress(new(bytes.Buffer), p)
				if used != kgo.CompressionCodecType(c) {
					t.Fatalf("franz-go used codec %d", used)
				}
				got, err = Decompress(c, theirs)
				if err != nil || !bytes.Equal(got, p) {
					t.Fatalf("reading franz-go's: %d bytes, err %v", len(got), err)
				}
			})
		}
	}
}

func TestSnappyFramings(t *testing.T) {
	p := payloads()["text"]
	xerialHeader := append(append([]byte(nil), xerialMagic...), 0, 0, 0, 1, 0, 0, 0, 1)

	// Chunks of an odd size, as a writer with another block size makes.
	xerial := append([]byte(nil), xerialHeader...)
	for rest := p; len(rest) > 0; {
		n := min(len(rest), 1000)
		block := snappy.Encode(nil, rest[:n])
		xerial = binary.BigEndian.AppendUint32(xerial, uint32(len(block)))
		xerial = append(xerial, block...)
		rest = rest[n:]
	}
	cases := map[string][]byte{
		"raw":           snappy.Encode(nil, p),
		"raw s2 snappy": s2.EncodeSnappy(nil, p),
		"xerial":        xerial,
		"ours":          appendXerial(nil, p),
	}
	for name, src := range cases {
		got, err := Decompress(CodecSnappy, src)
		if err != nil || !bytes.Equal(got, p) {
			t.Errorf("%s: %d bytes, err %v", name, len(got), err)
		}
	}
	if got, err := Decompress(CodecSnappy, xerialHeader); err != nil || len(got) != 0 {
		t.Errorf("xerial header alone: %q, %v", got, err)
	}
	// The Java client reads blocks of its own size; ours are the same.
	ours := appendXerial(nil, p)
	if !bytes.HasPrefix(ours, xerialHeader) {
		t.Fatalf("header % x", ours[:16])
	}
	first := ours[16+4 : 16+4+binary.BigEndian.Uint32(ours[16:])]
	if n, _ := snappy.DecodedLen(first); n != xerialBlockSize {
		t.Errorf("first block decodes to %d bytes, want %d", n, xerialBlockSize)
	}
}

func TestDecompressCorrupt(t *testing.T) {
	p := payloads()["text"]
	for _, c := range allCodecs[1:] {
		good, err := Compress(c, nil, p)
		if err != nil {
			t.Fatal(err)
		}
		flipped := append([]byte(nil), good...)
		flipped[len(flipped)/2] ^= 0xff
		cases := map[string][]byte{
			"garbage":   []byte("this is not compressed at all, not in any codec"),
			"truncated": good[:len(good)/2],
			"flipped":   flipped,
		}
		if c == CodecSnappy {
			cases["xerial truncated header"] = xerialMagic
			cases["xerial chunk past end"] = binary.BigEndian.AppendUint32(good[:16:16], 1<<20)
		}
		for name, src := range cases {
			got, err := Decompress(c, src)
			if c == CodecZstd && name == "flipped" && err == nil {
				// zstd frames carry no checksum by default;
				// a flip may decode to other bytes, which
				// the batch CRC is there to catch.
				continue
			}
			if err == nil {
				t.Errorf("%s/%s: decoded %d bytes", c, name, len(got))
				continue
			}
			wantCode(t, err, kerr.CorruptMessage)
			if !strings.Contains(err.Error(), "broker/record: "+c.String()) {
				t.Errorf("%s/%s: error %q does not name the codec", c, name, err)
			}
		}
	}
}

func TestDecompressUnsupported(t *testing.T) {
	for _, c := range []Codec{5, 6, 7, -1} {
		_, err := Decompress(c, []byte("x"))
		wantCode(t, err, kerr.UnsupportedCompressionType)
		_, err = Compress(c, nil, []byte("x"))
		wantCode(t, err, kerr.UnsupportedCompressionType)
	}
}

// Each codec stops at the limit, however small the input that claims more.
func TestDecompressBomb(t *testing.T) {
	zeros := make([]byte, 4<<20)
	for _, c := range allCodecs[1:] {
		src, err := Compress(c, nil, zeros)
		if err != nil {
			t.Fatal(err)
		}
		_, err = decompress(c, src, 1<<20)
		wantCode(t, err, kerr.CorruptMessage)
		if !strings.Contains(err.Error(), "more than 1048576 bytes") {
			t.Errorf("%s: %v", c, err)
		}
		if got, err := decompress(c, src, len(zeros)); err != nil || len(got) != len(zeros) {
			t.Errorf("%s: at the limit: %d bytes, %v", c, len(got), err)
		}
	}
}

// Headers that declare huge sizes are refused before anything of that size
// is allocated.
func TestDecompressDeclaredSizes(t *testing.T) {
	zstdFrame := []byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0} // single segment, 8-byte content size
	zstdFrame = binary.LittleEndian.AppendUint64(zstdFrame, 1<<40)
	zstdFrame = append(zstdFrame, 0x01, 0x00, 0x00) // last raw block, empty

	xerial := append([]byte(nil), xerialMagic...)
	xerial = append(xerial, 0, 0, 0, 1, 0, 0, 0, 1)
	snappyHuge := []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 0x00}
	xerial = binary.BigEndian.AppendUint32(xerial, uint32(len(snappyHuge)))
	xerial = append(xerial, snappyHuge...)

	cases := []struct {
		name string
		c    Codec
		src  []byte
	}{
		{"zstd content size", CodecZstd, zstdFrame},
		{"snappy raw length", CodecSnappy, snappyHuge},
		{"snappy xerial block length", CodecSnappy, xerial},
	}
	if _, err := Decompress(CodecZstd, nil); err != nil { // warm the shared decoder
		t.Fatal(err)
	}
	for _, tc := range cases {
		var err error
		n := allocated(func() { _, err = Decompress(tc.c, tc.src) })
		wantCode(t, err, kerr.CorruptMessage)
		if n > 1<<20 {
			t.Errorf("%s: allocated %d bytes", tc.name, n)
		}
	}
}

// The Java client's KafkaLZ4BlockOutputStream writes FLG 0x60 (version 1,
// independent blocks, no checksums, no content size) and BD 0x40 (64 KiB
// blocks); writing the same keeps every consumer on its tested path.
func TestLZ4FrameAsJava(t *testing.T) {
	out, err := Compress(CodecLZ4, nil, payloads()["text"])
	if err != nil {
		t.Fatal(err)
	}
	if got := out[:6]; !bytes.Equal(got, []byte{0x04, 0x22, 0x4d, 0x18, 0x60, 0x40}) {
		t.Fatalf("frame header % x", got)
	}
}

// DecompressWithin holds at most about its limit, whatever the batch
// claims: zstd, whose shared decoder checks a lower limit only once it has
// decoded (up to MaxDecompressedSize), streams through a bounded decoder
// instead (remote segments, internal/remotelog).
func TestDecompressWithinAllocates(t *testing.T) {
	src, err := Compress(CodecZstd, nil, make([]byte, 32<<20))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range allCodecs[1:] {
		src := src
		if c != CodecZstd {
			if src, err = Compress(c, nil, make([]byte, 32<<20)); err != nil {
				t.Fatal(err)
			}
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := DecompressWithin(c, src, 1<<20)
		runtime.ReadMemStats(&after)
		wantCode(t, err, kerr.CorruptMessage)
		// The bound, doubled as the buffer grows, plus a zstd window
		// (8 MiB at most) or a codec's block buffers.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
			t.Errorf("%s: refusing 32 MiB at a 1 MiB limit allocated %d bytes", c, alloc)
		}
	}
}

// The frames Kafka's Java producer writes stream: no content size, and a
// 2 MiB window (header 28 b5 2f fd 00 58). The fixture is the records
// section of a 10 KiB batch as Kafka 4.4's Compression.zstd() wrote it; a
// bounded decode at a producer batch's limit (~1 MiB) must take it, where
// a decoder whose memory cap is the limit refuses the window outright.
func TestDecompressWithinJavaZstd(t *testing.T) {
	src, err := os.ReadFile("testdata/java-zstd-10k.bin")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(src[:6], []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x58}) {
		t.Fatalf("fixture header % x, want a streaming frame with a 2 MiB window", src[:6])
	}
	want, err := Decompress(CodecZstd, src)
	if err != nil || len(want) != 10<<10 {
		t.Fatalf("Decompress: %d bytes, %v", len(want), err)
	}
	for _, limit := range []int{DecompressLimit(len(src), 0), 10 << 10} {
		got, err := DecompressWithin(CodecZstd, src, limit)
		if err != nil {
			t.Fatalf("limit %d: a Java producer's zstd batch is refused: %v", limit, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("limit %d: decoded %d bytes, not the batch's", limit, len(got))
		}
	}
	// One byte short of the batch it is still refused, as too large.
	_, err = DecompressWithin(CodecZstd, src, 10<<10-1)
	wantCode(t, err, kerr.CorruptMessage)

	// A bomb of the same shape (streaming, no content size, an 8 MiB
	// window) is still stopped at the limit, holding at most the limit
	// and one window, not the 32 MiB it expands to.
	var bomb bytes.Buffer
	enc, err := zstd.NewWriter(&bomb, zstd.WithWindowSize(8<<20), zstd.WithSingleSegment(false))
	if err != nil {
		t.Fatal(err)
	}
	zeros := make([]byte, 1<<20)
	for i := 0; i < 32; i++ {
		if _, err := enc.Write(zeros); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			_ = enc.Flush() // the header goes out before the size is known
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	var h zstd.Header
	if err := h.Decode(bomb.Bytes()); err != nil || h.HasFCS {
		t.Fatalf("bomb header %+v, %v: want no content size", h, err)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = DecompressWithin(CodecZstd, bomb.Bytes(), 1<<20)
	runtime.ReadMemStats(&after)
	wantCode(t, err, kerr.CorruptMessage)
	// The output buffer as it doubles to the limit, plus the decoder's
	// history (the window and a block or two past it): measured 17 MB.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 20<<20 {
		t.Errorf("refusing a 32 MiB streaming frame at a 1 MiB limit allocated %d bytes", alloc)
	}
}

// The bounded zstd decoders are pooled: goroutines decoding at once, some
// frames refused midway, each get their own batch back whole.
func TestDecompressWithinZstdPooled(t *testing.T) {
	java, err := os.ReadFile("testdata/java-zstd-10k.bin")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Decompress(CodecZstd, java)
	if err != nil {
		t.Fatal(err)
	}
	other := bytes.Repeat([]byte("other batch "), 2000)
	otherZ, err := Compress(CodecZstd, nil, other)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				switch (g + i) % 3 {
				case 0:
					if got, err := DecompressWithin(CodecZstd, java, 1<<20); err != nil || !bytes.Equal(got, want) {
						t.Errorf("java frame: %d bytes, %v", len(got), err)
					}
				case 1:
					if got, err := DecompressWithin(CodecZstd, otherZ, 1<<20); err != nil || !bytes.Equal(got, other) {
						t.Errorf("other frame: %d bytes, %v", len(got), err)
					}
				default:
					if _, err := DecompressWithin(CodecZstd, java, 4<<10); err == nil {
						t.Errorf("a 10 KiB frame taken at a 4 KiB limit")
					}
				}
			}
		}()
	}
	wg.Wait()
}
