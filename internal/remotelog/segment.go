package remotelog

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/record"
)

// A segment's .log is a sequence of record batches (magic v2), each
// preceded by what Kafka calls the log overhead:
//
//	baseOffset  int64
//	batchLength int32   bytes that follow
//	...         the rest of the batch header and its records
//
// The batch header is read, and its CRC checked, with broker/record's
// Batch, as the broker reads what producers send.
const (
	logOverhead    = record.LogOverhead
	batchHeaderLen = record.HeaderSize
)

// maxBatchBytes bounds one batch read from a remote segment: a corrupt
// length must not make a reader allocate without bound. Kafka's largest
// message.max.bytes in practice is far below.
const maxBatchBytes = 256 << 20

// recordOverhead is what a decoded record costs in memory beyond its
// key, value and header bytes (the Record and kmsg.Header structs and
// slice headers), for the held-bytes bound.
const recordOverhead = 128

// ErrCorrupt wraps every malformed segment.
var ErrCorrupt = errors.New("remotelog: corrupt segment")

// Batch is one decoded record batch of a segment.
type Batch struct {
	BaseOffset    int64
	LastOffset    int64
	ProducerID    int64
	Transactional bool
	Control       bool
	// Commit is, for a control batch, whether its marker commits.
	Commit  bool
	Records []Record // none for a control batch
	// mem is the memory the decoded batch holds on to: the decompressed
	// records (which keys, values and headers alias) plus recordOverhead
	// per record.
	mem int64
}

// Record is one record with its absolute offset and timestamp.
type Record struct {
	Offset    int64
	Timestamp int64
	Key       []byte // nil for a null key
	Value     []byte // nil for a null value
	Headers   []kmsg.Header
}

// Size is the memory the decoded batch holds: its records' bytes after
// decompression (keys, values and headers alias them) plus a per-record
// overhead, so that a bound on held batches bounds memory even for
// records with empty values or large headers (review 7).
func (b *Batch) Size() int64 {
	if b.mem > 0 {
		return b.mem
	}
	// A batch not from decode (tests): count what it holds.
	var n int64
	for _, r := range b.Records {
		n += recordOverhead + int64(len(r.Key)+len(r.Value))
		for _, h := range r.Headers {
			n += int64(len(h.Key) + len(h.Value))
		}
	}
	return n
}

// BatchReader reads the batches of a segment's bytes in order.
type BatchReader struct {
	r   *bufio.Reader
	pos int64
	// MaxMessageBytes is the topic's max.message.bytes (0: Kafka's
	// default), the floor of what one batch may decompress to.
	MaxMessageBytes int
}

// NewBatchReader reads batches from r, positioned at a batch boundary
// (the start of a segment or a position from its offset index).
//
// A compressed batch decompresses within the bound the broker puts on a
// producer's (record.DecompressLimit: max.message.bytes, or 256 times the
// batch, at most 256 MiB), refused as corrupt past it before more is held:
// a segment in HDFS is only as trusted as everyone who can write there,
// and a few kilobytes of gzip or zstd can claim gigabytes. (franz-go's
// decompressor, used before, allowed 2 GiB.) The same bytes produced
// through a broker fit when MaxMessageBytes is the topic's, as the
// segment's metadata records it, and the topic's was not lowered between
// the produce and the upload.
func NewBatchReader(r io.Reader) *BatchReader {
	return &BatchReader{r: bufio.NewReaderSize(r, 1<<20)}
}

