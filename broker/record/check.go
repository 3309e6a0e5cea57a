package record

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kerr"
)

// A client's batch is checked record by record before it is stored, as
// Kafka's LogValidator does: whatever a consumer will decode must decode.
// A compressed batch is decompressed for it, as a stream into a small
// reused buffer, so the memory it costs does not grow with what the batch
// decompresses to; only the snappy codec, whose format cannot expand more
// than about 22 times, is decompressed whole.
//
// What may be decompressed at all is bounded (CVE-2023-34455's lesson: a
// few bytes of gzip or zstd can claim gigabytes): see DecompressLimit.

// DecompressRatio is how many times its own size a client's batch may
// decompress to, past the max.message.bytes floor. 256 is more than lz4
// (255) or snappy (~22) can ever reach, so it only stops gzip and zstd
// batches of data more repetitive than any event stream; a batch of 1 MiB
// may then hold 256 MiB, MaxDecompressedSize.
const DecompressRatio = 256

// defaultMaxMessageBytes is Kafka's max.message.bytes, the floor of the
// limit when the caller gives none.
const defaultMaxMessageBytes = 1048588

// zstdMaxWindow is the largest zstd window a client's batch may use. A
// streaming decoder holds one window of history, and the frame header, not
// the data, says how large it is; RFC 8878 asks decoders to support 8 MiB,
// which covers every compression level up to 19 and every client's default.
const zstdMaxWindow = 8 << 20

// maxRecordErrors bounds the per-record errors one batch reports: a batch of
// a million keyless records must not make a response of a million entries.
const maxRecordErrors = 1000

// DecompressLimit is the most a client's batch of batchLen bytes may
// decompress to, for a topic whose max.message.bytes is maxBytes (0 for
// Kafka's default): whatever that topic would take uncompressed, or
// DecompressRatio times the batch, whichever is larger, and never more than
// MaxDecompressedSize, the most the log cleaner will decompress.
//
// The floor means compression never makes a batch refused that the topic
// would take as it is; the ratio makes what the broker decompresses for a
// request proportional to what the request carries. A batch smaller than
// max.message.bytes/256 may still cost up to max.message.bytes of
// decompression: that is the price of the floor, and it costs CPU only,
// since the records are checked as they stream.
func DecompressLimit(batchLen, maxBytes int) int {
	if maxBytes <= 0 {
		maxBytes = defaultMaxMessageBytes
	}
	return min(MaxDecompressedSize, max(maxBytes, DecompressRatio*batchLen))
}

// Budget is what the batches of one produce request may decompress to in
// all. DecompressLimit bounds each batch, but its max.message.bytes floor
// lets a batch of a hundred bytes inflate to a megabyte, and a request may
// carry a million of them; the budget makes the whole request's
// decompression proportional to its size. A nil *Budget is no budget.
// Not safe for concurrent use: a request's batches are checked one by one.
type Budget struct {
	left    int64
	floored bool
}

// NewBudget is the budget of a request carrying n bytes of record batches:
// DecompressRatio times them, and at least the max.message.bytes of the
// first compressed batch's topic (DecompressLimit's floor, once a request).
func NewBudget(n int) *Budget {
	return &Budget{left: DecompressRatio * int64(n)}
}

// RecordError is one record's reason for refusing its batch: Produce v8+
// answers them as RecordErrors, by the record's index in the batch.
type RecordError struct {
	Index   int32
	Message string
}

// Checked is what checking a client's batch learned from its records.
type Checked struct {
	// MaxTimestamp is the largest record timestamp, which Kafka writes
	// into the header whatever the producer put there (the time index
	// and retention rely on it).
	MaxTimestamp int64
}

