package reassign

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Replication throttles for a move, as kafka-reassign-partitions --throttle
// sets them (KIP-73): on each topic of the plan,
// leader.replication.throttled.replicas lists the current replicas of every
// partition that moves (any of them may lead while the new ones copy) and
// follower.replication.throttled.replicas its new replicas; every broker
// that holds a replica before or after gets the rate as
// leader.replication.throttled.rate and follower.replication.throttled.rate.
// Only replicas out of the ISR are throttled, so the new ones copy at the
// rate and the others replicate as usual. Once the move is complete,
// verify removes them all, from every broker of the cluster.

// The names of the throttle configs.
const (
	LeaderThrottledReplicas   = "leader.replication.throttled.replicas"
	FollowerThrottledReplicas = "follower.replication.throttled.replicas"
	LeaderThrottledRate       = "leader.replication.throttled.rate"
	FollowerThrottledRate     = "follower.replication.throttled.rate"
)

// TopicThrottle is one topic's throttled-replicas lists.
type TopicThrottle struct {
	Leader, Follower string // "partition:broker,..."
}

// Throttles are the configs a throttled move sets.
type Throttles struct {
	Topics  map[string]TopicThrottle
	Brokers []int32 // every broker with a replica of a moving partition, before or after
}

// PlanThrottles are the throttles for moving each partition of cur (the
// current replicas) to plan's replicas. Partitions that do not move are
// left out.
func PlanThrottles(cur, plan []Partition) Throttles {
	type tp struct {
		topic string
		p     int32
	}
	now := map[tp][]int32{}
	for _, c := range cur {
		now[tp{c.Topic, c.Partition}] = c.Replicas
	}
	leaders, followers := map[string][]string{}, map[string][]string{}
	var brokers []int32
	add := func(ids ...int32) {
		for _, id := range ids {
			if !slices.Contains(brokers, id) {
				brokers = append(brokers, id)
			}
		}
	}
	sorted := slices.Clone(plan)
	Sort(sorted)
	for _, p := range sorted {
		old := now[tp{p.Topic, p.Partition}]
		if slices.Equal(old, p.Replicas) {
			continue
		}
		for _, r := range old {
			leaders[p.Topic] = append(leaders[p.Topic], fmt.Sprintf("%d:%d", p.Partition, r))
		}
		for _, r := range p.Replicas {
			if !slices.Contains(old, r) {
				followers[p.Topic] = append(followers[p.Topic], fmt.Sprintf("%d:%d", p.Partition, r))
			}
		}
		add(old...)
		add(p.Replicas...)
	}
	out := Throttles{Topics: map[string]TopicThrottle{}}
	for t, l := range leaders {
		out.Topics[t] = TopicThrottle{Leader: strings.Join(l, ","), Follower: strings.Join(followers[t], ",")}
	}
	sort.Slice(brokers, func(i, j int) bool { return brokers[i] < brokers[j] })
	out.Brokers = brokers
	return out
}