// Next is the next batch, io.EOF at the end of the segment.
func (br *BatchReader) Next() (*Batch, error) {
	var head [logOverhead]byte
	if _, err := io.ReadFull(br.r, head[:]); err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("%w: a batch header at byte %d: %v", ErrCorrupt, br.pos, err)
	}
	size := int64(int32(binary.BigEndian.Uint32(head[8:])))
	if size < batchHeaderLen-logOverhead || size > maxBatchBytes {
		return nil, fmt.Errorf("%w: batch of %d bytes at byte %d", ErrCorrupt, size, br.pos)
	}
	raw := make([]byte, logOverhead+size)
	copy(raw, head[:])
	if _, err := io.ReadFull(br.r, raw[logOverhead:]); err != nil {
		return nil, fmt.Errorf("%w: the batch at byte %d is cut short: %v", ErrCorrupt, br.pos, err)
	}
	br.pos += int64(len(raw))
	return br.decode(raw)
}

// decode decodes raw, a whole batch of at least batchHeaderLen bytes (Next
// checks both).
func (br *BatchReader) decode(raw []byte) (*Batch, error) {
	rb := record.Batch(raw)
	base := rb.BaseOffset()
	if rb.Magic() != 2 {
		return nil, fmt.Errorf("%w: batch at offset %d has magic %d", ErrCorrupt, base, rb.Magic())
	}
	// As Kafka's clients (and kafka-go, the loader's broker path) do: a
	// corrupt or tampered segment must not load wrong values silently.
	if got := rb.ComputeCRC(); got != rb.CRC() {
		return nil, fmt.Errorf("%w: batch at offset %d: CRC %08x, computed %08x", ErrCorrupt, base, rb.CRC(), got)
	}
	b := &Batch{BaseOffset: base, LastOffset: rb.LastOffset(), ProducerID: rb.ProducerID(),
		Transactional: rb.Transactional(), Control: rb.Control()}
	recs := rb.Records()
	if c := rb.Codec(); c != record.CodecNone && len(recs) > 0 {
		var err error
		limit := record.DecompressLimit(len(raw), br.MaxMessageBytes)
		if recs, err = record.DecompressWithin(c, recs, limit); err != nil {
			return nil, fmt.Errorf("%w: batch at offset %d: %v", ErrCorrupt, base, err)
		}
	}
	recordsLen := int64(len(recs))
	for i := 0; len(recs) > 0; i++ {
		if i >= int(rb.RecordCount()) {
			return nil, fmt.Errorf("%w: batch at offset %d holds more than its %d records", ErrCorrupt, base, rb.RecordCount())
		}
		l, n := binary.Varint(recs)
		if n <= 0 || l < 0 || int64(n)+l > int64(len(recs)) {
			return nil, fmt.Errorf("%w: record %d of the batch at offset %d", ErrCorrupt, i, base)
		}
		var kr kmsg.Record
		if err := kr.ReadFrom(recs[:int64(n)+l]); err != nil {
			return nil, fmt.Errorf("%w: record %d of the batch at offset %d: %v", ErrCorrupt, i, base, err)
		}
		recs = recs[int64(n)+l:]
		if b.Control {
			// A control record's key: version int16, type int16 (0
			// abort, 1 commit).
			if len(kr.Key) >= 4 {
				b.Commit = binary.BigEndian.Uint16(kr.Key[2:]) == 1
			}
			continue
		}
		// The timestamp is the batch's first one plus the record's delta,
		// as the clients the loader fetches with compute it.
		b.Records = append(b.Records, Record{Offset: base + int64(kr.OffsetDelta), Timestamp: rb.BaseTimestamp() + kr.TimestampDelta64,
			Key: kr.Key, Value: kr.Value, Headers: kr.Headers})
	}
	b.mem = recordsLen + recordOverhead*int64(len(b.Records))
	return b, nil
}

// IndexLookup is the position to scan from for target in a Kafka offset
// index (entries of relative offset int32, position int32): that of the
// last entry at or before target, or 0.
func IndexLookup(idx []byte, base, target int64) int64 {
	n := len(idx) / 8
	i := sort.Search(n, func(i int) bool { return base+int64(int32(binary.BigEndian.Uint32(idx[i*8:]))) > target })
	if i == 0 {
		return 0
	}
	return int64(binary.BigEndian.Uint32(idx[(i-1)*8+4:]))
}