// checkRecords walks every record of a client's batch, decompressing it as
// it goes, and checks what Kafka's DefaultRecord.readFrom and LogValidator
// check: the records number RecordCount and fill the section exactly, each
// fills exactly the length it declares, offset deltas run 0..n-1, and each
// record passes the topic's key and timestamp rules.
func checkRecords(b Batch, lim Limits) (Checked, error) {
	w := walkers.Get().(*walker)
	defer w.release()
	codec := b.Codec()
	limit := DecompressLimit(len(b), lim.MaxBytes)
	overBudget := false
	if bu := lim.Budget; bu != nil && codec != CodecNone && !bu.floored {
		bu.floored = true
		bu.left = max(bu.left, int64(DecompressLimit(0, lim.MaxBytes)))
	}
	if lim.Budget != nil && int64(limit) > lim.Budget.left {
		limit, overBudget = int(max(lim.Budget.left, 0)), true
	}
	raw := b.Records()
	switch codec {
	case CodecNone:
		w.buf = raw
	case CodecSnappy:
		out, err := decodeSnappy(raw, limit)
		if err != nil {
			return Checked{}, clientDecompressError(err)
		}
		w.buf = out
	default:
		r, err := w.stream(codec, raw)
		if err != nil {
			return Checked{}, err
		}
		w.r, w.limit = r, limit
	}
	if lim.Budget != nil && codec != CodecNone {
		whole := len(w.buf) // snappy's, decompressed whole
		defer func() { lim.Budget.left -= int64(max(w.read, whole)) }()
	}
	if overBudget {
		w.overBudget = true
	}

	count := b.RecordCount()
	rc := recordCheck{b: b, lim: lim, maxTs: NoTimestamp}
	for i := int32(0); ; i++ {
		more := w.fill(1)
		if err := w.streamErr(codec, limit); err != nil {
			return Checked{}, err
		}
		if !more {
			if i != count {
				return Checked{}, errorf(kerr.InvalidRecord, "batch says %d records, holds %d", count, i)
			}
			break
		}
		if i == count {
			return Checked{}, errorf(kerr.InvalidRecord, "batch says %d records, holds more", count)
		}
		if err := rc.record(w, i); err != nil {
			if se := w.streamErr(codec, limit); se != nil {
				return Checked{}, se
			}
			return Checked{}, err
		}
	}
	if err := rc.verdict(); err != nil {
		return Checked{}, err
	}
	return Checked{MaxTimestamp: rc.maxTs}, nil
}

// recordCheck is the state of one batch's walk.
type recordCheck struct {
	b     Batch
	lim   Limits
	maxTs int64
	errs  []RecordError
	nErrs int
	badTs bool
}

// record reads and checks record i at the walker's position. A structural
// fault returns an error at once (nothing after it can be framed); a record
// the topic's rules refuse is noted and the walk goes on, so that the
// producer learns every bad record, as Kafka reports them.
func (rc *recordCheck) record(w *walker, i int32) error {
	bad := func(what string) error {
		return errorf(kerr.InvalidRecord, "record %d: %s", i, what)
	}
	length, ok := w.varint(math.MaxInt)
	if !ok || length < 0 {
		return bad("bad length prefix")
	}
	var f recordFields
	if int(length) <= walkChunk && w.fill(int(length)) {
		// The common case: the whole record is in the buffer, and is
		// read from the slice without a call per field.
		var why string
		if f, why = parseRecord(w.buf[:length]); why != "" {
			return bad(why)
		}
		w.advance(int(length))
	} else if why := w.recordFields(int(length), &f); why != "" {
		return bad(why)
	}
	return rc.checkFields(i, f)
}

// recordFields are what the topic's rules look at in a record.
type recordFields struct {
	tsDelta  int64
	offDelta int32
	keyLen   int32
}

