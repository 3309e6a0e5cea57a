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
// The rules are Kafka's (KRaft's PartitionChangeBuilder), without eligible
// leader replicas (KIP-966):
//   - a new leader comes from the ISR, preferring the replicas' order;
//   - a fenced broker leaves every ISR it is in, except that the last member
//     stays, so that the partition remembers who holds its committed data
//     and waits for that broker rather than elect one that may lack it;
//   - with no live ISR member the partition has no leader (offline), unless
//     unclean.leader.election.enable lets any live replica take over.

// live reports whether broker id is registered and unfenced in img.
func live(img *Image, id int32) bool {
	b, ok := img.Brokers[id]
	return ok && !b.Fenced
}

// change is one partition's next state, bumping the leader epoch when the
// leader changes and the partition epoch on every change.
func change(p Partition, leader int32, isr []int32) (Partition, bool) {
	if leader == p.Leader && slices.Equal(isr, p.ISR) {
		return p, false
	}
	n := p
	n.ISR = isr
	if leader != p.Leader {
		n.Leader = leader
		n.LeaderEpoch++
	}
	n.PartitionEpoch++
	return n, true
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

// uncleanAllowed is the topic's unclean.leader.election.enable.
func (c *Controller) uncleanAllowed(t *Topic) bool {
	if v, ok := t.Configs["unclean.leader.election.enable"]; ok {
		b, err := strconv.ParseBool(v)
		return err == nil && b
	}
	return c.cfg.Bool("unclean.leader.election.enable")
}

// fenceRecords take broker id out of every ISR (except as the last member)
// and its partitions' leadership to another ISR member, in img, where id is
// already fenced.
func (c *Controller) fenceRecords(img *Image, id int32) []Record {
	var rs []Record
	for _, name := range img.TopicNames() {
		t := img.Topics[name]
		for _, p := range t.Partitions {
			if p.Leader != id && !slices.Contains(p.ISR, id) {
				continue
			}
			isr := p.ISR
			if len(isr) > 1 {
				isr = slices.DeleteFunc(slices.Clone(isr), func(r int32) bool { return r == id })
			}
			leader := p.Leader
			if leader == id || leader < 0 {
				leader = electFrom(img, p, isr)
				if leader < 0 && c.uncleanAllowed(t) {
					if leader = electFrom(img, p, p.Replicas); leader >= 0 {
						isr = []int32{leader}
						c.logger.Warn("unclean leader election: records the old ISR held may be lost",
							"topic", t.Name, "partition", p.Index, "leader", leader)
					}
				}
			}
			if np, ok := change(p, leader, isr); ok {
				rs = append(rs, Record{Partition: &PartitionRecord{TopicID: t.ID, Partition: np}})
			}
		}
	}
	return rs
}

// unfenceRecords give broker id, now live in img, the leadership of the
// offline partitions whose ISR holds it.
func (c *Controller) unfenceRecords(img *Image, id int32) []Record {
	var rs []Record
	for _, name := range img.TopicNames() {
		t := img.Topics[name]
		for _, p := range t.Partitions {
			if p.Leader >= 0 {
				continue
			}
			leader := electFrom(img, p, p.ISR)
			if leader < 0 {
				continue
			}
			if np, ok := change(p, leader, p.ISR); ok {
				rs = append(rs, Record{Partition: &PartitionRecord{TopicID: t.ID, Partition: np}})
			}
		}
	}
	return rs
}

// preferredRecord moves p's leadership to its preferred (first) replica,
// when that replica is live, in the ISR and not already the leader.
func preferredRecord(img *Image, t *Topic, p Partition) (Record, *kerr.Error) {
	pref := p.Replicas[0]
	switch {
	case p.Leader == pref:
		return Record{}, kerr.ElectionNotNeeded
	case !live(img, pref) || !slices.Contains(p.ISR, pref):
		return Record{}, kerr.PreferredLeaderNotAvailable
	}
	np, _ := change(p, pref, p.ISR)
	return Record{Partition: &PartitionRecord{TopicID: t.ID, Partition: np}}, nil
}

// uncleanRecord elects a leader for an offline partition from any live
// replica, making it the whole ISR: what only the old ISR had is lost.
func uncleanRecord(img *Image, t *Topic, p Partition) (Record, *kerr.Error) {
	if p.Leader >= 0 && live(img, p.Leader) {
		return Record{}, kerr.ElectionNotNeeded
	}
	leader := electFrom(img, p, p.ISR)
	isr := p.ISR
	if leader < 0 {
		if leader = electFrom(img, p, p.Replicas); leader < 0 {
			return Record{}, kerr.EligibleLeadersNotAvailable
		}
		isr = []int32{leader}
	}
	np, _ := change(p, leader, isr)
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
			rec, code := preferredRecord(img, t, p)
			if unclean {
				rec, code = uncleanRecord(img, t, p)
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
				if rec, code := preferredRecord(img, t, p); code == nil {
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
		np, changed := change(p, p.Leader, slices.Clone(ch.ISR))
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
