package record

import (
	"bytes"
	"errors"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kerr"
)

// MaxDecompressedSize bounds what one batch may decompress to. A few bytes of
// zstd or gzip can claim gigabytes; the broker decompresses only to validate
// and compact, and Kafka's max.message.bytes (1 MiB by default) bounds what a
// producer sends, so a batch that inflates beyond this is refused as corrupt
// rather than allowed to exhaust memory.
const MaxDecompressedSize = 256 << 20

// Decompress returns the records section of a batch compressed with c, as
// Kafka clients write it. The result is newly allocated and never aliases src.
func Decompress(c Codec, src []byte) ([]byte, error) {
	return decompress(c, src, MaxDecompressedSize)
}

// DecompressWithin is Decompress bounded by limit (at most
// MaxDecompressedSize): a batch whose records decompress to more is refused
// with CORRUPT_MESSAGE before more than limit bytes are held, whatever its
// codec. For batches read back from storage that no request has checked
// (remote segments), bounded by what the topic takes (DecompressLimit).
func DecompressWithin(c Codec, src []byte, limit int) ([]byte, error) {
	return decompress(c, src, min(max(limit, 0), MaxDecompressedSize))
}

// Compress appends src compressed with c to dst, in the framing the Java
// client reads (every other client reads it too).
func Compress(c Codec, dst, src []byte) ([]byte, error) {
	switch c {
	case CodecNone:
		return append(dst, src...), nil
	case CodecGzip:
		w := gzipWriters.Get().(*gzip.Writer)
		defer gzipWriters.Put(w)
		return compressStream(c, w, dst, src)
	case CodecSnappy:
		return appendXerial(dst, src), nil
	case CodecLZ4:
		w := lz4Writers.Get().(*lz4.Writer)
		defer lz4Writers.Put(w)
		return compressStream(c, w, dst, src)
	case CodecZstd:
		enc, err := zstdEncoder()
		if err != nil {
			return dst, errorf(kerr.UnknownServerError, "zstd: %v", err)
		}
		return enc.EncodeAll(src, dst), nil
	}
	return dst, errorf(kerr.UnsupportedCompressionType, "compression codec %d", c)
}

// decompress is Decompress with the limit as a parameter, for tests. zstd
// applies a limit below MaxDecompressedSize only once it has decoded.
func decompress(c Codec, src []byte, limit int) ([]byte, error) {
	switch c {
	case CodecNone:
		return append([]byte(nil), src...), nil
	case CodecGzip:
		r := gzipReaders.Get().(*gzip.Reader)
		defer gzipReaders.Put(r)
		if err := r.Reset(bytes.NewReader(src)); err != nil {
			return nil, corrupt(c, err)
		}
		return readBounded(c, r, len(src), limit)
	case CodecSnappy:
		return decodeSnappy(src, limit)
	case CodecLZ4:
		r := lz4Readers.Get().(*lz4.Reader)
		defer lz4Readers.Put(r)
		r.Reset(bytes.NewReader(src))
		return readBounded(c, r, len(src), limit)
	case CodecZstd:
		return decodeZstd(src, limit)
	}
	return nil, errorf(kerr.UnsupportedCompressionType, "compression codec %d", c)
}

func corrupt(c Codec, err error) error {
	return errorf(kerr.CorruptMessage, "%s: %v", c, err)
}

func tooLarge(c Codec, limit int) error {
	return errorf(kerr.CorruptMessage, "%s: decompresses to more than %d bytes", c, limit)
}

// appendWriter lets the stream codecs append to a caller's slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

type resetWriteCloser interface {
	io.WriteCloser
	Reset(io.Writer)
}

func compressStream(c Codec, w resetWriteCloser, dst, src []byte) ([]byte, error) {
	out := &appendWriter{b: dst}
	w.Reset(out)
	if _, err := w.Write(src); err != nil {
		return dst, errorf(kerr.UnknownServerError, "%s: compress: %v", c, err)
	}
	if err := w.Close(); err != nil {
		return dst, errorf(kerr.UnknownServerError, "%s: compress: %v", c, err)
	}
	return out.b, nil
}

// readBounded reads the whole stream, failing as soon as it passes limit so
// a bomb costs at most limit bytes. The buffer starts at a guess from the
// compressed size and grows with what the stream really yields, never with
// what a header claims.
func readBounded(c Codec, r io.Reader, srcLen, limit int) ([]byte, error) {
	out := bytes.NewBuffer(make([]byte, 0, min(4*srcLen+512, limit)))
	n, err := out.ReadFrom(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, corrupt(c, err)
	}
	if n > int64(limit) {
		return nil, tooLarge(c, limit)
	}
	return out.Bytes(), nil
}

