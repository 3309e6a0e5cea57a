package record

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A record inside a batch. Every field after the length is counted by it.
//
//	field            encoding
//	length           varint    bytes that follow
//	attributes       int8      unused, 0
//	timestampDelta   varlong   from the batch's base timestamp
//	offsetDelta      varint    from the batch's base offset
//	key              varint length (-1 for null), bytes
//	value            varint length (-1 for null), bytes
//	headers          varint count, then per header:
//	                   key    varint length (never null), bytes
//	                   value  varint length (-1 for null), bytes

// minRecordSize is the smallest encoded record, length prefix included: one
// byte for each of the seven fields.
const minRecordSize = 7

// DecodeRecords decompresses the batch if need be and decodes its records.
// They must number RecordCount and fill the records section exactly, and
// each must fill exactly the length it declares, as Kafka's
// DefaultRecord.readFrom requires.
//
// Keys and values alias b, or the decompressed buffer; copy them to keep
// them past b's lifetime. DecodeRecords does not check the CRC: Validate does.
func (b Batch) DecodeRecords() ([]kmsg.Record, error) {
	return b.DecodeRecordsWithin(MaxDecompressedSize)
}

// DecodeRecordsWithin is DecodeRecords with the decompressed records
// bounded by limit (DecompressWithin): for batches read back from storage
// rather than checked on their way in.
func (b Batch) DecodeRecordsWithin(limit int) ([]kmsg.Record, error) {
	if len(b) < HeaderSize {
		return nil, errorf(kerr.CorruptMessage, "batch of %d bytes is shorter than the %d-byte header", len(b), HeaderSize)
	}
	count := b.RecordCount()
	raw := b.Records()
	switch {
	case count < 0:
		return nil, errorf(kerr.CorruptMessage, "record count %d", count)
	case len(raw) == 0 && count == 0:
		// Kafka's log cleaner keeps empty batches to remember a
		// producer's last sequence; they have no records section to
		// decompress, whatever their codec bit says.
		return nil, nil
	}
	if c := b.Codec(); c != CodecNone {
		var err error
		if raw, err = DecompressWithin(c, raw, limit); err != nil {
			return nil, err
		}
	}
	// Checked before allocating, so a forged count costs nothing.
	if int64(count) > int64(len(raw))/minRecordSize {
		return nil, errorf(kerr.CorruptMessage, "batch says %d records, %d bytes cannot hold them", count, len(raw))
	}
	recs := make([]kmsg.Record, 0, count)
	for len(raw) > 0 {
		n := len(recs)
		if n == int(count) {
			return nil, errorf(kerr.CorruptMessage, "batch says %d records, holds more", count)
		}
		size, err := recordSize(raw, n)
		if err != nil {
			return nil, err
		}
		recs = append(recs, kmsg.Record{})
		if err := recs[n].ReadFrom(raw[:size]); err != nil {
			return nil, errorf(kerr.CorruptMessage, "record %d: %v", n, err)
		}
		raw = raw[size:]
	}
	if len(recs) != int(count) {
		return nil, errorf(kerr.CorruptMessage, "batch says %d records, holds %d", count, len(recs))
	}
	return recs, nil
}

// recordSize walks the framing of the record at the start of buf and
// returns its size, length prefix included. kmsg's decoder neither reports
// how much it read nor minds bytes left over inside a record's length; this
// walk catches both, and the checks Kafka makes that kmsg does not (a
// negative header count, a null header key).
func recordSize(buf []byte, i int) (int, error) {
	bad := func(what string) (int, error) {
		return 0, errorf(kerr.CorruptMessage, "record %d: %s", i, what)
	}
	length, n := varint32(buf)
	if n <= 0 || length < 0 || int(length) > len(buf)-n {
		return bad("bad length prefix")
	}
	body := buf[n : n+int(length)]
	if len(body) < 1 {
		return bad("no attributes")
	}
	body = body[1:]
	k := skipVarlong(body)
	if k <= 0 {
		return bad("bad timestamp delta")
	}
	body = body[k:]
	if _, k = varint32(body); k <= 0 {
		return bad("bad offset delta")
	}
	body = body[k:]
	var ok bool
	if body, ok = skipBytes(body, true); !ok {
		return bad("bad key")
	}
	if body, ok = skipBytes(body, true); !ok {
		return bad("bad value")
	}
	headers, k := varint32(body)
	if k <= 0 || headers < 0 {
		return bad("bad header count")
	}
	body = body[k:]
	for range headers {
		if body, ok = skipBytes(body, false); !ok {
			return bad("bad header key")
		}
		if body, ok = skipBytes(body, true); !ok {
			return bad("bad header value")
		}
	}
	if len(body) != 0 {
		return bad("bytes left over after its last header")
	}
	return n + int(length), nil
}

// skipBytes skips a varint-length-prefixed byte string; a negative length
// is null, where nullable.
func skipBytes(buf []byte, nullable bool) ([]byte, bool) {
	l, n := shortVarint(buf)
	switch {
	case n <= 0:
		return nil, false
	case l < 0:
		return buf[n:], nullable
	case int(l) > len(buf)-n:
		return nil, false
	}
	return buf[n+int(l):], true
}

// RecordOffset is r's offset in the partition.
func (b Batch) RecordOffset(r *kmsg.Record) int64 {
	return b.BaseOffset() + int64(r.OffsetDelta)
}

// RecordTimestamp is r's timestamp. A LogAppendTime batch stores the
// broker's time once, as MaxTimestamp, and it stands for every record;
// otherwise each record is its delta from the base timestamp (which, on a
// batch with a delete horizon, is that horizon: Build rebases the deltas).
func (b Batch) RecordTimestamp(r *kmsg.Record) int64 {
	if b.LogAppendTime() {
		return b.MaxTimestamp()
	}
	return b.BaseTimestamp() + timestampDelta(r)
}

// timestampDelta reads r's delta the way kmsg's encoder writes it:
// TimestampDelta64, or the older int32 field when that is zero.
func timestampDelta(r *kmsg.Record) int64 {
	if r.TimestampDelta64 != 0 {
		return r.TimestampDelta64
	}
	return int64(r.TimestampDelta)
}
