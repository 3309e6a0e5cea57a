package share

import (
	"slices"
	"sort"
)

// The `simple` share-group assignor, as Kafka 4.x's SimpleAssignor
// (SimpleHomogeneousAssignmentBuilder / SimpleHeterogeneousAssignment-
// Builder): balance first, then stickiness.
//
//   - Every partition is read by desiredSharing = ceil(members/partitions)
//     members: with more partitions than members each partition has one
//     reader and each member about partitions/members of them; with more
//     members than partitions several members share each partition, so
//     no member is left idle.
//   - Member i of M wants ceil(S·P·(i+1)/M) − ceil(S·P·i/M) partitions
//     (S·P slots spread evenly), so counts differ by at most one.
//   - What a member already has is kept unless it is over its count or
//     the partition is over-shared; only then do partitions move, and a
//     member that joins or leaves moves as few as that needs.
//   - When every member subscribes to the same topics their partitions
//     are balanced together (the homogeneous builder); otherwise each
//     topic is balanced over the members subscribed to it (the
//     heterogeneous builder), so a member of two topics may get more.
//
// Kafka walks hash maps where we walk member ids and partitions in
// order, and when it trims it takes whatever comes first where we take
// the most-shared partition or the fullest member: same counts and the
// same stickiness, deterministic choices.

type tpKey struct {
	topic     [16]byte
	partition int32
}

// assign recomputes every member's assignment from their previous one.
func (g *group) assign() {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	ms := make([]*member, len(ids))
	next := make([]map[tpKey]bool, len(ids))
	homogeneous := true
	for i, id := range ids {
		ms[i], next[i] = g.members[id], map[tpKey]bool{}
		homogeneous = homogeneous && slices.Equal(ms[i].topics, ms[0].topics)
	}
	partitions := func(topic string) []tpKey {
		tm, ok := g.shape[topic]
		if !ok {
			return nil
		}
		out := make([]tpKey, 0, tm.Partitions)
		for p := range tm.Partitions {
			// Only a partition not yet initialized is held back, never
			// its topic: the others stay where they are.
			if k := (tpKey{tm.ID, p}); g.ready == nil || g.ready[k] {
				out = append(out, k)
			}
		}
		return out
	}
	all := make([]int, len(ms))
	for i := range all {
		all[i] = i
	}
	if homogeneous && len(ms) > 0 {
		var targets []tpKey
		for _, t := range ms[0].topics {
			targets = append(targets, partitions(t)...)
		}
		spread(targets, ms, all, next)
	} else {
		for _, t := range g.subscribed() {
			var subs []int
			for i, m := range ms {
				if _, ok := slices.BinarySearch(m.topics, t); ok {
					subs = append(subs, i)
				}
			}
			spread(partitions(t), ms, subs, next)
		}
	}
	for i, m := range ms {
		m.assigned = map[[16]byte][]int32{}
		for k := range next[i] {
			m.assigned[k.topic] = append(m.assigned[k.topic], k.partition)
		}
		for _, ps := range m.assigned {
			slices.Sort(ps)
		}
	}
}

// spread assigns targets to the members ms[subs...], keeping what each
// held before (ms[i].assigned) where balance allows; next[i] receives
// member i's share of targets.
func spread(targets []tpKey, ms []*member, subs []int, next []map[tpKey]bool) {
	P, M := len(targets), len(subs)
	if P == 0 || M == 0 {
		return
	}
	sharing := (M + P - 1) / P
	slots := sharing * P
	desired := make([]int, M)
	for j := range desired {
		desired[j] = ceilDiv(slots*(j+1), M) - ceilDiv(slots*j, M)
	}
	isTarget := make(map[tpKey]bool, P)
	for _, k := range targets {
		isTarget[k] = true
	}
	have := make([]map[tpKey]bool, M)
	holders := make(map[tpKey][]int, P)
	for j, i := range subs {
		have[j] = map[tpKey]bool{}
		for topic, ps := range ms[i].assigned {
			for _, p := range ps {
				if k := (tpKey{topic, p}); isTarget[k] {
					have[j][k] = true
					holders[k] = append(holders[k], j)
				}
			}
		}
	}
	drop := func(j int, k tpKey) {
		delete(have[j], k)
		holders[k] = slices.DeleteFunc(holders[k], func(x int) bool { return x == j })
	}
	// Members over their count give up their most-shared partitions
	// first, so that nothing loses its last reader needlessly. A member's
	// own drops change only what it drops, so one sort of what it holds
	// orders all of them (ties: the later target first). This runs under
	// the manager's lock: rescanning every target per drop made a join
	// onto 10,000 partitions take seconds (review M2).
	index := make(map[tpKey]int, P)
	for i, k := range targets {
		index[k] = i
	}
	for j := range subs {
		over := len(have[j]) - desired[j]
		if over <= 0 {
			continue
		}
		type heldKey struct {
			k            tpKey
			readers, idx int
		}
		held := make([]heldKey, 0, len(have[j]))
		for k := range have[j] {
			held = append(held, heldKey{k, len(holders[k]), index[k]})
		}
		slices.SortFunc(held, func(a, b heldKey) int {
			if d := b.readers - a.readers; d != 0 {
				return d
			}
			return b.idx - a.idx
		})
		for _, h := range held[:over] {
			drop(j, h.k)
		}
	}
	// Partitions read by more members than they should be lose their
	// fullest readers.
	for _, k := range targets {
		for len(holders[k]) > sharing {
			fullest := holders[k][0]
			for _, j := range holders[k] {
				if n, f := len(have[j]), len(have[fullest]); n > f || n == f && j > fullest {
					fullest = j
				}
			}
			drop(fullest, k)
		}
	}
	// Partitions short of readers go to the members furthest below their
	// count. When every such member already reads the partition it stays
	// short, as in Kafka (a different shuffle could do better; harmless).
	for _, k := range targets {
		for len(holders[k]) < sharing {
			best, gap := -1, 0
			for j := range subs {
				if g := desired[j] - len(have[j]); g > gap && !have[j][k] {
					best, gap = j, g
				}
			}
			if best < 0 {
				break
			}
			have[best][k] = true
			holders[k] = append(holders[k], best)
		}
	}
	for j, i := range subs {
		for k := range have[j] {
			next[i][k] = true
		}
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
