package producer

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
)

// A producer snapshot is the state of a partition's idempotent producers
// after every batch below an offset, in the file <offset>.snapshot (20
// digits) of the partition directory. It is Apache Kafka's producer snapshot
// format, version 1, as ProducerStateManager writes it, so Kafka's
// DumpLogSegments reads ours. All integers are big endian.
//
//	offset  size  field
//	     0     2  version                 1
//	     2     4  crc                     CRC-32C (Castagnoli), unsigned, of
//	                                      bytes [6, end)
//	     6     4  entry count             n >= 0
//	    10  46*n  entries, sorted by producer id (Kafka does not sort; any
//	              order reads the same):
//
//	entry offset  size  field
//	           0     8  producerId
//	           8     2  producerEpoch
//	          10     4  lastSequence          of the producer's last batch
//	          14     8  lastOffset            of that batch; -1: no batch
//	          22     4  offsetDelta           lastOffset - the batch's first
//	                                          offset (= lastSequence - its
//	                                          first sequence, on the ring)
//	          26     8  timestamp             expiry reference, see below
//	          34     4  coordinatorEpoch      -1: no transactions yet
//	          38     8  currentTxnFirstOffset -1: no transactions yet
//
// What the format keeps, and what a reader must do:
//
//   - Only the last batch of each producer, as in Kafka. After a restart a
//     producer's remembered batches are that one plus those replayed from the
//     log after the snapshot's offset, so the retry of an older in-flight
//     batch is answered as Kafka answers it: OUT_OF_ORDER_SEQUENCE_NUMBER.
//   - timestamp: Kafka writes the last batch's max timestamp and expires
//     producers by it. We write the producer's expiry reference
//     (Entry.LastTimestamp: the broker's clock at its last append, or the
//     batch's max timestamp for a batch replayed from the log), and read it
//     back as both the batch's timestamp and the expiry reference, as Kafka
//     does.
//   - coordinatorEpoch is that of the producer's last marker, and
//     currentTxnFirstOffset the first offset of its open transaction: the
//     last stable offset after a restart starts from them.
//   - Any other version, a bad CRC, a length that is not 10+46n, or an
//     impossible entry (a negative producer id, or a batch with a negative
//     sequence or offset delta, or one starting below offset 0) makes the file
//     unusable (ErrCorruptSnapshot). A snapshot is only a shortcut: the
//     reader falls back to an older snapshot or to the log start, and the log
//     rebuilds the rest.
//
// Every constant below is part of the format. A new version would need
// Kafka's DumpLogSegments to read it too; until Kafka changes its own, there
// is none.
const (
	SnapshotVersion = 1

	snapshotHeaderSize = 10 // version, crc, entry count
	snapshotEntrySize  = 46
	snapshotCRCStart   = 6 // the CRC covers everything after itself
)

// SnapshotSuffix ends a producer snapshot's file name.
const SnapshotSuffix = ".snapshot"

// ErrCorruptSnapshot is a snapshot that cannot be used; the wrapping error
// says why.
var ErrCorruptSnapshot = errors.New("broker/producer: corrupt snapshot")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodeSnapshot is the snapshot file of s. A producer without a batch
// (never the case for state built by Update) is written with lastOffset -1,
// as Kafka writes one.
func EncodeSnapshot(s *State) []byte {
	pids := make([]int64, 0, len(s.producers))
	for pid := range s.producers {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	be := binary.BigEndian
	b := make([]byte, snapshotHeaderSize, snapshotHeaderSize+snapshotEntrySize*len(pids))
	be.PutUint16(b, SnapshotVersion)
	be.PutUint32(b[snapshotCRCStart:], uint32(len(pids)))
	for _, pid := range pids {
		e := s.producers[pid]
		lastSeq, lastOffset, delta := int32(-1), int64(-1), int32(0)
		if l := e.last(); l != nil {
			lastSeq, lastOffset, delta = l.LastSeq, l.LastOffset, int32(l.LastOffset-l.FirstOffset)
		}
		b = be.AppendUint64(b, uint64(pid))
		b = be.AppendUint16(b, uint16(e.Epoch))
		b = be.AppendUint32(b, uint32(lastSeq))
		b = be.AppendUint64(b, uint64(lastOffset))
		b = be.AppendUint32(b, uint32(delta))
		b = be.AppendUint64(b, uint64(e.LastTimestamp))
		b = be.AppendUint32(b, uint32(e.CoordinatorEpoch))
		b = be.AppendUint64(b, uint64(e.CurrentTxnFirstOffset))
	}
	be.PutUint32(b[2:], crc32.Checksum(b[snapshotCRCStart:], castagnoli))
	return b
}

// DecodeSnapshot reads a snapshot file into a State. Errors wrap
// ErrCorruptSnapshot.
func DecodeSnapshot(data []byte) (*State, error) {
	be := binary.BigEndian
	if len(data) < snapshotHeaderSize {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrCorruptSnapshot, len(data), snapshotHeaderSize)
	}
	if v := int16(be.Uint16(data)); v != SnapshotVersion {
		return nil, fmt.Errorf("%w: version %d, not %d", ErrCorruptSnapshot, v, SnapshotVersion)
	}
	if want, got := be.Uint32(data[2:]), crc32.Checksum(data[snapshotCRCStart:], castagnoli); want != got {
		return nil, fmt.Errorf("%w: CRC %d, computed %d", ErrCorruptSnapshot, want, got)
	}
	n := int64(int32(be.Uint32(data[snapshotCRCStart:])))
	if n < 0 || int64(len(data)-snapshotHeaderSize) != n*snapshotEntrySize {
		return nil, fmt.Errorf("%w: %d entries in %d bytes", ErrCorruptSnapshot, n, len(data))
	}
	s := &State{producers: make(map[int64]*Entry, n), open: map[int64]int64{}}
	for p := data[snapshotHeaderSize:]; len(p) > 0; p = p[snapshotEntrySize:] {
		pid := int64(be.Uint64(p))
		epoch := int16(be.Uint16(p[8:]))
		seq := int32(be.Uint32(p[10:]))
		lastOffset := int64(be.Uint64(p[14:]))
		delta := int32(be.Uint32(p[22:]))
		ts := int64(be.Uint64(p[26:]))
		if pid < 0 || lastOffset >= 0 && (seq < 0 || delta < 0 || lastOffset < int64(delta)) {
			return nil, fmt.Errorf("%w: producer %d with last sequence %d, last offset %d and offset delta %d", ErrCorruptSnapshot, pid, seq, lastOffset, delta)
		}
		coordEpoch := int32(be.Uint32(p[34:]))
		txnFirst := int64(be.Uint64(p[38:]))
		if txnFirst < -1 {
			return nil, fmt.Errorf("%w: producer %d with transaction first offset %d", ErrCorruptSnapshot, pid, txnFirst)
		}
		e := &Entry{ProducerID: pid, Epoch: epoch, LastTimestamp: ts, CoordinatorEpoch: coordEpoch, CurrentTxnFirstOffset: txnFirst}
		delete(s.open, pid)
		if txnFirst >= 0 {
			s.open[pid] = txnFirst
		}
		if lastOffset >= 0 {
			e.Batches = []BatchMeta{{
				FirstSeq: subSeq(seq, delta), LastSeq: seq,
				FirstOffset: lastOffset - int64(delta), LastOffset: lastOffset, Timestamp: ts,
			}}
		}
		s.producers[pid] = e // a repeated producer id: the last wins, as in Kafka
	}
	return s, nil
}
