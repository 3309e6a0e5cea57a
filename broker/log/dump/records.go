package dump

import (
	"encoding/binary"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/record"
)

// records prints the records of one batch (--deep). A batch whose records
// do not decode is a problem under --verify and a note otherwise.
func (d *dumper) records(path string, pos int64, b record.Batch) {
	recs, err := b.DecodeRecords()
	if err != nil {
		msg := fmt.Sprintf("batch at position %d (offsets %d-%d): cannot decode records: %v", pos, b.BaseOffset(), b.LastOffset(), err)
		if d.opts.Verify {
			d.report([]Problem{{File: path, Entry: -1, Message: msg}})
		} else {
			d.p.note(path, msg)
		}
		return
	}
	tsType := timestampType(b)
	for i := range recs {
		r := &recs[i]
		info := RecordInfo{
			Offset:        b.RecordOffset(r),
			TimestampType: tsType,
			Timestamp:     b.RecordTimestamp(r),
			KeySize:       nullableLen(r.Key),
			ValueSize:     nullableLen(r.Value),
			Sequence:      sequenceAt(b.BaseSequence(), r.OffsetDelta),
			HeaderKeys:    make([]string, len(r.Headers)),
		}
		for j, h := range r.Headers {
			info.HeaderKeys[j] = h.Key
		}
		if b.Control() {
			info.Control = controlRecord(r)
		} else if d.opts.PrintData {
			info.Key = printableOrNil(r.Key)
			info.Payload = printableOrNil(r.Value)
			for _, h := range r.Headers {
				info.Headers = append(info.Headers, HeaderInfo{Key: h.Key, Value: printableOrNil(h.Value)})
			}
		}
		d.p.record(path, &info)
	}
}

// nullableLen is Kafka's keySize/valueSize: -1 for null.
func nullableLen(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}

// Control record types, from the key of a control record:
// int16 version, int16 type (Kafka's ControlRecordType).
var controlTypes = map[int16]string{
	0: "ABORT",
	1: "COMMIT",
	2: "LEADER_CHANGE",
	3: "SNAPSHOT_HEADER",
	4: "SNAPSHOT_FOOTER",
	5: "KRAFT_VERSION",
	6: "KRAFT_VOTERS",
}

// controlRecord describes a control record as Kafka's DumpLogSegments does.
// A transaction marker's value is int16 version, int32 coordinator epoch.
func controlRecord(r *kmsg.Record) string {
	if len(r.Key) < 4 {
		return fmt.Sprintf("controlType: UNKNOWN (%d-byte key)", len(r.Key))
	}
	typ := int16(binary.BigEndian.Uint16(r.Key[2:]))
	name, ok := controlTypes[typ]
	if !ok {
		name = "UNKNOWN"
	}
	if (typ == 0 || typ == 1) && len(r.Value) >= 6 {
		return fmt.Sprintf("endTxnMarker: %s coordinatorEpoch: %d", name, int32(binary.BigEndian.Uint32(r.Value[2:])))
	}
	return fmt.Sprintf("controlType: %s(%d)", name, typ)
}
