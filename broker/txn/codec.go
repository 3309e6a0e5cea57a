package txn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// The records of __transaction_state are Kafka's: the key is
// TransactionLogKey (version int16 0, transactional id), the value
// TransactionLogValue version 0, so that Kafka's tools and a Kafka broker
// reading our log agree:
//
//	version int16 (0), producerId int64, producerEpoch int16,
//	transactionTimeoutMs int32, transactionStatus int8,
//	transactionPartitions nullable array of (topic string,
//	partitionIds array of int32), transactionLastUpdateTimestampMs int64,
//	transactionStartTimestampMs int64
//
// A nil value (tombstone) removes the transactional id.
//
// Version 1 (flexible: compact arrays and strings, tag buffers) is written
// only when a v2 transaction (KIP-890) needs its tagged fields: tag 0
// PreviousProducerId int64, tag 1 NextProducerId int64 (the id a commit
// whose epoch overflowed moves to once its markers are written), tag 2
// ClientTransactionVersion int16. A v0 reader, as ours was, cannot read
// it; every Kafka 4.x reads both.

// Status is a transaction's state, with Kafka's numbering.
type Status int8

const (
	Empty Status = iota
	Ongoing
	PrepareCommit
	PrepareAbort
	CompleteCommit
	CompleteAbort
	Dead
	PrepareEpochFence
)

var statusNames = [...]string{"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit", "CompleteAbort", "Dead", "PrepareEpochFence"}

func (s Status) String() string {
	if int(s) < len(statusNames) && s >= 0 {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", int8(s))
}

// TP is a topic partition of a transaction.
type TP struct {
	Topic     string
	Partition int32
}

// value is what a record of the log says about one transactional id.
type value struct {
	ProducerID int64
	Epoch      int16
	TimeoutMs  int32
	Status     Status
	Partitions []TP // sorted
	LastUpdate int64
	Start      int64
	// Version 1's tagged fields; -1, -1, 0 when absent.
	PrevProducerID, NextProducerID int64
	ClientTV                       int16
}

func encodeKey(id string) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint16(b, uint16(len(id)))
	return append(b, id...)
}

func decodeKey(b []byte) (string, error) {
	if len(b) < 4 {
		return "", errors.New("short key")
	}
	if v := binary.BigEndian.Uint16(b); v != 0 {
		return "", fmt.Errorf("key version %d", v)
	}
	n := int(binary.BigEndian.Uint16(b[2:]))
	if len(b) < 4+n {
		return "", errors.New("short key")
	}
	return string(b[4 : 4+n]), nil
}

func encodeValue(v value) []byte {
	if v.ClientTV >= 2 || v.PrevProducerID >= 0 || v.NextProducerID >= 0 {
		return encodeValueV1(v)
	}
	be := binary.BigEndian
	b := be.AppendUint16(nil, 0)
	b = be.AppendUint64(b, uint64(v.ProducerID))
	b = be.AppendUint16(b, uint16(v.Epoch))
	b = be.AppendUint32(b, uint32(v.TimeoutMs))
	b = append(b, byte(v.Status))
	if v.Status == Empty {
		b = be.AppendUint32(b, 0xffffffff) // null, as Kafka writes an empty transaction
	} else {
		byTopic := map[string][]int32{}
		var topics []string
		for _, tp := range v.Partitions {
			if _, ok := byTopic[tp.Topic]; !ok {
				topics = append(topics, tp.Topic)
			}
			byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
		}
		b = be.AppendUint32(b, uint32(len(topics)))
		for _, t := range topics {
			b = be.AppendUint16(b, uint16(len(t)))
			b = append(b, t...)
			b = be.AppendUint32(b, uint32(len(byTopic[t])))
			for _, p := range byTopic[t] {
				b = be.AppendUint32(b, uint32(p))
			}
		}
	}
	b = be.AppendUint64(b, uint64(v.LastUpdate))
	return be.AppendUint64(b, uint64(v.Start))
}

