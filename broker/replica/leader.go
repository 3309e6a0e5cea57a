package replica

import (
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/cluster"
)

// follower is what a leader knows of one follower, from its fetches.
type follower struct {
	leo int64 // its log end: the offset it last fetched from; -1 until it fetches
	// caughtUp is when it last had everything the leader had; a follower
	// in the ISR that has not caught up for replica.lag.time.max.ms leaves
	// it. Kafka's lastCaughtUpTimeMs: a fetch from the leader's log end
	// then, or from the log end at its previous fetch.
	caughtUp time.Time
	// Of its previous fetch: when, and the leader's log end then.
	lastFetch    time.Time
	leoLastFetch int64
}

// roleChange is what applying metadata changed for the partition's fetcher.
type roleChange struct {
	follow       bool  // this broker follows (rather than leads or is not a replica)
	leader       int32 // whom it follows
	epochChanged bool  // a new leader epoch: truncate before fetching again
}

// applyMeta takes the partition's state from the metadata: its leader,
// epochs, replicas and ISR, and the topic's min.insync.replicas. Becoming
// the leader starts tracking the followers afresh; any change wakes the
// acks=all produces waiting here, so that they notice a lost leadership.
func (p *Partition) applyMeta(m cluster.Partition, minISR int) roleChange {
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	p.minISR = min(minISR, len(m.Replicas))
	old := p.meta
	p.meta = m
	p.meta.Replicas, p.meta.ISR = slices.Clone(m.Replicas), slices.Clone(m.ISR)
	p.leaderEpoch.Store(m.LeaderEpoch)
	epochChanged := old.LeaderEpoch != m.LeaderEpoch || old.Leader != m.Leader || old.Replicas == nil
	if epochChanged || old.PartitionEpoch != m.PartitionEpoch {
		p.joining = nil // the metadata's ISR is the truth again
	}
	if m.Leader == p.self {
		if epochChanged || p.followers == nil {
			p.followers = map[int32]*follower{}
		}
		// Replicas come and go with reassignments, under one leader epoch.
		now := p.now()
		for _, r := range m.Replicas {
			if _, ok := p.followers[r]; !ok && r != p.self {
				// A full replica.lag.time.max.ms before it is judged.
				p.followers[r] = &follower{leo: -1, caughtUp: now, lastFetch: now}
			}
		}
		for r := range p.followers {
			if !slices.Contains(m.Replicas, r) {
				delete(p.followers, r)
			}
		}
		p.isrBusy = false
		p.advanceHWLocked()
	} else {
		p.followers = nil
	}
	p.wakeLocked()
	return roleChange{follow: m.Leader != p.self && m.Leader >= 0 && slices.Contains(m.Replicas, p.self),
		leader: m.Leader, epochChanged: epochChanged}
}

// stopLeading wakes the waiters of a partition that is going away.
func (p *Partition) stopLeading() {
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	p.followers = nil
	p.meta.Leader = -1
	p.wakeLocked()
}

// HWChanged returns a channel closed when the high watermark moves or the
// leadership changes: what consumers' long-polling fetches and acks=all
// produces wait on.
func (p *Partition) HWChanged() <-chan struct{} {
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	p.hwWakeOut = true
	return p.hwWake
}

func (p *Partition) wakeLocked() {
	if !p.hwWakeOut {
		return
	}
	close(p.hwWake)
	p.hwWake = make(chan struct{})
	p.hwWakeOut = false
}

func (p *Partition) advanceHW() {
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	p.advanceHWLocked()
}

// advanceHWLocked moves a leader's high watermark to the smallest log end
// of the ISR, and never past what the producer state has taken in (see
// Partition.applied); a follower that has not fetched yet holds it where it is. The
// high watermark never moves back, and stays while the ISR is smaller than
// min.insync.replicas (KIP-966): the replicas that left it then are the
// eligible leaders, and they must hold every committed record.
// stateMu must be held.
func (p *Partition) advanceHWLocked() {
	if p.meta.Leader != p.self || len(p.meta.ISR) < p.minISR {
		return
	}
	hw := p.applied.Load()
	for _, rs := range [2][]int32{p.meta.ISR, p.joining} {
		for _, r := range rs {
			if f, ok := p.followers[r]; ok {
				hw = min(hw, f.leo)
			}
		}
	}
	if hw > p.hw.Load() {
		p.hw.Store(hw)
		p.wakeLocked()
	}
}

