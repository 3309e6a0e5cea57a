package remotelog

import (
	"encoding/binary"
	"fmt"
)

// AbortedTxn is an entry of a transaction index: a producer's transaction
// that was aborted, from its first offset to the offset of its abort
// marker.
type AbortedTxn struct {
	ProducerID  int64
	FirstOffset int64
	LastOffset  int64
	// LastStableOffset is the partition's last stable offset when the
	// transaction ended: a reader collecting the aborted transactions up
	// to an offset below it need look no further (Kafka's
	// TxnIndexSearchResult.isComplete).
	LastStableOffset int64
}

// txnIndexEntrySize is the size of an entry of Kafka's transaction index:
//
//	version int16 (0), producerId int64, firstOffset int64,
//	lastOffset int64 (the abort marker's), lastStableOffset int64
//
// The index of a segment holds the transactions whose abort marker is in
// that segment; their records may lie in earlier segments.
const txnIndexEntrySize = 34

// ParseTxnIndex decodes a transaction index. A torn last entry is
// ignored (a broker that crashed while appending rebuilds it; an uploaded
// index is whole), an unknown version is an error.
func ParseTxnIndex(data []byte) ([]AbortedTxn, error) {
	be := binary.BigEndian
	var out []AbortedTxn
	for ; len(data) >= txnIndexEntrySize; data = data[txnIndexEntrySize:] {
		if v := be.Uint16(data); v != 0 {
			return nil, fmt.Errorf("remotelog: transaction index entry of version %d", v)
		}
		out = append(out, AbortedTxn{ProducerID: int64(be.Uint64(data[2:])), FirstOffset: int64(be.Uint64(data[10:])),
			LastOffset: int64(be.Uint64(data[18:])), LastStableOffset: int64(be.Uint64(data[26:]))})
	}
	return out, nil
}

// Covers reports whether a transactional batch of producer pid at offset
// belongs to this aborted transaction.
func (a AbortedTxn) Covers(pid, offset int64) bool {
	return a.ProducerID == pid && a.FirstOffset <= offset && offset <= a.LastOffset
}