// parseRecord reads the record that body, its bytes after the length
// prefix, must fill exactly; why says what is wrong with it.
func parseRecord(body []byte) (f recordFields, why string) {
	if len(body) < 1 {
		return f, "no attributes"
	}
	body = body[1:]
	var n int
	if f.tsDelta, n = varint64(body); n <= 0 {
		return f, "bad timestamp delta"
	}
	body = body[n:]
	if f.offDelta, n = shortVarint(body); n <= 0 {
		return f, "bad offset delta"
	}
	body = body[n:]
	if f.keyLen, n = shortVarint(body); n <= 0 || int(f.keyLen) > len(body)-n {
		return f, "bad key"
	}
	body = body[n+int(max(f.keyLen, 0)):]
	var ok bool
	if body, ok = skipBytes(body, true); !ok {
		return f, "bad value"
	}
	headers, n := shortVarint(body)
	if n <= 0 || headers < 0 {
		return f, "bad header count"
	}
	body = body[n:]
	for range headers {
		if body, ok = skipBytes(body, false); !ok {
			return f, "bad header key"
		}
		if body, ok = skipBytes(body, true); !ok {
			return f, "bad header value"
		}
	}
	if len(body) != 0 {
		return f, "bytes left over after its last header"
	}
	return f, ""
}

// shortVarint is varint32 with the one- and two-byte cases inline: nearly
// every field of an event record (lengths up to 8 KiB, deltas up to 8191).
func shortVarint(b []byte) (int32, int) {
	if len(b) > 0 && b[0] < 0x80 {
		return int32(b[0]>>1) ^ -int32(b[0]&1), 1
	}
	if len(b) > 1 && b[1] < 0x80 {
		u := uint32(b[0]&0x7f) | uint32(b[1])<<7
		return int32(u>>1) ^ -int32(u&1), 2
	}
	return varint32(b)
}

// recordFields reads a record of length bytes field by field from the
// stream: one larger than the buffer, or cut short.
func (w *walker) recordFields(length int, f *recordFields) (why string) {
	end := w.off + length
	if _, ok := w.byte(end); !ok {
		return "no attributes"
	}
	var ok bool
	if f.tsDelta, ok = w.varlong(end); !ok {
		return "bad timestamp delta"
	}
	if f.offDelta, ok = w.varint(end); !ok {
		return "bad offset delta"
	}
	if f.keyLen, ok = w.varint(end); !ok || !w.skip(int(max(f.keyLen, 0)), end) {
		return "bad key"
	}
	valueLen, ok := w.varint(end)
	if !ok || !w.skip(int(max(valueLen, 0)), end) {
		return "bad value"
	}
	headers, ok := w.varint(end)
	if !ok || headers < 0 {
		return "bad header count"
	}
	for range headers {
		hk, ok := w.varint(end)
		if !ok || hk < 0 || !w.skip(int(hk), end) {
			return "bad header key"
		}
		hv, ok := w.varint(end)
		if !ok || !w.skip(int(max(hv, 0)), end) {
			return "bad header value"
		}
	}
	if w.off != end {
		return "bytes left over after its last header"
	}
	return ""
}

// checkFields applies the batch's and the topic's rules to record i.
func (rc *recordCheck) checkFields(i int32, f recordFields) error {
	offDelta, keyLen := f.offDelta, f.keyLen
	if offDelta != i {
		// Kafka rewrites a compressed batch whose inner offsets are
		// off (old clients of message format v1 wrote them wrong);
		// every format-v2 client writes 0..n-1, so here it is refused
		// rather than rebuilt.
		return errorf(kerr.InvalidRecord, "record %d: offset delta %d, want %d", i, offDelta, i)
	}

	ts := rc.b.BaseTimestamp() + f.tsDelta
	if rc.b.LogAppendTime() {
		ts = rc.b.MaxTimestamp()
	}
	rc.maxTs = max(rc.maxTs, ts)
	switch lim := &rc.lim; {
	case lim.Compact && keyLen < 0:
		rc.note(i, false, fmt.Sprintf("Compacted topic cannot accept message without key in topic partition %v.", lim.Partition))
	case lim.NowMs == 0:
		// No clock, no timestamp rules.
	case !lim.LogAppendTime && ts != NoTimestamp:
		diff := lim.NowMs - ts
		if diff > lim.TimestampBeforeMaxMs || -diff > lim.TimestampAfterMaxMs {
			rc.note(i, true, fmt.Sprintf("Timestamp %d of message with offset %d is out of range. The timestamp should be within [%d, %d]",
				ts, rc.b.BaseOffset()+int64(offDelta), saturatingAdd(lim.NowMs, -lim.TimestampBeforeMaxMs), saturatingAdd(lim.NowMs, lim.TimestampAfterMaxMs)))
		}
	case rc.b.LogAppendTime():
		rc.note(i, true, fmt.Sprintf("Invalid timestamp type in message with offset %d. Producer should not set timestamp type to LogAppendTime.",
			rc.b.BaseOffset()+int64(offDelta)))
	}
	return nil
}

