package record

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ErrInvalidBuild is what Build returns, wrapped, when its options and
// records cannot make a valid batch: a caller's mistake, not a client's.
var ErrInvalidBuild = errors.New("broker/record: cannot build batch")

// BuildOptions are a batch's header fields. Start from DefaultBuildOptions:
// the zero value describes idempotent producer 0, a real producer id.
type BuildOptions struct {
	BaseOffset           int64
	PartitionLeaderEpoch int32
	Codec                Codec

	LogAppendTime, Transactional, Control bool

	// BaseTimestamp is what the records' TimestampDeltas count from.
	BaseTimestamp int64
	// MaxTimestamp 0 derives it: BaseTimestamp plus the largest record
	// delta (BaseTimestamp when there are no records). Set it to keep an
	// original batch's value, or to the broker's time in a LogAppendTime
	// batch, where it is every record's timestamp.
	MaxTimestamp int64

	ProducerID    int64
	ProducerEpoch int16
	BaseSequence  int32

	// LastOffsetDelta 0 derives it from the last record's OffsetDelta.
	// The log cleaner sets it to keep the offset range of the batch it
	// compacts, since that range, not the surviving records, is what
	// producer sequence numbers and the next batch's offset follow.
	LastOffsetDelta int32

	// DeleteHorizonMs > 0 marks the batch's tombstones as removable after
	// that time (KIP-534). Kafka stores it as the base timestamp, so Build
	// rebases every record's TimestampDelta onto it: each record keeps its
	// absolute timestamp.
	DeleteHorizonMs int64
}

// DefaultBuildOptions are those of a plain, non-idempotent producer's batch:
// no producer id, epoch or sequence, and no partition leader epoch yet.
func DefaultBuildOptions() BuildOptions {
	return BuildOptions{
		PartitionLeaderEpoch: -1,
		ProducerID:           -1,
		ProducerEpoch:        -1,
		BaseSequence:         -1,
	}
}

// Build encodes records into one batch. Records carry their OffsetDelta and
// TimestampDelta relative to opts.BaseOffset and opts.BaseTimestamp; their
// OffsetDeltas must increase strictly. Build fills each record's Length
// itself, on a copy: the records given are not modified.
func Build(opts BuildOptions, records []kmsg.Record) (Batch, error) {
	if opts.Codec < CodecNone || opts.Codec > CodecZstd {
		return nil, errorf(kerr.UnsupportedCompressionType, "compression codec %d", opts.Codec)
	}
	// Deltas are written relative to the stored base timestamp.
	shift := int64(0)
	baseTs := opts.BaseTimestamp
	if opts.DeleteHorizonMs > 0 {
		shift, baseTs = opts.BaseTimestamp-opts.DeleteHorizonMs, opts.DeleteHorizonMs
	}
	lastDelta, maxDelta, size, err := measure(opts, records, shift)
	if err != nil {
		return nil, err
	}

	var b []byte
	if opts.Codec == CodecNone {
		b = make([]byte, HeaderSize, HeaderSize+size)
		b = appendRecords(b, records, shift)
	} else {
		raw := appendRecords(make([]byte, 0, size), records, shift)
		b = make([]byte, HeaderSize, HeaderSize+size/2+64)
		if b, err = Compress(opts.Codec, b, raw); err != nil {
			return nil, err
		}
	}
	if len(b)-LogOverhead > math.MaxInt32 {
		return nil, fmt.Errorf("%w: %d bytes", ErrInvalidBuild, len(b))
	}

	maxTs := opts.MaxTimestamp
	if maxTs == 0 {
		maxTs = opts.BaseTimestamp + maxDelta
	}
	attrs := uint16(opts.Codec)
	if opts.LogAppendTime {
		attrs |= attrLogAppendTime
	}
	if opts.Transactional {
		attrs |= attrTransactional
	}
	if opts.Control {
		attrs |= attrControl
	}
	if opts.DeleteHorizonMs > 0 {
		attrs |= attrDeleteHorizonMs
	}

	be := binary.BigEndian
	be.PutUint64(b, uint64(opts.BaseOffset))
	be.PutUint32(b[offLength:], uint32(len(b)-LogOverhead))
	be.PutUint32(b[offLeaderEpoch:], uint32(opts.PartitionLeaderEpoch))
	b[offMagic] = Magic
	be.PutUint16(b[offAttributes:], attrs)
	be.PutUint32(b[offLastDelta:], uint32(lastDelta))
	be.PutUint64(b[offBaseTimestamp:], uint64(baseTs))
	be.PutUint64(b[offMaxTimestamp:], uint64(maxTs))
	be.PutUint64(b[offProducerID:], uint64(opts.ProducerID))
	be.PutUint16(b[offProducerEpoch:], uint16(opts.ProducerEpoch))
	be.PutUint32(b[offBaseSequence:], uint32(opts.BaseSequence))
	be.PutUint32(b[offRecordCount:], uint32(len(records)))
	batch := Batch(b)
	be.PutUint32(b[offCRC:], batch.ComputeCRC())
	return batch, nil
}