func encodeValueV1(v value) []byte {
	be := binary.BigEndian
	b := be.AppendUint16(nil, 1)
	b = be.AppendUint64(b, uint64(v.ProducerID))
	b = be.AppendUint16(b, uint16(v.Epoch))
	b = be.AppendUint32(b, uint32(v.TimeoutMs))
	b = append(b, byte(v.Status))
	if v.Status == Empty {
		b = binary.AppendUvarint(b, 0) // null
	} else {
		byTopic := map[string][]int32{}
		var topics []string
		for _, tp := range v.Partitions {
			if _, ok := byTopic[tp.Topic]; !ok {
				topics = append(topics, tp.Topic)
			}
			byTopic[tp.Topic] = append(byTopic[tp.Topic], tp.Partition)
		}
		b = binary.AppendUvarint(b, uint64(len(topics)+1))
		for _, t := range topics {
			b = binary.AppendUvarint(b, uint64(len(t)+1))
			b = append(b, t...)
			b = binary.AppendUvarint(b, uint64(len(byTopic[t])+1))
			for _, p := range byTopic[t] {
				b = be.AppendUint32(b, uint32(p))
			}
			b = binary.AppendUvarint(b, 0) // no tags
		}
	}
	b = be.AppendUint64(b, uint64(v.LastUpdate))
	b = be.AppendUint64(b, uint64(v.Start))
	type tag struct {
		n    uint64
		data []byte
	}
	var tags []tag
	if v.PrevProducerID >= 0 {
		tags = append(tags, tag{0, be.AppendUint64(nil, uint64(v.PrevProducerID))})
	}
	if v.NextProducerID >= 0 {
		tags = append(tags, tag{1, be.AppendUint64(nil, uint64(v.NextProducerID))})
	}
	if v.ClientTV != 0 {
		tags = append(tags, tag{2, be.AppendUint16(nil, uint16(v.ClientTV))})
	}
	b = binary.AppendUvarint(b, uint64(len(tags)))
	for _, t := range tags {
		b = binary.AppendUvarint(b, t.n)
		b = binary.AppendUvarint(b, uint64(len(t.data)))
		b = append(b, t.data...)
	}
	return b
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil || len(r.b) < n {
		r.err = errors.New("short value")
		return make([]byte, n)
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}
func (r *reader) i8() int8   { return int8(r.take(1)[0]) }
func (r *reader) i16() int16 { return int16(binary.BigEndian.Uint16(r.take(2))) }
func (r *reader) i32() int32 { return int32(binary.BigEndian.Uint32(r.take(4))) }
func (r *reader) i64() int64 { return int64(binary.BigEndian.Uint64(r.take(8))) }

func decodeValue(b []byte) (value, error) {
	r := &reader{b: b}
	v := value{PrevProducerID: -1, NextProducerID: -1}
	ver := r.i16()
	if r.err == nil && (ver < 0 || ver > 1) {
		return v, fmt.Errorf("value version %d", ver)
	}
	flexible := ver >= 1
	uvarint := func() int {
		n, k := binary.Uvarint(r.b)
		if k <= 0 {
			r.err = errors.New("bad varint")
			return 0
		}
		r.b = r.b[k:]
		return int(n)
	}
	v.ProducerID, v.Epoch, v.TimeoutMs, v.Status = r.i64(), r.i16(), r.i32(), Status(r.i8())
	var n int
	if flexible {
		n = uvarint() - 1
	} else {
		n = int(r.i32())
	}
	for range max(n, 0) {
		var tl int
		if flexible {
			tl = uvarint() - 1
		} else {
			tl = int(r.i16())
		}
		topic := string(r.take(max(tl, 0)))
		var pn int
		if flexible {
			pn = uvarint() - 1
		} else {
			pn = int(r.i32())
		}
		for range max(pn, 0) {
			v.Partitions = append(v.Partitions, TP{topic, r.i32()})
		}
		if flexible {
			skipTags(r, uvarint)
		}
		if r.err != nil {
			return v, r.err
		}
	}
	v.LastUpdate, v.Start = r.i64(), r.i64()
	if flexible && r.err == nil {
		for n := uvarint(); n > 0 && r.err == nil; n-- {
			tag, size := uvarint(), uvarint()
			data := r.take(size)
			switch {
			case tag == 0 && size == 8:
				v.PrevProducerID = int64(binary.BigEndian.Uint64(data))
			case tag == 1 && size == 8:
				v.NextProducerID = int64(binary.BigEndian.Uint64(data))
			case tag == 2 && size == 2:
				v.ClientTV = int16(binary.BigEndian.Uint16(data))
			}
		}
	}
	SortTPs(v.Partitions)
	return v, r.err
}

func skipTags(r *reader, uvarint func() int) {
	for n := uvarint(); n > 0 && r.err == nil; n-- {
		uvarint()
		r.take(uvarint())
	}
}

func SortTPs(tps []TP) {
	slices.SortFunc(tps, func(a, b TP) int {
		if a.Topic != b.Topic {
			if a.Topic < b.Topic {
				return -1
			}
			return 1
		}
		return int(a.Partition - b.Partition)
	})
}
