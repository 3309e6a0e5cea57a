package cluster

import (
	"slices"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Partition leadership and ISR changes. Each is computed by the active
// controller from the image it is about to extend (see change), so that two
// changes to one partition never both start from the same state.
//
// The rules are Kafka's (KRaft's PartitionChangeBuilder), with eligible
// leader replicas (KIP-966):
//   - a new leader comes from the ISR, preferring the replicas' order;
//   - a fenced broker leaves every ISR it is in, the last member too;
//   - replicas that leave an ISR smaller than min.insync.replicas become
//     eligible leader replicas (ELR): the leader's high watermark stops
//     while the ISR is that small, so they hold every committed record.
//     With no live ISR member a live ELR member leads (and is the ISR);
//     with neither the partition has no leader (offline) and waits for
//     one, unless unclean.leader.election.enable lets any live replica
//     take over. The ELR empties once the ISR is large enough again;
//   - a broker that restarted after an unclean shutdown leaves the ELRs,
//     since what it had not flushed may be gone, unless it is the only
//     replica left that may hold the committed records (see Register).

// live reports whether broker id is registered and unfenced in img.
func live(img *Image, id int32) bool {
	b, ok := img.Brokers[id]
	return ok && !b.Fenced
}

// transition is p's next state with leader and isr, bumping the leader
// epoch when the leader changes and the partition epoch on every change,
// and keeping the ELR (see above).
func (c *Controller) transition(t *Topic, p Partition, leader int32, isr []int32) (Partition, bool) {
	elr := c.eligible(t, p, isr)
	if leader == p.Leader && slices.Equal(isr, p.ISR) && slices.Equal(elr, p.ELR) {
		return p, false
	}
	n := p
	n.ISR, n.ELR = isr, elr
	if leader != p.Leader {
		n.Leader = leader
		n.LeaderEpoch++
	}
	n.PartitionEpoch++
	return n, true
}

// eligible is p's ELR once its ISR is isr: the members leaving an ISR
// below the effective min.insync.replicas join it, members back in the ISR
// leave it, and it empties when the ISR is large enough.
func (c *Controller) eligible(t *Topic, p Partition, isr []int32) []int32 {
	if len(isr) >= c.effectiveMinISR(t, p) {
		return nil
	}
	var elr []int32
	for _, r := range append(slices.Clone(p.ELR), p.ISR...) {
		if !slices.Contains(isr, r) && !slices.Contains(elr, r) && slices.Contains(p.Replicas, r) {
			elr = append(elr, r)
		}
	}
	return elr
}

// effectiveMinISR is the topic's min.insync.replicas, at most its
// replication factor (a larger one could never be met).
func (c *Controller) effectiveMinISR(t *Topic, p Partition) int {
	n := int(c.cfg.Int("min.insync.replicas"))
	if v, ok := t.Configs["min.insync.replicas"]; ok {
		if m, err := strconv.Atoi(v); err == nil {
			n = m
		}
	}
	return min(n, len(p.Replicas))
}

// electFrom picks the first replica, in the replicas' order, that is live
// and in candidates; -1 when none is.
func electFrom(img *Image, p Partition, candidates []int32) int32 {
	for _, r := range p.Replicas {
		if slices.Contains(candidates, r) && live(img, r) {
			return r
		}
	}
	return -1
}

// electOffline gives an offline partition a leader: a live ELR member, or
// with unclean any live replica; it becomes the whole ISR. p is returned
// unchanged when there is none.
func (c *Controller) electOffline(img *Image, t *Topic, p Partition, unclean bool) Partition {
	if leader := electFrom(img, p, p.ELR); leader >= 0 {
		np, _ := c.transition(t, p, leader, []int32{leader})
		return np
	}
	if !unclean {
		return p
	}
	leader := electFrom(img, p, p.Replicas)
	if leader < 0 {
		return p
	}
	c.logger.Warn("unclean leader election: records the old ISR held may be lost",
		"topic", t.Name, "partition", p.Index, "leader", leader)
	np, _ := c.transition(t, p, leader, []int32{leader})
	np.ELR = nil
	return np
}

// uncleanAllowed is the topic's unclean.leader.election.enable.
func (c *Controller) uncleanAllowed(t *Topic) bool {
	if v, ok := t.Configs["unclean.leader.election.enable"]; ok {
		b, err := strconv.ParseBool(v)
		return err == nil && b
	}
	return c.cfg.Bool("unclean.leader.election.enable")
}

// partitionRecords are the records of the partitions that next changes,
// over every partition of img in topic order; next returns p itself to
// leave it (every change bumps the partition epoch).
func partitionRecords(img *Image, next func(t *Topic, p Partition) Partition) []Record {
	var rs []Record
	for _, name := range img.TopicNames() {
		t := img.Topics[name]
		for _, p := range t.Partitions {
			if np := next(t, p); np.PartitionEpoch != p.PartitionEpoch {
				rs = append(rs, Record{Partition: &PartitionRecord{TopicID: t.ID, Partition: np}})
			}
		}
	}
	return rs
}

// fenceRecords take broker id out of every ISR and its partitions'
// leadership to another ISR member (or ELR member), in img, where id is
// already fenced.
func (c *Controller) fenceRecords(img *Image, id int32) []Record {
	return partitionRecords(img, func(t *Topic, p Partition) Partition {
		if p.Leader != id && !slices.Contains(p.ISR, id) {
			return p
		}
		isr := slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == id })
		leader := p.Leader
		if leader == id || leader < 0 {
			leader = electFrom(img, p, isr)
		}
		np, _ := c.transition(t, p, leader, isr)
		if np.Leader < 0 {
			np = c.electOffline(img, t, np, c.uncleanAllowed(t))
		}
		return np
	})
}

