package replica

import (
	"math"
	"slices"
	"sync"
	"time"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/config"
)

// Replication quotas (KIP-73), as kafka-reassign-partitions --throttle sets
// them: a topic lists the replicas to throttle
// (leader.replication.throttled.replicas names the leaders,
// follower.replication.throttled.replicas the followers, as
// partition:broker pairs or *), and each broker's dynamic configs give the
// rates (leader.replication.throttled.rate,
// follower.replication.throttled.rate) shared by all its throttled
// replicas.
//
// Only a follower out of the ISR is throttled, as in Kafka: a throttle left
// on a topic never slows the replicas that acks=all waits for.
//
//   - The follower leaves a throttled partition out of its fetch while its
//     quota is spent, and charges what it fetched for such partitions.
//   - The leader answers a throttled follower with no records while its
//     quota is spent (the fetch waits until it is not, up to its max wait),
//     and charges what it served to such followers.
//
// A quota is a debt that drains at the rate: a fetch is allowed while
// nothing is owed, and then owes what it brought. The rate over any long
// stretch is the configured one, overshot at most by one fetch (the
// partitions' replica.fetch.max.bytes) and 100 ms of credit, where Kafka's
// windowed rate may burst by a whole window. The leader charges the bytes
// it sends, as Kafka's does, including the part of a batch that ends a
// fetch cut at its byte limit, which the follower fetches again: with 1 MB
// batches the copy runs at about 95 % of the throttle (docs/cluster.md).

// quota is one broker-wide replication quota.
type quota struct {
	mu   sync.Mutex
	debt float64 // bytes not yet paid for at the rate; below 0, credit
	last time.Time
}

// credit is how long a quota may save up while no throttled fetch comes,
// so that the round trip between two fetches (a few milliseconds, more on
// a loaded machine) is not lost from the rate.
const credit = 100 * time.Millisecond

// unlimited is the rates' default, Long.MAX_VALUE: no throttle.
const unlimited = math.MaxInt64

// drainLocked pays the debt for the time since the last call. mu must be
// held.
func (q *quota) drainLocked(rate int64, now time.Time) {
	if !q.last.IsZero() {
		q.debt = max(-float64(rate)*credit.Seconds(), q.debt-float64(rate)*now.Sub(q.last).Seconds())
	}
	q.last = now
}

// wait is how long until the quota allows a fetch at rate: 0 when it does.
func (q *quota) wait(rate int64, now time.Time) time.Duration {
	if rate >= unlimited {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.drainLocked(rate, now)
	if q.debt <= 0 {
		return 0
	}
	if rate <= 0 {
		return time.Second // a rate of 0 stops throttled replication
	}
	return time.Duration(q.debt / float64(rate) * float64(time.Second))
}

// record charges n bytes fetched or served.
func (q *quota) record(rate int64, n int64, now time.Time) {
	if rate >= unlimited || n <= 0 {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.drainLocked(rate, now)
	q.debt += float64(n)
}

// throttles are whether a partition's replication is throttled here.
type throttles struct {
	leader   bool // this broker is listed as the partition's throttled leader
	follower bool // this broker is listed as the partition's throttled follower
}

// throttlesOf reads a topic's throttled-replicas lists for one partition
// and this broker.
func throttlesOf(t *cluster.Topic, partition, self int32) throttles {
	has := func(key string) bool {
		v, ok := t.Configs[key]
		if !ok {
			return false
		}
		r, err := config.ParseThrottledReplicas(v)
		return err == nil && r.Has(partition, self)
	}
	return throttles{leader: has("leader.replication.throttled.replicas"), follower: has("follower.replication.throttled.replicas")}
}

func (p *Partition) setThrottles(th throttles) {
	p.leaderThrottled.Store(th.leader)
	p.followerThrottled.Store(th.follower)
}

// inISR reports whether replica is in the partition's ISR, as this broker
// last applied or changed it.
func (p *Partition) inISR(replica int32) bool {
	p.stateMu.Lock()
	defer p.stateMu.Unlock()
	return slices.Contains(p.meta.ISR, replica)
}

// LeaderThrottled reports whether what this leader serves follower of p is
// throttled, and if so how long until the leader's quota allows more.
func (m *Manager) LeaderThrottled(p *Partition, follower int32) (bool, time.Duration) {
	if !p.leaderThrottled.Load() || p.inISR(follower) {
		return false, 0
	}
	return true, m.leaderQuota.wait(m.cfg.Int("leader.replication.throttled.rate"), time.Now())
}

// RecordLeaderThrottled charges bytes served to a throttled follower.
func (m *Manager) RecordLeaderThrottled(n int64) {
	m.leaderQuota.record(m.cfg.Int("leader.replication.throttled.rate"), n, time.Now())
}

// followerThrottled reports whether this broker's fetching of p is
// throttled, and if so how long until its quota allows more.
func (m *Manager) followerThrottled(p *Partition) (bool, time.Duration) {
	if !p.followerThrottled.Load() || p.inISR(m.nodeID) {
		return false, 0
	}
	return true, m.followerQuota.wait(m.cfg.Int("follower.replication.throttled.rate"), time.Now())
}

func (m *Manager) recordFollowerThrottled(n int64) {
	m.followerQuota.record(m.cfg.Int("follower.replication.throttled.rate"), n, time.Now())
}
