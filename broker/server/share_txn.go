package server

import (
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/broker/replica"
	"github.com/tributary-io/tributary/broker/share"
)

// share.isolation.level=read_committed on the ShareFetch path. The group
// acquires only below the last stable offset; the data batches of aborted
// transactions among what it acquired are archived and left out of the
// answer, as Kafka's SharePartition.filterAbortedTransactionalAcquired-
// Records. Which batches are aborted is decided as a read_committed
// consumer decides it (Kafka's CompletedFetch): a producer's records are
// aborted from the first offset of an aborted transaction of it (the
// transaction index) up to its abort marker. Transaction markers
// themselves stay acquired, as under read_uncommitted: clients
// acknowledge them as gaps.

// shareAbortedTxns are the aborted transactions with records in
// [from, to): the local transaction index and, below the local log start
// of a tiered topic, the uploaded .txnindex files (wait is set while
// those are fetched).
func (s *Server) shareAbortedTxns(part *replica.Partition, from, to int64) (out []replica.AbortedTxn, wait <-chan struct{}, err error) {
	out = part.AbortedTxns(from, to)
	if s.tier == nil || from >= part.Log.LogStartOffset() {
		return out, nil, nil
	}
	remote, wait, err := s.tier.AbortedTxns(part.TP, from, to)
	if err != nil || wait != nil {
		return nil, wait, err
	}
	for _, a := range remote {
		t := replica.AbortedTxn{ProducerID: a.ProducerID, FirstOffset: a.FirstOffset}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil, nil
}

// abortedBatches are the offset ranges of the data batches in b (whole
// batches in offset order) that belong to aborted transactions.
func abortedBatches(b []byte, aborted []replica.AbortedTxn) [][2]int64 {
	if len(aborted) == 0 {
		return nil
	}
	aborted = slices.Clone(aborted)
	slices.SortFunc(aborted, func(x, y replica.AbortedTxn) int { return cmp.Compare(x.FirstOffset, y.FirstOffset) })
	open := map[int64]bool{} // producers inside an aborted transaction
	var out [][2]int64
	for len(b) >= record.HeaderSize {
		n := record.LogOverhead + int(int32(binary.BigEndian.Uint32(b[8:12])))
		if n > len(b) || n < record.HeaderSize {
			break
		}
		batch := record.Batch(b[:n])
		b = b[n:]
		for len(aborted) > 0 && aborted[0].FirstOffset <= batch.LastOffset() {
			open[aborted[0].ProducerID] = true
			aborted = aborted[1:]
		}
		pid := batch.ProducerID()
		switch {
		case batch.Control():
			// A marker of a producer in an aborted transaction is the
			// abort marker that ends it.
			if typ, ok := batch.ControlType(); ok && typ == record.ControlAbort {
				delete(open, pid)
			}
		case batch.Transactional() && open[pid]:
			out = append(out, [2]int64{batch.BaseOffset(), batch.LastOffset()})
		}
	}
	return out
}

// splitAborted splits acquired ranges into the offsets outside the
// aborted batches (kept) and inside them (dropped).
func splitAborted(ranges []share.Range, aborted [][2]int64) (kept, dropped []share.Range) {
	add := func(out []share.Range, off int64, count int16) []share.Range {
		if n := len(out); n > 0 && out[n-1].Last == off-1 && out[n-1].Count == count {
			out[n-1].Last = off
			return out
		}
		return append(out, share.Range{First: off, Last: off, Count: count})
	}
	i := 0
	for _, r := range ranges {
		for off := r.First; off <= r.Last; off++ {
			for i < len(aborted) && aborted[i][1] < off {
				i++
			}
			if i < len(aborted) && aborted[i][0] <= off {
				dropped = add(dropped, off, r.Count)
			} else {
				kept = add(kept, off, r.Count)
			}
		}
	}
	return kept, dropped
}

// withoutBatches is b without the batches whose base offsets start the
// aborted ranges.
func withoutBatches(b []byte, aborted [][2]int64) []byte {
	skip := map[int64]bool{}
	for _, a := range aborted {
		skip[a[0]] = true
	}
	var out []byte
	for len(b) >= record.HeaderSize {
		n := record.LogOverhead + int(int32(binary.BigEndian.Uint32(b[8:12])))
		if n > len(b) || n < record.HeaderSize {
			break
		}
		if !skip[record.Batch(b[:n]).BaseOffset()] {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}
