package replica

import (
	"github.com/tributary-io/tributary/broker/record"
)

// AppendAsFollower appends batches fetched from the leader, keeping their
// offsets and epochs, and records their producers, so that this replica
// deduplicates a producer's retries the same way if it becomes the leader.
// leaderHW is the leader's high watermark from the same fetch.
func (p *Partition) AppendAsFollower(batches []byte, leaderHW int64) error {
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if len(batches) > 0 {
		if _, err := p.Log.AppendAsFollower(batches); err != nil {
			return err
		}
		p.applyLocked(batches, p.now().UnixMilli())
	}
	p.followHW(leaderHW)
	return nil
}

// AppendFetched takes what one partition of a fetch from the leader
// returned: its batches, and the leader's high watermark and log start.
//
// DeleteRecords (KIP-107) moves a log start to any offset while batches
// stay whole, so a replica that has nothing and asks from its leader's log
// start receives the batch holding it, which begins earlier:
// AppendAsFollower would refuse it as behind the log end, and the replica
// would ask again forever. An empty log restarts at that batch instead, as
// Kafka's follower does on UnexpectedAppendOffsetException. Then the log
// start follows the leader's, so that a failover does not bring deleted
// records back.
func (p *Partition) AppendFetched(batches []byte, leaderHW, leaderStart int64) error {
	first, _, ok := record.Split(batches)
	start, end := p.Log.LogStartOffset(), p.Log.LogEndOffset()
	if ok && start == end && first.BaseOffset() < end && first.LastOffset() >= end {
		if err := p.ResetTo(first.BaseOffset()); err != nil {
			return err
		}
	}
	if err := p.AppendAsFollower(batches, leaderHW); err != nil {
		return err
	}
	// Kafka bounds the move by the follower's high watermark, as the
	// leader's DeleteRecords is bounded by its own.
	if to := min(leaderStart, p.HighWatermark()); to > p.Log.LogStartOffset() {
		return p.Log.DeleteRecordsBefore(to)
	}
	return nil
}

// followHW sets a follower's high watermark from its leader's: what the
// leader committed, of what this replica has, and never below its own log
// start, as Kafka clamps it: a log started from remote storage may start
// past a new leader's high watermark for a moment, and a consumer reading
// from this replica must not see a high watermark below the log start.
func (p *Partition) followHW(leaderHW int64) {
	if leaderHW < 0 {
		return
	}
	hw := max(min(leaderHW, p.Log.LogEndOffset()), p.Log.LogStartOffset())
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	if hw != p.hw.Load() {
		p.hw.Store(hw)
		p.wakeLocked()
	}
}

// TruncateTo removes the log's records from offset on, where it diverged
// from the new leader's, and rebuilds the producer state without them.
// Below the log start (a log started from remote storage, whose new
// leader's history diverges before it) the log is emptied and starts at
// offset, with no producers and no epochs, as Kafka's UnifiedLog.truncateTo
// does: the next fetch finds where the leader's log is and rebuilds or
// copies from there.
func (p *Partition) TruncateTo(offset int64) error {
	p.snapMu.Lock()
	defer p.snapMu.Unlock()
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if offset >= p.Log.LogEndOffset() {
		return nil
	}
	if start := p.Log.LogStartOffset(); offset < start {
		return p.resetLocked(offset, "truncated below the log start")
	}
	before := p.Log.LogEndOffset()
	if err := p.Log.TruncateTo(offset); err != nil {
		return err
	}
	// Loading drops the snapshots past the new log end.
	if err := p.rebuildProducers(); err != nil {
		return err
	}
	p.stateMu.Lock()
	if p.hw.Load() > p.Log.LogEndOffset() {
		p.hw.Store(p.Log.LogEndOffset())
	}
	p.stateMu.Unlock()
	p.logger.Info("truncated a divergent tail", "from", offset, "log_end_offset_was", before, "log_end_offset", p.Log.LogEndOffset())
	return nil
}

// ResetTo empties the log and restarts it at the leader's log start,
// when this replica's log ends before it (a new replica of a partition
// whose old records were deleted), or, for an empty log, at the batch that
// holds the leader's log start (AppendFetched).
func (p *Partition) ResetTo(offset int64) error {
	p.snapMu.Lock()
	defer p.snapMu.Unlock()
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	return p.resetLocked(offset, "log emptied and restarted")
}

// resetLocked empties the log at offset. The producer snapshots go first
// (Kafka's truncateFullyAndStartAt deletes them all): the newest at or
// below offset would otherwise be loaded as the state of a log that holds
// none of its batches. snapMu and appendMu must be held.
func (p *Partition) resetLocked(offset int64, msg string) error {
	if err := p.snaps.DeleteAbove(-1); err != nil {
		return err
	}
	before := p.Log.LogEndOffset()
	if err := p.Log.ResetTo(offset); err != nil {
		return err
	}
	if err := p.rebuildProducers(); err != nil {
		return err
	}
	p.stateMu.Lock()
	p.hw.Store(offset)
	p.stateMu.Unlock()
	p.logger.Info(msg, "offset", offset, "log_end_offset_was", before)
	return nil
}

// divergence is where this replica's log must be truncated, given the
// leader's answer to OffsetForLeaderEpoch for our last epoch: the end of
// the newest epoch both logs share (KIP-279). The leader answered with
// (epoch, end); when that epoch is older than ours, our own end of it may
// be earlier than the leader's. With no epoch in common (the leader
// answered -1), the high watermark is the only bound we know.
func (p *Partition) divergence(leaderEpoch int32, leaderEnd int64) int64 {
	leo := p.Log.LogEndOffset()
	if leaderEpoch < 0 || leaderEnd < 0 {
		return min(p.HighWatermark(), leo)
	}
	own, ok := p.Log.EndOffsetForEpoch(leaderEpoch)
	if !ok {
		return min(p.HighWatermark(), leo)
	}
	// own is our newest epoch at or below the leader's answer, with where
	// it ends here (in the StartOffset field, as EndOffsetForEpoch says).
	return min(own.StartOffset, leaderEnd, leo)
}

// lastEpoch is the leader epoch of the log's last batch, -1 when empty.
func (p *Partition) lastEpoch() int32 {
	es := p.Log.LeaderEpochs()
	if len(es) == 0 {
		return -1
	}
	return es[len(es)-1].Epoch
}
