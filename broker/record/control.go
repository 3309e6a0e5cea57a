package record

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Control record types: the key of a transaction marker's one record is
// version (int16, 0) and type (int16), as Kafka's ControlRecordType.
const (
	ControlAbort  int16 = 0
	ControlCommit int16 = 1
)

// ControlType is the type of a control batch's first record (its marker):
// ControlAbort or ControlCommit for a transaction marker. ok is false for a
// batch that is not a whole, uncompressed control batch (markers are never
// compressed).
func (b Batch) ControlType() (typ int16, ok bool) {
	if len(b) < HeaderSize || !b.Control() || b.Codec() != CodecNone || b.RecordCount() < 1 {
		return 0, false
	}
	buf := b.Records()
	length, n := varint32(buf)
	if n <= 0 || length < 0 || len(buf)-n < int(length) {
		return 0, false
	}
	body := buf[n : n+int(length)]
	if len(body) < 1 {
		return 0, false
	}
	body = body[1:] // attributes
	for range 2 {   // timestamp delta, offset delta
		_, k := binary.Varint(body)
		if k <= 0 {
			return 0, false
		}
		body = body[k:]
	}
	keyLen, k := binary.Varint(body)
	if k <= 0 || keyLen < 4 || int64(len(body)-k) < keyLen {
		return 0, false
	}
	key := body[k:]
	return int16(binary.BigEndian.Uint16(key[2:])), true
}

// MarkerBatch is a transaction marker of a producer: a control batch of one
// record whose key is the marker type and whose value is Kafka's
// EndTransactionMarker (version 0, the coordinator epoch), at offset 0.
func MarkerBatch(producerID int64, epoch int16, commit bool, coordinatorEpoch int32, nowMs int64) (Batch, error) {
	typ := ControlAbort
	if commit {
		typ = ControlCommit
	}
	key := binary.BigEndian.AppendUint16(nil, 0)
	key = binary.BigEndian.AppendUint16(key, uint16(typ))
	value := binary.BigEndian.AppendUint16(nil, 0)
	value = binary.BigEndian.AppendUint32(value, uint32(coordinatorEpoch))
	opts := DefaultBuildOptions()
	opts.Control, opts.Transactional = true, true
	opts.ProducerID, opts.ProducerEpoch, opts.BaseSequence = producerID, epoch, -1
	opts.BaseTimestamp = nowMs
	return Build(opts, []kmsg.Record{{Key: key, Value: value}})
}