func (rc *recordCheck) note(i int32, timestamp bool, msg string) {
	rc.nErrs++
	rc.badTs = rc.badTs || timestamp
	if len(rc.errs) < maxRecordErrors {
		rc.errs = append(rc.errs, RecordError{Index: i, Message: msg})
	}
}

// verdict turns the noted record errors into the batch's error, worded as
// Kafka's LogValidator words it: any bad timestamp makes the whole batch
// INVALID_TIMESTAMP, other record errors INVALID_RECORD.
func (rc *recordCheck) verdict() error {
	if rc.nErrs == 0 {
		return nil
	}
	if rc.badTs {
		return &Error{Kafka: kerr.InvalidTimestamp, Reason: "One or more records have been rejected due to invalid timestamp", Records: rc.errs}
	}
	shown := make([]string, 0, 3)
	for _, e := range rc.errs[:min(3, len(rc.errs))] {
		shown = append(shown, fmt.Sprintf("RecordError(batchIndex=%d, message='%s')", e.Index, e.Message))
	}
	return &Error{Kafka: kerr.InvalidRecord, Records: rc.errs, Reason: fmt.Sprintf(
		"One or more records have been rejected due to %d record errors in total, and only showing the first three errors at most: [%s]",
		rc.nErrs, strings.Join(shown, ", "))}
}

