package cluster

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Online partition reassignment (KAFKA-1074), as KRaft does it: the new
// replicas join the replica set and catch up as followers; once every
// target replica is in the ISR the old ones leave the replica set, and
// their brokers delete their copies.

// Reassign starts moving a partition to target replicas, in order (the
// first is the preferred leader); a nil target cancels a reassignment in
// progress, going back to the original replicas.
func (c *Controller) Reassign(topic string, partition int32, target []int32) error {
	if !c.IsActive() {
		return errNotController(c.activeID())
	}
	return c.change(func(img *Image) ([]Record, error) {
		t, ok := img.Topics[topic]
		if !ok || partition < 0 || int(partition) >= len(t.Partitions) {
			return nil, errorf(kerr.UnknownTopicOrPartition, "partition %s-%d does not exist", topic, partition)
		}
		p := t.Partitions[partition]
		if target == nil {
			if !p.Reassigning() {
				return nil, errorf(kerr.NoReassignmentInProgress, "no reassignment of %s-%d is in progress", topic, partition)
			}
			return []Record{{Partition: &PartitionRecord{TopicID: t.ID, Partition: c.finish(img, p, original(p))}}}, nil
		}
		if _, err := checkAssignment(img, [][]int32{target}, int(partition)); err != nil {
			return nil, err
		}
		current := p.Replicas
		if p.Reassigning() {
			current = original(p)
		}
		next := p
		next.Replicas = slices.Clone(target)
		next.Adding, next.Removing = nil, nil
		for _, r := range current {
			if !slices.Contains(target, r) {
				next.Replicas = append(next.Replicas, r)
				next.Removing = append(next.Removing, r)
			}
		}
		for _, r := range target {
			if !slices.Contains(current, r) {
				next.Adding = append(next.Adding, r)
			}
		}
		next.PartitionEpoch++
		next = c.completeReassignment(img, next)
		return []Record{{Partition: &PartitionRecord{TopicID: t.ID, Partition: next}}}, nil
	})
}

// original is the replica set a reassignment started from.
func original(p Partition) []int32 {
	var out []int32
	for _, r := range p.Replicas {
		if !slices.Contains(p.Adding, r) {
			out = append(out, r)
		}
	}
	return out
}

// target is the replica set a reassignment moves to.
func target(p Partition) []int32 {
	var out []int32
	for _, r := range p.Replicas {
		if !slices.Contains(p.Removing, r) {
			out = append(out, r)
		}
	}
	return out
}

// completeReassignment finishes p's reassignment when every target replica
// is in the ISR, and returns p unchanged otherwise.
func (c *Controller) completeReassignment(img *Image, p Partition) Partition {
	if !p.Reassigning() {
		return p
	}
	want := target(p)
	for _, r := range want {
		if !slices.Contains(p.ISR, r) {
			return p
		}
	}
	return c.finish(img, p, want)
}

// finish makes replicas p's replica set, keeping the ISR members among
// them and moving the leadership into them if it was outside.
func (c *Controller) finish(img *Image, p Partition, replicas []int32) Partition {
	n := p
	n.Replicas = slices.Clone(replicas)
	n.Adding, n.Removing = nil, nil
	n.ISR = slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return !slices.Contains(replicas, r) })
	n.ELR = slices.DeleteFunc(slices.Clone(p.ELR), func(r int32) bool { return !slices.Contains(replicas, r) })
	if len(n.ISR) == 0 {
		// Cancelled before any original replica was in sync again: keep
		// the ISR rather than leave the partition with none.
		n.ISR = slices.Clone(p.ISR)
		n.Replicas = append(n.Replicas, p.ISR...)
	}
	n.PartitionEpoch++
	if !slices.Contains(n.Replicas, p.Leader) || !live(img, p.Leader) {
		n.Leader = electFrom(img, n, n.ISR)
		n.LeaderEpoch++
	}
	return n
}

// Reassignment is a partition being moved.
type Reassignment struct {
	Topic     string
	Partition int32
	Replicas  []int32
	Adding    []int32
	Removing  []int32
}

// Reassignments lists the reassignments in progress, of the given
// partitions or (nil) all.
func (img *Image) Reassignments(partitions map[string][]int32) []Reassignment {
	var out []Reassignment
	add := func(t *Topic, p Partition) {
		if p.Reassigning() {
			out = append(out, Reassignment{Topic: t.Name, Partition: p.Index, Replicas: p.Replicas, Adding: p.Adding, Removing: p.Removing})
		}
	}
	for _, name := range img.TopicNames() {
		t := img.Topics[name]
		idx, asked := partitions[name]
		if partitions != nil && !asked {
			continue
		}
		for _, p := range t.Partitions {
			if partitions == nil || slices.Contains(idx, p.Index) {
				add(t, p)
			}
		}
	}
	return out
}