// unfenceRecords give broker id, now live in img, the leadership of the
// offline partitions whose ISR or ELR holds it.
func (c *Controller) unfenceRecords(img *Image, id int32) []Record {
	return partitionRecords(img, func(t *Topic, p Partition) Partition {
		if p.Leader >= 0 {
			return p
		}
		if leader := electFrom(img, p, p.ISR); leader >= 0 {
			np, _ := c.transition(t, p, leader, p.ISR)
			return np
		}
		return c.electOffline(img, t, p, c.uncleanAllowed(t))
	})
}

// uncleanRestartRecords take broker id, which restarted after an unclean
// shutdown, out of the ELRs where another replica may hold the committed
// records (in the ISR or ELR): what it had not flushed may be gone, and it
// must not lead and have the others truncate to its log. Where it is the
// only such replica it stays: its log is the best there is.
func (c *Controller) uncleanRestartRecords(img *Image, id int32) []Record {
	return partitionRecords(img, func(t *Topic, p Partition) Partition {
		if !slices.Contains(p.ELR, id) || len(p.ISR)+len(p.ELR) < 2 {
			return p
		}
		np := p
		np.ELR = slices.DeleteFunc(slices.Clone(p.ELR), func(r int32) bool { return r == id })
		np.PartitionEpoch++
		c.logger.Info("broker restarted uncleanly: no longer an eligible leader", "topic", t.Name, "partition", p.Index, "node_id", id, "elr", np.ELR)
		return np
	})
}

// preferredRecord moves p's leadership to its preferred (first) replica,
// when that replica is live, in the ISR and not already the leader.
func (c *Controller) preferredRecord(img *Image, t *Topic, p Partition) (Record, *kerr.Error) {
	pref := p.Replicas[0]
	switch {
	case p.Leader == pref:
		return Record{}, kerr.ElectionNotNeeded
	case !live(img, pref) || !slices.Contains(p.ISR, pref):
		return Record{}, kerr.PreferredLeaderNotAvailable
	}
	np, _ := c.transition(t, p, pref, p.ISR)
	return Record{Partition: &PartitionRecord{TopicID: t.ID, Partition: np}}, nil
}

// uncleanRecord elects a leader for an offline partition from any live
// replica, making it the whole ISR: what only the old ISR had is lost. A
// live ISR or ELR member is taken first, losing nothing.
func (c *Controller) uncleanRecord(img *Image, t *Topic, p Partition) (Record, *kerr.Error) {
	if p.Leader >= 0 && live(img, p.Leader) {
		return Record{}, kerr.ElectionNotNeeded
	}
	var np Partition
	if leader := electFrom(img, p, p.ISR); leader >= 0 {
		np, _ = c.transition(t, p, leader, p.ISR)
	} else {
		np = c.electOffline(img, t, p, true)
	}
	if np.PartitionEpoch == p.PartitionEpoch {
		return Record{}, kerr.EligibleLeadersNotAvailable
	}
	return Record{Partition: &PartitionRecord{TopicID: t.ID, Partition: np}}, nil
}

// ElectionResult is one partition's outcome of ElectLeaders: nil when a
// leader was elected.
type ElectionResult struct {
	Topic     string
	Partition int32
	Err       *Error
}

