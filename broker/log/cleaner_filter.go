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
}

// filterBatch decides which records of b survive a cleaning at nowMs and
// returns the batch to write in b's place (nil when none), following Kafka's
// MemoryRecords.filterTo and Cleaner.shouldRetainRecord:
//
//   - A control batch is kept as it is. (Kafka also removes transaction
//     markers once their transaction's records are gone and
//     delete.retention.ms has passed; Tributary keeps them.) A batch of an
//     aborted transaction is dropped whole, by the caller, which knows the
//     partition's transactions (Log.SetTxnView).
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
func filterBatch(b record.Batch, om *offsetMap, nowMs int64, cfg *Config) (record.Batch, batchVerdict, filterStats, error) {
	if b.Control() {
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
		keep := r.Key != nil && om.retain(r.Key, b.RecordOffset(r)) && (r.Value != nil || !deletesExpired)
		if !keep {
			st.removed++
			if r.Value == nil && r.Key != nil {
				st.tombstonesRemoved++
			}
			continue
		}
		tombstones = tombstones || r.Value == nil
		kept = append(kept, *r)
	}
	needHorizon := tombstones && !b.HasDeleteHorizon()
	switch {
	case len(kept) == 0:
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
