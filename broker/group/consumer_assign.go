package group

import "sort"

// The server-side assignors of group.consumer.assignors. Both are
// deterministic: members in id order, partitions in topic-name and
// partition order, so that a coordinator that reloads the group computes
// what its predecessor would have.

// assignUniform spreads every subscribed partition over the members that
// subscribe to its topic, each member getting as many as any other within
// one, and is sticky: a partition stays with the member whose target holds
// it while that keeps the balance, so a member joining or leaving moves
// as few partitions as it must (Kafka's UniformAssignor has the same two
// goals; its exact choices differ).
func assignUniform(ids []string, subs map[string][]string, topics map[string]TopicMeta, prev map[string]tpSet) map[string]tpSet {
	out := make(map[string]tpSet, len(ids))
	for _, id := range ids {
		out[id] = tpSet{}
	}
	if len(ids) == 0 {
		return out
	}
	type part struct {
		topic string
		k     tpKey
	}
	subscribers := map[string][]string{}
	for _, id := range ids {
		for _, t := range subs[id] {
			subscribers[t] = append(subscribers[t], id)
		}
	}
	var all []part
	names := make([]string, 0, len(subscribers))
	for t := range subscribers {
		names = append(names, t)
	}
	sort.Strings(names)
	for _, t := range names {
		tm := topics[t]
		for p := int32(0); p < tm.Partitions; p++ {
			all = append(all, part{t, tpKey{tm.ID, p}})
		}
	}
	// Each member's quota: a fair share of the partitions it can take.
	// With identical subscriptions (the common case) this is exact; with
	// differing ones it is a bound the greedy pass below respects.
	quota := map[string]int{}
	eligible := map[string]int{}
	for _, p := range all {
		for _, id := range subscribers[p.topic] {
			eligible[id]++
		}
	}
	base, extra := len(all)/len(ids), len(all)%len(ids)
	for i, id := range ids {
		q := base
		if i < extra {
			q++
		}
		quota[id] = min(q, eligible[id])
	}
	subscribed := func(id, topic string) bool {
		for _, t := range subs[id] {
			if t == topic {
				return true
			}
		}
		return false
	}
	// Sticky pass: keep previous targets within the quota.
	taken := map[tpKey]bool{}
	for _, id := range ids {
		var kept []part
		for _, p := range all {
			if _, ok := prev[id][p.k]; ok && subscribed(id, p.topic) {
				kept = append(kept, p)
			}
		}
		for _, p := range kept {
			if len(out[id]) >= quota[id] {
				break
			}
			out[id][p.k] = struct{}{}
			taken[p.k] = true
		}
	}
	// Then every free partition to the least loaded subscriber, below its
	// quota when one is, else any (differing subscriptions).
	for _, p := range all {
		if taken[p.k] {
			continue
		}
		best := ""
		for _, id := range subscribers[p.topic] {
			if best == "" {
				best = id
				continue
			}
			under, bestUnder := len(out[id]) < quota[id], len(out[best]) < quota[best]
			if under && !bestUnder || under == bestUnder && len(out[id]) < len(out[best]) {
				best = id
			}
		}
		out[best][p.k] = struct{}{}
		taken[p.k] = true
	}
	return out
}

// assignRange gives each member subscribed to a topic a contiguous range
// of its partitions, the first members one more when they do not divide
// evenly, as Kafka's RangeAssignor: static members first by instance id,
// then the others by member id.
func assignRange(ids []string, subs map[string][]string, topics map[string]TopicMeta, members map[string]*cMember) map[string]tpSet {
	out := make(map[string]tpSet, len(ids))
	for _, id := range ids {
		out[id] = tpSet{}
	}
	order := append([]string(nil), ids...)
	sort.SliceStable(order, func(i, j int) bool {
		a, b := members[order[i]].InstanceID, members[order[j]].InstanceID
		switch {
		case a != nil && b != nil:
			return *a < *b
		case a != nil || b != nil:
			return a != nil
		}
		return order[i] < order[j]
	})
	subscribers := map[string][]string{}
	for _, id := range order {
		for _, t := range subs[id] {
			subscribers[t] = append(subscribers[t], id)
		}
	}
	for t, ms := range subscribers {
		tm := topics[t]
		n := int(tm.Partitions)
		base, extra := n/len(ms), n%len(ms)
		p := 0
		for i, id := range ms {
			c := base
			if i < extra {
				c++
			}
			for j := 0; j < c; j++ {
				out[id][tpKey{tm.ID, int32(p)}] = struct{}{}
				p++
			}
		}
	}
	return out
}