// ElectLeaders moves leadership to the preferred replicas (KAFKA-930), or
// with unclean elects a leader for offline partitions from any live replica.
// partitions maps topics to partition indexes; nil means every partition.
func (c *Controller) ElectLeaders(unclean bool, partitions map[string][]int32) ([]ElectionResult, error) {
	if !c.IsActive() {
		return nil, errNotController(c.activeID())
	}
	var results []ElectionResult
	err := c.change(func(img *Image) ([]Record, error) {
		results = results[:0]
		var rs []Record
		elect := func(t *Topic, p Partition) {
			rec, code := c.preferredRecord(img, t, p)
			if unclean {
				rec, code = c.uncleanRecord(img, t, p)
			}
			res := ElectionResult{Topic: t.Name, Partition: p.Index}
			if code != nil {
				res.Err = errorf(code, "partition %s-%d: %s", t.Name, p.Index, code.Description)
			} else {
				rs = append(rs, rec)
			}
			results = append(results, res)
		}
		if partitions == nil {
			for _, name := range img.TopicNames() {
				for _, p := range img.Topics[name].Partitions {
					elect(img.Topics[name], p)
				}
			}
			return rs, nil
		}
		for name, idx := range partitions {
			t, ok := img.Topics[name]
			for _, i := range idx {
				if !ok || i < 0 || int(i) >= len(t.Partitions) {
					results = append(results, ElectionResult{Topic: name, Partition: i,
						Err: errorf(kerr.UnknownTopicOrPartition, "partition %s-%d does not exist", name, i)})
					continue
				}
				elect(t, t.Partitions[i])
			}
		}
		return rs, nil
	})
	return results, err
}

// rebalanceLeaders is auto.leader.rebalance.enable: every preferred replica
// that can lead again does.
func (c *Controller) rebalanceLeaders() error {
	return c.change(func(img *Image) ([]Record, error) {
		var rs []Record
		for _, name := range img.TopicNames() {
			t := img.Topics[name]
			for _, p := range t.Partitions {
				if rec, code := c.preferredRecord(img, t, p); code == nil {
					rs = append(rs, rec)
				}
			}
		}
		return rs, nil
	})
}

// ISRChange is a partition leader's request to change its ISR (Kafka's
// AlterPartition), made from the leader and partition epochs it knows.
type ISRChange struct {
	TopicID        TopicID
	Partition      int32
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	ISR            []int32
}

// AlterPartition commits a leader's ISR change and returns the partition as
// committed. A leader whose epochs are behind is refused (FENCED_LEADER_EPOCH
// or INVALID_UPDATE_VERSION) and learns the current state from the metadata;
// a replica that is fenced cannot join (INELIGIBLE_REPLICA).
func (c *Controller) AlterPartition(ch ISRChange) (Partition, error) {
	if !c.IsActive() {
		return Partition{}, errNotController(c.activeID())
	}
	var out Partition
	err := c.change(func(img *Image) ([]Record, error) {
		t, ok := img.ByID[ch.TopicID]
		if !ok || ch.Partition < 0 || int(ch.Partition) >= len(t.Partitions) {
			return nil, errorf(kerr.UnknownTopicOrPartition, "no partition %d of topic id %s", ch.Partition, ch.TopicID)
		}
		p := t.Partitions[ch.Partition]
		switch {
		case ch.Leader != p.Leader || ch.LeaderEpoch != p.LeaderEpoch:
			return nil, errorf(kerr.FencedLeaderEpoch, "%s-%d: leader %d epoch %d, not %d epoch %d", t.Name, p.Index, p.Leader, p.LeaderEpoch, ch.Leader, ch.LeaderEpoch)
		case ch.PartitionEpoch != p.PartitionEpoch:
			return nil, errorf(kerr.InvalidUpdateVersion, "%s-%d: partition epoch is %d, not %d", t.Name, p.Index, p.PartitionEpoch, ch.PartitionEpoch)
		case !slices.Contains(ch.ISR, p.Leader):
			return nil, errorf(kerr.InvalidRequest, "%s-%d: the ISR must hold the leader %d", t.Name, p.Index, p.Leader)
		}
		for _, r := range ch.ISR {
			if !slices.Contains(p.Replicas, r) {
				return nil, errorf(kerr.InvalidRequest, "%s-%d: %d is not a replica", t.Name, p.Index, r)
			}
			if !slices.Contains(p.ISR, r) && !live(img, r) {
				return nil, errorf(kerr.IneligibleReplica, "%s-%d: broker %d is fenced and cannot join the ISR", t.Name, p.Index, r)
			}
		}
		np, changed := c.transition(t, p, p.Leader, slices.Clone(ch.ISR))
		if changed {
			np = c.completeReassignment(img, np)
		}
		out = np
		if !changed {
			return nil, nil
		}
		return []Record{{Partition: &PartitionRecord{TopicID: t.ID, Partition: np}}}, nil
	})
	return out, err
}
