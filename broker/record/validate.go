package record

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Error is a batch the broker must refuse. Kafka is the error code the broker
// answers with; errors.Is(err, kerr.CorruptMessage) and the like work on it.
type Error struct {
	Kafka  *kerr.Error
	Reason string
	// Records are the records that made the batch refused, when the
	// fault is theirs rather than the batch's (Produce v8+ RecordErrors).
	Records []RecordError
}

func (e *Error) Error() string { return "broker/record: " + e.Reason }
func (e *Error) Unwrap() error { return e.Kafka }

func errorf(code *kerr.Error, format string, args ...any) error {
	return &Error{Kafka: code, Reason: fmt.Sprintf(format, args...)}
}

// KafkaCode is the Kafka error for err: its own code when it is a record
// error, UNKNOWN_SERVER_ERROR otherwise.
func KafkaCode(err error) *kerr.Error {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke
	}
	return kerr.UnknownServerError
}

// Origin says who wrote a batch, which decides how strictly it is checked.
type Origin int

const (
	// FromClient is a producer's batch: dense offsets from 0, no control
	// records, at most MaxBytes.
	FromClient Origin = iota
	// FromReplica is a batch copied from a leader's log: it may have offset
	// gaps (compaction) and control records, and any size the leader took.
	FromReplica
)

// Limits are the topic settings a batch is checked against. Only MaxBytes
// applies to a replica's batch; the rest are rules for clients' records.
type Limits struct {
	// MaxBytes is max.message.bytes: the largest batch, header included.
	// It is also the floor of DecompressLimit.
	MaxBytes int
	// Compact says cleanup.policy includes compact: every record needs a
	// key.
	Compact bool
	// LogAppendTime says message.timestamp.type=LogAppendTime: the broker
	// stamps the batch, so record timestamps are not checked, but a
	// producer may not claim LogAppendTime itself.
	LogAppendTime bool
	// NowMs is the broker's clock for the timestamp bounds; 0 checks no
	// timestamps (tools that write logs directly).
	NowMs int64
	// TimestampBeforeMaxMs and TimestampAfterMaxMs are
	// message.timestamp.before.max.ms and .after.max.ms (KIP-937): how far
	// behind and ahead of NowMs a CreateTime record's timestamp may be.
	TimestampBeforeMaxMs, TimestampAfterMaxMs int64
	// Budget, if not nil, is what is left of the request's decompression
	// budget; checking a compressed batch spends from it.
	Budget *Budget
	// Partition names the partition in messages, as Kafka's do; a
	// Stringer, so that naming costs nothing until a record is refused.
	Partition fmt.Stringer
}

// Validate checks one batch before it is appended; Check says what it does.
func Validate(b Batch, origin Origin, lim Limits) error {
	_, err := Check(b, origin, lim)
	return err
}

// Check checks one batch before it is appended. A replica's batch is
// checked as the leader stored it: its header, its CRC and, uncompressed,
// the framing of its records, with no decompression (the leader checked
// the records). A client's batch is checked record by record, decompressed
// if need be (checkRecords), against the topic's rules in lim; what Check
// learns then is in Checked.
func Check(b Batch, origin Origin, lim Limits) (Checked, error) {
	if err := checkHeader(b, origin, lim); err != nil {
		return Checked{}, err
	}
	if origin == FromClient {
		return checkRecords(b, lim)
	}
	if b.Codec() == CodecNone {
		return Checked{}, checkFraming(b)
	}
	return Checked{}, nil
}

func checkHeader(b Batch, origin Origin, lim Limits) error {
	if len(b) < HeaderSize {
		return errorf(kerr.CorruptMessage, "batch of %d bytes is shorter than the %d-byte header", len(b), HeaderSize)
	}
	if got := int(b.Length()) + LogOverhead; got != len(b) {
		return errorf(kerr.CorruptMessage, "batch length field says %d bytes, batch has %d", got, len(b))
	}
	switch m := b.Magic(); {
	case m < Magic:
		return errorf(kerr.UnsupportedForMessageFormat, "magic %d: only record format v2 is supported", m)
	case m > Magic:
		return errorf(kerr.CorruptMessage, "unknown magic %d", m)
	}
	if want := b.ComputeCRC(); b.CRC() != want {
		return errorf(kerr.CorruptMessage, "crc %08x, computed %08x", b.CRC(), want)
	}
	if origin == FromClient && lim.MaxBytes > 0 && len(b) > lim.MaxBytes {
		return errorf(kerr.MessageTooLarge, "batch of %d bytes is larger than max.message.bytes=%d", len(b), lim.MaxBytes)
	}
	if c := b.Codec(); c > CodecZstd {
		return errorf(kerr.UnsupportedCompressionType, "compression codec %d", c)
	}
	n, delta := b.RecordCount(), b.LastOffsetDelta()
	if n < 0 || delta < 0 {
		return errorf(kerr.CorruptMessage, "record count %d, last offset delta %d", n, delta)
	}
	if origin == FromClient {
		if b.Control() {
			return errorf(kerr.InvalidRecord, "clients may not write control batches")
		}
		if n == 0 {
			return errorf(kerr.InvalidRecord, "batch has no records")
		}
		if delta != n-1 {
			return errorf(kerr.InvalidRecord, "last offset delta %d does not match %d records", delta, n)
		}
		if b.ProducerID() >= 0 && b.BaseSequence() < 0 {
			return errorf(kerr.InvalidRecord, "invalid sequence number %d in a batch of producer id %d", b.BaseSequence(), b.ProducerID())
		}
	}
	return nil
}

// checkFraming walks the length prefixes of an uncompressed batch's records:
// they must fill the records section exactly and number RecordCount.
func checkFraming(b Batch) error {
	buf := b.Records()
	var n int32
	for len(buf) > 0 {
		size, used := varint32(buf)
		if used <= 0 || size < 0 || len(buf)-used < int(size) {
			return errorf(kerr.CorruptMessage, "record %d: bad length prefix", n)
		}
		buf = buf[used+int(size):]
		n++
	}
	if n != b.RecordCount() {
		return errorf(kerr.CorruptMessage, "batch says %d records, holds %d", b.RecordCount(), n)
	}
	return nil
}
