package log

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/record"
)

// batchVerdict is what the cleaner does with one batch.
type batchVerdict int

const (
	batchCopied    batchVerdict = iota // every record survives: the bytes are kept
	batchRewritten                     // rebuilt from the survivors
	batchDropped                       // no record survives
)

// filterStats counts what filterBatch removed.
type filterStats struct {
	read, removed, tombstonesRemoved int64
	undecodable                      int64 // batches kept unread
	markersRemoved                   int64 // transaction markers dropped
}

// filterBatch decides which records of b survive a cleaning at nowMs and
// returns the batch to write in b's place (nil when none), following Kafka's
// MemoryRecords.filterTo and Cleaner.shouldRetainRecord. f is the
// transaction side's verdict (cleaner_txn.go: aborted batches, markers,
// producers' last batches).
//
//   - A batch f deletes is dropped whole.
//   - A marker keeps its one record unless f discards it; one whose
//     transaction has no batch left gets a delete horizon.
//   - A batch whose records do not decode is kept as it is: its CRC holds,
//     so it is what the producer sent (appends do not decompress), and the
//     cleaner cannot know which of its records are obsolete. Failing
//     instead would stop the log from ever being cleaned again.
//   - A record survives if it has a key and no later record in the offset
//     map has that key. A record without a key has no place in a compacted
//     log and is removed, as Kafka removes it.
//   - A tombstone (null value) survives, while it is the latest of its key,
//     until its batch's delete horizon (KIP-534) has passed. When a batch
//     with surviving tombstones has no horizon yet, this cleaning sets it to
//     now + delete.retention.ms, so consumers have that long to see the
//     delete before a later cleaning removes it.
//   - A batch whose records all survive, and that needs no new horizon, is
//     copied byte for byte. Otherwise the survivors are rebuilt into a batch
//     with the original codec and header, keeping the last offset delta so
//     that the batch still ends where it did: the producer's last sequence
//     and the next batch's offset follow from that end.
//   - A batch with no survivor is dropped, unless f retains it (its
//     producer's last): then its header stays, with no records, as
//     Kafka's writeEmptyHeader writes it.
func filterBatch(b record.Batch, om *offsetMap, nowMs int64, cfg *Config, f batchFate) (record.Batch, batchVerdict, filterStats, error) {
	if f.retention == deleteBatch {
		n := int64(b.RecordCount())
		st := filterStats{read: n, removed: n}
		if b.Control() {
			st.markersRemoved = 1
		}
		return nil, batchDropped, st, nil
	}
	if b.Control() && !f.discardRecords && !f.emptyTxnMarker {
		return b, batchCopied, filterStats{read: int64(b.RecordCount())}, nil
	}
	recs, err := b.DecodeRecords()
	if err != nil {
		return b, batchCopied, filterStats{read: int64(b.RecordCount()), undecodable: 1}, nil
	}
	st := filterStats{read: int64(len(recs))}
	deletesExpired := b.HasDeleteHorizon() && nowMs >= b.BaseTimestamp()
	kept := make([]kmsg.Record, 0, len(recs))
	tombstones := false
	for i := range recs {
		r := &recs[i]
		var keep bool
		switch {
		case f.discardRecords:
		case b.Control():
			keep = true
		default:
			keep = r.Key != nil && om.retain(r.Key, b.RecordOffset(r)) && (r.Value != nil || !deletesExpired)
		}
		if !keep {
			st.removed++
			if !b.Control() && r.Value == nil && r.Key != nil {
				st.tombstonesRemoved++
			}
			continue
		}
		tombstones = tombstones || (!b.Control() && r.Value == nil)
		kept = append(kept, *r)
	}
	needHorizon := (tombstones || f.emptyTxnMarker && b.Control()) && !b.HasDeleteHorizon()
	switch {
	case len(kept) == 0 && f.retention == retainEmpty:
		if len(recs) == 0 {
			return b, batchCopied, st, nil
		}
		out, err := emptyBatch(b)
		if err != nil {
			return nil, 0, st, err
		}
		return out, batchRewritten, st, nil
	case len(kept) == 0:
		if b.Control() && len(recs) > 0 {
			st.markersRemoved = 1
		}
		return nil, batchDropped, st, nil
	case len(kept) == len(recs) && !needHorizon:
		return b, batchCopied, st, nil
	}
	opts := b.BuildOptions()
	if !opts.LogAppendTime {
		// As Kafka does, the rebuilt batch's max timestamp is that of
		// its survivors.
		opts.MaxTimestamp = 0
	}
	if needHorizon {
		opts.DeleteHorizonMs = nowMs + cfg.DeleteRetentionMs.Milliseconds()
	}
	out, err := record.Build(opts, kept)
	if err != nil {
		return nil, 0, st, err
	}
	return out, batchRewritten, st, nil
}

// emptyBatch is b's header with no records, as Kafka's
// DefaultRecordBatch.writeEmptyHeader writes it: uncompressed, both
// timestamps the max timestamp, no delete horizon, the same offsets,
// producer, epoch, sequence and attributes.
func emptyBatch(b record.Batch) (record.Batch, error) {
	opts := b.BuildOptions()
	opts.Codec = record.CodecNone
	opts.BaseTimestamp, opts.MaxTimestamp = b.MaxTimestamp(), b.MaxTimestamp()
	opts.DeleteHorizonMs = 0
	return record.Build(opts, nil)
}