// measure checks the records' offsets against opts and returns the batch's
// last offset delta, the largest timestamp delta, and the records' encoded
// size once their deltas are moved by shift.
func measure(opts BuildOptions, records []kmsg.Record, shift int64) (lastDelta int32, maxDelta int64, size int, err error) {
	if len(records) > math.MaxInt32 {
		return 0, 0, 0, fmt.Errorf("%w: %d records", ErrInvalidBuild, len(records))
	}
	prev := int32(-1)
	for i := range records {
		r := &records[i]
		if r.OffsetDelta <= prev {
			return 0, 0, 0, fmt.Errorf("%w: record %d has offset delta %d after %d", ErrInvalidBuild, i, r.OffsetDelta, prev)
		}
		prev = r.OffsetDelta
		d := timestampDelta(r)
		if i == 0 || d > maxDelta {
			maxDelta = d
		}
		body := bodySize(r, d+shift)
		size += varintLen(int32(body)) + body
	}
	lastDelta = max(prev, 0)
	switch {
	case opts.LastOffsetDelta < 0 || opts.LastOffsetDelta > 0 && opts.LastOffsetDelta < lastDelta:
		return 0, 0, 0, fmt.Errorf("%w: last offset delta %d, records reach %d", ErrInvalidBuild, opts.LastOffsetDelta, lastDelta)
	case opts.LastOffsetDelta > 0:
		lastDelta = opts.LastOffsetDelta
	}
	if size > math.MaxInt32-HeaderSize {
		return 0, 0, 0, fmt.Errorf("%w: %d bytes of records", ErrInvalidBuild, size)
	}
	return lastDelta, maxDelta, size, nil
}

// bodySize is the encoded size of r after its length prefix, with
// timestamp delta d. It mirrors kmsg's Record.AppendTo.
func bodySize(r *kmsg.Record, d int64) int {
	bytesLen := func(b []byte) int {
		if b == nil {
			return varintLen(-1)
		}
		return varintLen(int32(len(b))) + len(b)
	}
	n := 1 + varlongLen(d) + varintLen(r.OffsetDelta) + bytesLen(r.Key) + bytesLen(r.Value)
	n += varintLen(int32(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		n += varintLen(int32(len(h.Key))) + len(h.Key) + bytesLen(h.Value)
	}
	return n
}

// appendRecords encodes records with their timestamp deltas moved by shift.
func appendRecords(dst []byte, records []kmsg.Record, shift int64) []byte {
	for i := range records {
		r := records[i]
		d := timestampDelta(&r) + shift
		// Both fields, so AppendTo cannot fall back to a stale
		// TimestampDelta when the new delta is zero.
		r.TimestampDelta64, r.TimestampDelta = d, int32(d)
		r.Length = int32(bodySize(&r, d))
		dst = r.AppendTo(dst)
	}
	return dst
}

// KV is a record for NewRecords.
type KV struct {
	Key, Value     []byte
	Headers        []kmsg.Header
	TimestampDelta int64
}

// NewRecords makes records with offset deltas 0, 1, 2, ..., as a producer
// numbers them, for Build; meant for tests and tools.
func NewRecords(kvs ...KV) []kmsg.Record {
	recs := make([]kmsg.Record, len(kvs))
	for i, kv := range kvs {
		recs[i] = kmsg.Record{
			OffsetDelta:      int32(i),
			TimestampDelta:   int32(kv.TimestampDelta),
			TimestampDelta64: kv.TimestampDelta,
			Key:              kv.Key,
			Value:            kv.Value,
			Headers:          kv.Headers,
		}
	}
	return recs
}

// BuildOptions are the options that rebuild b's header, as the log cleaner
// needs when it writes the records of b that survive compaction: the offset
// range, timestamps and producer fields stay those of b.
// Recompress is b with its records compressed with c instead, every header
// field kept, as Kafka's broker rebuilds a batch for a topic whose
// compression.type is not the producer's. b must have been validated.
func (b Batch) Recompress(c Codec) (Batch, error) {
	recs, err := b.DecodeRecords()
	if err != nil {
		return nil, err
	}
	opts := b.BuildOptions()
	opts.Codec = c
	return Build(opts, recs)
}

func (b Batch) BuildOptions() BuildOptions {
	o := BuildOptions{
		BaseOffset:           b.BaseOffset(),
		PartitionLeaderEpoch: b.PartitionLeaderEpoch(),
		Codec:                b.Codec(),
		LogAppendTime:        b.LogAppendTime(),
		Transactional:        b.Transactional(),
		Control:              b.Control(),
		BaseTimestamp:        b.BaseTimestamp(),
		MaxTimestamp:         b.MaxTimestamp(),
		ProducerID:           b.ProducerID(),
		ProducerEpoch:        b.ProducerEpoch(),
		BaseSequence:         b.BaseSequence(),
		LastOffsetDelta:      b.LastOffsetDelta(),
	}
	if b.HasDeleteHorizon() {
		o.DeleteHorizonMs = b.BaseTimestamp()
	}
	return o
}