// FollowerFetched records a follower's fetch from offset, on the leader:
// it has everything before offset. It may advance the high watermark, and
// returns an ISR change to ask the controller for when the follower caught
// up and is not in the ISR. A broker that is not a replica, or a leader
// that no longer leads, gets NOT_LEADER_OR_FOLLOWER.
func (p *Partition) FollowerFetched(replica int32, offset int64) (*cluster.ISRChange, *kerr.Error) {
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	f, ok := p.followers[replica]
	if p.meta.Leader != p.self || !ok {
		return nil, kerr.NotLeaderForPartition
	}
	now, leo := p.now(), p.Log.LogEndOffset()
	switch {
	case offset >= leo:
		f.caughtUp = now
	case offset >= f.leoLastFetch && f.leo >= 0:
		f.caughtUp = f.lastFetch
	}
	f.leo, f.lastFetch, f.leoLastFetch = offset, now, leo
	p.advanceHWLocked()
	// Kafka's rule for joining: the follower has reached the high watermark
	// and the start of this leader's epoch, so that it holds every record
	// the ISR committed and nothing of an older leader's divergent tail.
	if slices.Contains(p.meta.ISR, replica) || p.isrBusy || offset < p.hw.Load() || offset < p.epochStart() {
		return nil, nil
	}
	isr := append(slices.Clone(p.meta.ISR), replica)
	slices.Sort(isr)
	return p.isrChangeLocked(isr), nil
}

// epochStart is the first offset of the current leader epoch in the log,
// or the log end if this leader has not appended yet.
func (p *Partition) epochStart() int64 {
	if es := p.Log.LeaderEpochs(); len(es) > 0 && es[len(es)-1].Epoch == p.meta.LeaderEpoch {
		return es[len(es)-1].StartOffset
	}
	return p.Log.LogEndOffset()
}

func (p *Partition) isrChangeLocked(isr []int32) *cluster.ISRChange {
	p.isrBusy = true
	p.proposed = p.proposed[:0]
	for _, r := range isr {
		if !slices.Contains(p.meta.ISR, r) && !slices.Contains(p.joining, r) {
			p.proposed = append(p.proposed, r)
		}
	}
	p.joining = append(p.joining, p.proposed...)
	return &cluster.ISRChange{TopicID: p.TopicID, Partition: p.TP.Partition, Leader: p.self,
		LeaderEpoch: p.meta.LeaderEpoch, PartitionEpoch: p.meta.PartitionEpoch, ISR: isr}
}

// ISRChangeDone is called when an ISR change from this partition was
// answered: the next one may go. A refused change adds nobody; an accepted
// one's joiners count until the metadata has them.
func (p *Partition) ISRChangeDone(accepted bool) {
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	p.isrBusy = false
	if !accepted {
		p.joining = slices.DeleteFunc(p.joining, func(r int32) bool { return slices.Contains(p.proposed, r) })
		p.advanceHWLocked()
	}
	p.proposed = p.proposed[:0]
}

// ShrinkISR returns the ISR change that removes the followers that have not
// caught up within lag, on the leader, or nil.
func (p *Partition) ShrinkISR(lag time.Duration) *cluster.ISRChange {
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	if p.meta.Leader != p.self || p.isrBusy {
		return nil
	}
	now := p.now()
	isr := slices.DeleteFunc(slices.Clone(p.meta.ISR), func(r int32) bool {
		f, ok := p.followers[r]
		return ok && now.Sub(f.caughtUp) > lag
	})
	if len(isr) == len(p.meta.ISR) {
		return nil
	}
	p.logger.Info("shrinking the ISR: followers fell behind for longer than replica.lag.time.max.ms", "isr", p.meta.ISR, "new_isr", isr)
	return p.isrChangeLocked(isr)
}

// WaitCommitted waits until the high watermark passes offset (an acks=all
// produce). It fails with NOT_LEADER_OR_FOLLOWER when the leadership
// changes first, and REQUEST_TIMED_OUT at the deadline; once committed, an
// ISR smaller than minISR is NOT_ENOUGH_REPLICAS_AFTER_APPEND, as in Kafka.
func (p *Partition) WaitCommitted(offset int64, minISR int, deadline time.Time, stop <-chan struct{}) *kerr.Error {
	epoch := p.LeaderEpoch()
	for {
		p.stateMu.Lock()
		leading, isr := p.meta.Leader == p.self && p.meta.LeaderEpoch == epoch, len(p.meta.ISR)
		committed := p.hw.Load() > offset
		var wake chan struct{}
		if leading && !committed {
			// Taken only when waiting: a handed-out channel costs the
			// next high watermark move an allocation.
			wake, p.hwWakeOut = p.hwWake, true
		}
		p.stateMu.Unlock()
		switch {
		case !leading:
			return kerr.NotLeaderForPartition
		case committed:
			if isr < minISR {
				return kerr.NotEnoughReplicasAfterAppend
			}
			return nil
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return kerr.RequestTimedOut
		}
		t := time.NewTimer(wait)
		select {
		case <-wake:
		case <-stop:
			t.Stop()
			return kerr.NotLeaderForPartition
		case <-t.C:
		}
		t.Stop()
	}
}

// ISRSize is the number of in-sync replicas this broker knows of.
func (p *Partition) ISRSize() int {
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	return len(p.meta.ISR)
}
