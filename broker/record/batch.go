package record

import (
	"encoding/binary"
	"hash/crc32"
)

// A record batch of magic 2, as a producer sends it and as a segment file
// stores it. All integers are big endian. The CRC-32C covers the bytes from
// attributes to the end of the batch, so the broker may rewrite the base offset
// and the partition leader epoch in place without recomputing it.
//
//	offset  size  field
//	     0     8  baseOffset
//	     8     4  batchLength            bytes after this field
//	    12     4  partitionLeaderEpoch
//	    16     1  magic                  always 2
//	    17     4  crc                    CRC-32C of bytes [21, end)
//	    21     2  attributes             bits 0-2 codec, 3 timestamp type,
//	                                     4 transactional, 5 control,
//	                                     6 delete horizon set
//	    23     4  lastOffsetDelta
//	    27     8  baseTimestamp
//	    35     8  maxTimestamp
//	    43     8  producerId
//	    51     2  producerEpoch
//	    53     4  baseSequence
//	    57     4  recordCount
//	    61     -  records (possibly compressed)
const (
	// HeaderSize is the size of a batch without its records.
	HeaderSize = 61
	// LogOverhead is the size of baseOffset and batchLength, the part of a
	// batch that precedes what batchLength counts.
	LogOverhead = 12
	// Magic is the only record format Tributary reads and writes.
	Magic = 2

	offLength        = 8
	offLeaderEpoch   = 12
	offMagic         = 16
	offCRC           = 17
	offAttributes    = 21
	offLastDelta     = 23
	offBaseTimestamp = 27
	offMaxTimestamp  = 35
	offProducerID    = 43
	offProducerEpoch = 51
	offBaseSequence  = 53
	offRecordCount   = 57
)

const (
	attrCodecMask       = 0x07
	attrLogAppendTime   = 0x08
	attrTransactional   = 0x10
	attrControl         = 0x20
	attrDeleteHorizonMs = 0x40
)

// NoTimestamp is Kafka's marker for an absent timestamp.
const NoTimestamp = -1

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Batch is one whole record batch, header included. It is a view: the
// accessors read and the setters write the underlying bytes. A Batch must be at
// least HeaderSize long; Validate or Split guarantee that.
type Batch []byte

// Codec is the compression codec in a batch's attributes.
type Codec int8

const (
	CodecNone Codec = iota
	CodecGzip
	CodecSnappy
	CodecLZ4
	CodecZstd
)

func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return "unknown"
}

func (b Batch) BaseOffset() int64 { return int64(binary.BigEndian.Uint64(b)) }
func (b Batch) SetBaseOffset(o int64) {
	binary.BigEndian.PutUint64(b, uint64(o))
}

// Length is the batchLength field: the batch's size less LogOverhead.
func (b Batch) Length() int32 { return int32(binary.BigEndian.Uint32(b[offLength:])) }

func (b Batch) PartitionLeaderEpoch() int32 {
	return int32(binary.BigEndian.Uint32(b[offLeaderEpoch:]))
}
func (b Batch) SetPartitionLeaderEpoch(e int32) {
	binary.BigEndian.PutUint32(b[offLeaderEpoch:], uint32(e))
}

func (b Batch) Magic() int8         { return int8(b[offMagic]) }
func (b Batch) CRC() uint32         { return binary.BigEndian.Uint32(b[offCRC:]) }
func (b Batch) Attributes() int16   { return int16(binary.BigEndian.Uint16(b[offAttributes:])) }
func (b Batch) Codec() Codec        { return Codec(b.Attributes() & attrCodecMask) }
func (b Batch) LogAppendTime() bool { return b.Attributes()&attrLogAppendTime != 0 }
func (b Batch) Transactional() bool { return b.Attributes()&attrTransactional != 0 }
func (b Batch) Control() bool       { return b.Attributes()&attrControl != 0 }

// HasDeleteHorizon says whether the base timestamp holds the time after which
// the cleaner may drop this batch's tombstones (KIP-534).
func (b Batch) HasDeleteHorizon() bool { return b.Attributes()&attrDeleteHorizonMs != 0 }

func (b Batch) LastOffsetDelta() int32 {
	return int32(binary.BigEndian.Uint32(b[offLastDelta:]))
}
func (b Batch) LastOffset() int64 { return b.BaseOffset() + int64(b.LastOffsetDelta()) }
func (b Batch) BaseTimestamp() int64 {
	return int64(binary.BigEndian.Uint64(b[offBaseTimestamp:]))
}
func (b Batch) MaxTimestamp() int64 {
	return int64(binary.BigEndian.Uint64(b[offMaxTimestamp:]))
}
func (b Batch) ProducerID() int64 { return int64(binary.BigEndian.Uint64(b[offProducerID:])) }
func (b Batch) ProducerEpoch() int16 {
	return int16(binary.BigEndian.Uint16(b[offProducerEpoch:]))
}
func (b Batch) BaseSequence() int32 {
	return int32(binary.BigEndian.Uint32(b[offBaseSequence:]))
}
func (b Batch) RecordCount() int32 {
	return int32(binary.BigEndian.Uint32(b[offRecordCount:]))
}

// Records is the (possibly compressed) records section.
func (b Batch) Records() []byte { return b[HeaderSize:] }

// ComputeCRC is the CRC-32C the batch should carry.
func (b Batch) ComputeCRC() uint32 { return crc32.Checksum(b[offAttributes:], castagnoli) }

// SetLogAppendTime stamps the batch with the broker's clock, as a topic with
// message.timestamp.type=LogAppendTime asks: the timestamp type bit and the
// max timestamp change, so the CRC is recomputed.
func (b Batch) SetLogAppendTime(nowMs int64) {
	attrs := uint16(b.Attributes()) | attrLogAppendTime
	binary.BigEndian.PutUint16(b[offAttributes:], attrs)
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(nowMs))
	binary.BigEndian.PutUint32(b[offCRC:], b.ComputeCRC())
}

// SetMaxTimestamp writes the batch's max timestamp, as Kafka's broker does
// with what the records really hold; the CRC is recomputed only when the
// value changes.
func (b Batch) SetMaxTimestamp(ts int64) {
	if b.MaxTimestamp() == ts {
		return
	}
	binary.BigEndian.PutUint64(b[offMaxTimestamp:], uint64(ts))
	binary.BigEndian.PutUint32(b[offCRC:], b.ComputeCRC())
}

// Split takes the first batch off buf by its length fields alone, without
// checking its contents. It returns ok=false when buf holds less than a whole
// batch, which is how a torn tail or the end of a fetch response looks.
func Split(buf []byte) (b Batch, rest []byte, ok bool) {
	if len(buf) < LogOverhead {
		return nil, buf, false
	}
	n := int64(int32(binary.BigEndian.Uint32(buf[offLength:])))
	if n < HeaderSize-LogOverhead || int64(len(buf)) < LogOverhead+n {
		return nil, buf, false
	}
	end := LogOverhead + int(n)
	return Batch(buf[:end:end]), buf[end:], true
}