func saturatingAdd(a, b int64) int64 {
	s := a + b
	switch {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}

// walker reads a records section, from memory or from a decompressing
// stream through a reused chunk. off counts the bytes consumed, which is
// how a record's declared length is held to.
type walker struct {
	buf   []byte    // unread bytes
	r     io.Reader // where more come from; nil when buf is all
	chunk []byte    // buf's storage while streaming
	off   int
	read  int // bytes taken from r
	limit int
	err   error // why r stopped
	// overBudget says limit is what is left of the request's Budget.
	overBudget bool

	gz   *gzip.Reader
	lz   *lz4.Reader
	zs   *zstd.Decoder
	src  bytes.Reader
	zerr error // the zstd decoder could not be made
}

const walkChunk = 32 << 10

var walkers = sync.Pool{New: func() any { return &walker{chunk: make([]byte, walkChunk)} }}

func (w *walker) release() {
	w.buf, w.r, w.off, w.read, w.limit, w.err, w.overBudget = nil, nil, 0, 0, 0, nil, false
	w.src.Reset(nil)
	walkers.Put(w)
}

// stream sets up the decompressor of codec over src. The decompressors
// stay with the walker, so that a pooled walker reuses their buffers.
func (w *walker) stream(c Codec, src []byte) (io.Reader, error) {
	w.src.Reset(src)
	switch c {
	case CodecGzip:
		if w.gz == nil {
			w.gz = new(gzip.Reader)
		}
		if err := w.gz.Reset(&w.src); err != nil {
			return nil, corrupt(c, err)
		}
		return w.gz, nil
	case CodecLZ4:
		if w.lz == nil {
			w.lz = lz4.NewReader(nil)
		}
		w.lz.Reset(&w.src)
		return w.lz, nil
	case CodecZstd:
		if w.zs == nil && w.zerr == nil {
			w.zs, w.zerr = zstd.NewReader(nil,
				// One goroutine: the produce handler's own.
				zstd.WithDecoderConcurrency(1),
				zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxWindow(zstdMaxWindow),
				zstd.WithDecoderMaxMemory(MaxDecompressedSize),
			)
		}
		if w.zerr != nil {
			return nil, errorf(kerr.UnknownServerError, "zstd: %v", w.zerr)
		}
		if err := w.zs.Reset(&w.src); err != nil {
			// The frame header is read here: a window or content
			// size past the bounds is refused as streamErr would.
			w.err = err
			return nil, w.streamErr(c, 0)
		}
		return w.zs, nil
	}
	return nil, errorf(kerr.UnsupportedCompressionType, "compression codec %d", c)
}

// streamErr is the batch's error when the stream failed: a decompressor
// that cannot decode is CORRUPT_MESSAGE, a batch past its limit
// INVALID_RECORD (retrying it cannot help).
func (w *walker) streamErr(c Codec, limit int) error {
	switch {
	case w.err == nil || w.err == io.EOF:
		return nil
	case w.err == errOverLimit && w.overBudget:
		return errorf(kerr.InvalidRecord, "%s: the request's batches decompress to more than %d times their size", c, DecompressRatio)
	case w.err == errOverLimit:
		return errorf(kerr.InvalidRecord, "%s: decompresses to more than %d bytes (see DecompressLimit)", c, limit)
	case errors.Is(w.err, zstd.ErrWindowSizeExceeded):
		return errorf(kerr.InvalidRecord, "zstd: the frame's window is larger than %d bytes", zstdMaxWindow)
	case errors.Is(w.err, zstd.ErrDecoderSizeExceeded):
		return errorf(kerr.InvalidRecord, "zstd: the frame declares more than %d bytes", MaxDecompressedSize)
	}
	return corrupt(c, w.err)
}

var errOverLimit = errors.New("over the decompression limit")

// clientDecompressError maps a whole-buffer decompression error the way
// streamErr maps a stream's.
func clientDecompressError(err error) error {
	var re *Error
	if errors.As(err, &re) && strings.Contains(re.Reason, "decompresses to more than") {
		return &Error{Kafka: kerr.InvalidRecord, Reason: re.Reason}
	}
	return err
}

// fill makes at least n bytes (n at most a chunk) available in buf, if the
// records section has them, and says whether it did.
func (w *walker) fill(n int) bool {
	if len(w.buf) >= n {
		return true
	}
	if w.r == nil || w.err != nil {
		return false
	}
	k := copy(w.chunk, w.buf)
	for k < n && w.err == nil {
		m, err := w.r.Read(w.chunk[k:])
		k += m
		w.read += m
		switch {
		case w.read > w.limit:
			w.err = errOverLimit
		case err != nil:
			w.err = err
		case m == 0:
			w.err = io.ErrNoProgress
		}
	}
	w.buf = w.chunk[:k]
	return k >= n
}

func (w *walker) advance(n int) {
	w.buf = w.buf[n:]
	w.off += n
}

// The field readers fail on a field that is malformed or runs past end,
// the end of the record being read.

func (w *walker) byte(end int) (byte, bool) {
	if w.off >= end || !w.fill(1) {
		return 0, false
	}
	c := w.buf[0]
	w.advance(1)
	return c, true
}

func (w *walker) varint(end int) (int32, bool) {
	w.fill(5)
	v, n := shortVarint(w.buf)
	if n <= 0 || n > end-w.off {
		return 0, false
	}
	w.advance(n)
	return v, true
}

func (w *walker) varlong(end int) (int64, bool) {
	w.fill(10)
	v, n := varint64(w.buf)
	if n <= 0 || n > end-w.off {
		return 0, false
	}
	w.advance(n)
	return v, true
}

func (w *walker) skip(n, end int) bool {
	if n > end-w.off {
		return false
	}
	for n > 0 {
		if !w.fill(1) {
			return false
		}
		k := min(n, len(w.buf))
		w.advance(k)
		n -= k
	}
	return true
}
