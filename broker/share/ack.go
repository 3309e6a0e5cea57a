package share

import "github.com/twmb/franz-go/pkg/kerr"

// AcknowledgeBatches applies one request's acknowledgement batches for
// this partition all or nothing, as Kafka's SharePartition.acknowledge
// (which rolls back every state change of the request on any error):
// every batch is checked first, and only when all are valid is any
// applied. Batches must be ascending and not overlap (the handlers
// refuse others with INVALID_REQUEST first, as Kafka's
// validateAcknowledgementBatches; this check keeps the all-or-nothing
// promise for any caller). Offsets below the SPSO are already finished
// and are skipped, as Kafka skips already archived offsets.
func (p *Partition) AcknowledgeBatches(member string, batches []AckBatch, limit int16, now, lock int64) (released bool, err *kerr.Error) {
	return p.ackBatches(member, batches, limit, now, lock, nil)
}

// ackBatches is AcknowledgeBatches; with t set, every state change is
// held as part of t (undoable, see settle) until its write ends.
func (p *Partition) ackBatches(member string, batches []AckBatch, limit int16, now, lock int64, tx *txn) (released bool, err *kerr.Error) {
	prev := int64(-1)
	clipped := make([]AckBatch, 0, len(batches))
	for _, b := range batches {
		if b.Last < b.First || b.First <= prev && prev >= 0 || len(b.Types) == 0 ||
			len(b.Types) != 1 && int64(len(b.Types)) != b.Last-b.First+1 {
			return false, kerr.InvalidRequest
		}
		prev = b.Last
		for _, t := range b.Types {
			if t < AckGap || t > AckRenew {
				return false, kerr.InvalidRequest
			}
		}
		if b.Last < p.spso {
			continue
		}
		if b.First < p.spso {
			if len(b.Types) > 1 {
				b.Types = b.Types[p.spso-b.First:]
			}
			b.First = p.spso
		}
		if b.Last >= p.end {
			return false, kerr.InvalidRecordState
		}
		for off := b.First; off <= b.Last; off++ {
			if r := p.recs[off-p.spso]; r.state != Acquired || r.owner != member {
				return false, kerr.InvalidRecordState
			}
		}
		clipped = append(clipped, b)
	}
	// Every batch is valid and they do not overlap, so applying one
	// cannot make a later one fail; slide (which moves the indexes) runs
	// once at the end.
	for _, b := range clipped {
		for off := b.First; off <= b.Last; off++ {
			t := b.Types[0]
			if len(b.Types) > 1 {
				t = b.Types[off-b.First]
			}
			r := &p.recs[off-p.spso]
			if t != AckRenew && tx != nil {
				// A lock renewal is not persisted (deadlines are not), so
				// it has nothing to undo.
				prev := *r
				r.tx, r.undo = tx, &prev
			}
			switch t {
			case AckAccept:
				r.state, r.owner, r.deadline = Acknowledged, "", 0
			case AckGap, AckReject:
				r.state, r.owner, r.deadline = Archived, "", 0
			case AckRelease:
				// Held back until the write commits (settle reports it).
				released = p.release(r, limit) && tx == nil || released
			case AckRenew:
				r.deadline = now + lock
				continue
			}
			p.dirty = true
		}
	}
	p.slide()
	return released, nil
}