var (
	gzipWriters = sync.Pool{New: func() any {
		// Level 6, what the Java client's GZIPOutputStream uses.
		w, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression)
		return w
	}}
	gzipReaders = sync.Pool{New: func() any { return new(gzip.Reader) }}

	lz4Writers = sync.Pool{New: func() any {
		// As the Java client's KafkaLZ4BlockOutputStream: 64 KiB
		// independent blocks, no content checksum (the batch CRC
		// already covers the bytes).
		w := lz4.NewWriter(nil)
		_ = w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.ChecksumOption(false))
		return w
	}}
	lz4Readers = sync.Pool{New: func() any { return lz4.NewReader(nil) }}
)

// One zstd encoder and one decoder serve every goroutine: EncodeAll and
// DecodeAll are safe for concurrent use and keep per-call state in internal
// pools, which is cheaper than an encoder per batch (each allocates its
// tables and window).
var (
	zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
		return zstd.NewWriter(nil,
			// Batches are at most max.message.bytes, 1 MiB by
			// default: a larger window gains nothing and costs
			// every consumer the memory to decode it.
			zstd.WithWindowSize(1<<20),
			// An empty input still yields a frame a consumer can
			// decode, rather than zero bytes it cannot.
			zstd.WithZeroFrames(true),
		)
	})
	zstdDecoder = sync.OnceValues(func() (*zstd.Decoder, error) {
		return zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(0),
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(MaxDecompressedSize),
		)
	})
)

// decodeZstd relies on the decoder's own bound: DecodeAll refuses a frame
// whose declared size passes MaxDecompressedSize before allocating, stops a
// frame that outgrows it while decoding, and never preallocates more than
// the input could expand to. A lower limit streams through a decoder of
// its own bounded by it (and by zstdMaxWindow of history), so that no more
// than limit plus one window is ever held.
func decodeZstd(src []byte, limit int) ([]byte, error) {
	if limit < MaxDecompressedSize {
		return decodeZstdStream(src, limit)
	}
	dec, err := zstdDecoder()
	if err != nil {
		return nil, errorf(kerr.UnknownServerError, "zstd: %v", err)
	}
	out, err := dec.DecodeAll(src, nil)
	switch {
	case errors.Is(err, zstd.ErrDecoderSizeExceeded) || len(out) > limit:
		return nil, tooLarge(CodecZstd, limit)
	case err != nil:
		return nil, corrupt(CodecZstd, err)
	}
	return out, nil
}

// decodeZstdStream bounds what it holds by the output it reads (limit+1)
// plus one window, not by the decoder's max memory: in streaming mode
// klauspost caps the frame's window by that memory too, and a Java
// producer's frames (streaming, no content size, a 2 MiB window) would be
// refused at any limit below the window. The window is bounded as the
// produce path bounds it (check.go), and a frame that declares a size past
// limit is refused before anything is decoded.
func decodeZstdStream(src []byte, limit int) ([]byte, error) {
	var h zstd.Header
	if h.Decode(src) == nil && h.HasFCS && h.FrameContentSize > uint64(limit) {
		return nil, tooLarge(CodecZstd, limit)
	}
	d, err := zstdStream(src)
	if err != nil {
		return nil, zstdErr(err, limit)
	}
	defer func() {
		_ = d.Reset(nil) // drop src
		zstdStreams.Put(d)
	}()
	out := bytes.NewBuffer(make([]byte, 0, min(4*len(src)+512, limit)))
	n, err := out.ReadFrom(io.LimitReader(d, int64(limit)+1))
	switch {
	case err != nil:
		return nil, zstdErr(err, limit)
	case n > int64(limit):
		return nil, tooLarge(CodecZstd, limit)
	}
	return out.Bytes(), nil
}

// zstdStreams are the stream decoders of decodeZstdStream, reused: one
// per batch cost three times the CPU and six times the allocation of the
// shared DecodeAll (review of the follower path, L2). With a concurrency
// of 1 a stream decoder runs no goroutine, so one dropped by the pool
// needs no Close.
var zstdStreams sync.Pool

// zstdStream is a stream decoder reading src. src goes in as a
// *bytes.Reader, never a *bytes.Buffer: klauspost decodes a Buffer whole
// (DecodeAll, bounded only by the max memory, MaxDecompressedSize)
// rather than as a stream bounded by what is read from it.
func zstdStream(src []byte) (*zstd.Decoder, error) {
	if d, ok := zstdStreams.Get().(*zstd.Decoder); ok {
		if err := d.Reset(bytes.NewReader(src)); err == nil {
			return d, nil
		}
		d.Close()
	}
	return zstd.NewReader(bytes.NewReader(src),
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(zstdMaxWindow),
		zstd.WithDecoderMaxMemory(MaxDecompressedSize),
	)
}

func zstdErr(err error, limit int) error {
	if errors.Is(err, zstd.ErrDecoderSizeExceeded) {
		return tooLarge(CodecZstd, limit)
	}
	return corrupt(CodecZstd, err)
}
