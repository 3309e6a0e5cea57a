package share

import (
	"fmt"
	"testing"
)

var (
	topicA = [16]byte{0xa}
	topicB = [16]byte{0xb}
)

// assignGroup builds a group of members subscribed to topics and assigns.
func assignGroup(topics map[string]TopicMeta, members map[string][]string) *group {
	g := &group{id: "g", members: map[string]*member{}}
	for id, ts := range members {
		g.members[id] = &member{id: id, topics: sortedTopics(ts)}
	}
	g.refresh(topics, true)
	return g
}

// readers is, per partition of topic, how many members read it, and per
// member how many partitions of topic it reads.
func readers(g *group, topic [16]byte, partitions int32) (perPartition []int, perMember map[string]int) {
	perPartition = make([]int, partitions)
	perMember = map[string]int{}
	for id, m := range g.members {
		for _, p := range m.assigned[topic] {
			perPartition[p]++
			perMember[id]++
		}
	}
	return perPartition, perMember
}

func within(t *testing.T, what string, counts []int, lo, hi int) {
	t.Helper()
	for i, n := range counts {
		if n < lo || n > hi {
			t.Errorf("%s %d: %d, want %d..%d (%v)", what, i, n, lo, hi, counts)
		}
	}
}

func values(m map[string]int) []int {
	var out []int
	for _, n := range m {
		out = append(out, n)
	}
	return out
}

// TestAssignManyMembersFewPartitions: 7 members on 2 partitions: every
// member reads one partition or two, each partition has ceil(7/2) = 4
// readers (Kafka's desiredSharing), so nobody idles.
func TestAssignManyMembersFewPartitions(t *testing.T) {
	ms := map[string][]string{}
	for i := 0; i < 7; i++ {
		ms[fmt.Sprintf("m%d", i)] = []string{"a"}
	}
	g := assignGroup(map[string]TopicMeta{"a": {topicA, 2}}, ms)
	pp, pm := readers(g, topicA, 2)
	within(t, "partition", pp, 4, 4)
	if len(pm) != 7 {
		t.Fatalf("%d of 7 members have partitions: %v", len(pm), pm)
	}
	within(t, "member", values(pm), 1, 2)
	// One partition, five members: all five share it.
	ms = map[string][]string{}
	for i := 0; i < 5; i++ {
		ms[fmt.Sprintf("m%d", i)] = []string{"a"}
	}
	g = assignGroup(map[string]TopicMeta{"a": {topicA, 1}}, ms)
	pp, _ = readers(g, topicA, 1)
	within(t, "partition", pp, 5, 5)
}

// TestAssignFewMembersManyPartitions: 3 members on 10 partitions: every
// partition has one reader, the members have 3, 3 and 4.
func TestAssignFewMembersManyPartitions(t *testing.T) {
	g := assignGroup(map[string]TopicMeta{"a": {topicA, 10}}, map[string][]string{"x": {"a"}, "y": {"a"}, "z": {"a"}})
	pp, pm := readers(g, topicA, 10)
	within(t, "partition", pp, 1, 1)
	within(t, "member", values(pm), 3, 4)
}

func snapshot(g *group) map[string]map[tpKey]bool {
	out := map[string]map[tpKey]bool{}
	for id, m := range g.members {
		out[id] = map[tpKey]bool{}
		for topic, ps := range m.assigned {
			for _, p := range ps {
				out[id][tpKey{topic, p}] = true
			}
		}
	}
	return out
}

// moved counts the partitions members of before no longer have in after.
func moved(before, after map[string]map[tpKey]bool) int {
	n := 0
	for id, ks := range before {
		if after[id] == nil {
			continue
		}
		for k := range ks {
			if !after[id][k] {
				n++
			}
		}
	}
	return n
}

// TestAssignSticky: a member joining takes only what balance needs from
// the others, and a member leaving moves only its own partitions, on
// both sides of members = partitions.
func TestAssignSticky(t *testing.T) {
	for _, c := range []struct {
		partitions    int32
		members       int
		joinMoves     int // partitions the old members give up when one joins
		leaveMovesMax int
	}{
		{12, 3, 3, 0}, // 4 each, then 3 each
		{2, 4, 0, 0},  // 2 readers each; a fifth member makes it 3 readers each
		{3, 3, 0, 1},  // one each; a fourth shares a partition; when one leaves, a member with two gives one up
		{10, 4, 2, 0},
	} {
		t.Run(fmt.Sprintf("%dp%dm", c.partitions, c.members), func(t *testing.T) {
			topics := map[string]TopicMeta{"a": {topicA, c.partitions}}
			ms := map[string][]string{}
			for i := 0; i < c.members; i++ {
				ms[fmt.Sprintf("m%d", i)] = []string{"a"}
			}
			g := assignGroup(topics, ms)
			before := snapshot(g)
			g.members["new"] = &member{id: "new", topics: []string{"a"}}
			g.refresh(topics, true)
			after := snapshot(g)
			if n := moved(before, after); n > c.joinMoves {
				t.Errorf("a join took %d partitions from the old members, want at most %d\nbefore %v\nafter %v", n, c.joinMoves, before, after)
			}
			pp, pm := readers(g, topicA, c.partitions)
			if len(pm) != c.members+1 {
				t.Errorf("after the join %d of %d members read: %v", len(pm), c.members+1, pm)
			}
			for p, n := range pp {
				if n == 0 {
					t.Errorf("partition %d has no reader after the join", p)
				}
			}
			// The first member leaves: the others keep all they had.
			before = snapshot(g)
			delete(g.members, "m0")
			g.refresh(topics, true)
			after = snapshot(g)
			if n := moved(before, after); n > c.leaveMovesMax {
				t.Errorf("a leave took %d partitions from the others\nbefore %v\nafter %v", n, before, after)
			}
			pp, _ = readers(g, topicA, c.partitions)
			for p, n := range pp {
				if n == 0 {
					t.Errorf("partition %d has no reader after the leave", p)
				}
			}
		})
	}
}

// TestAssignHeterogeneous: subscriptions that differ are balanced topic
// by topic over the members of each, as Kafka's heterogeneous builder:
// x reads only a, y only b, z both and gets half of each.
func TestAssignHeterogeneous(t *testing.T) {
	topics := map[string]TopicMeta{"a": {topicA, 4}, "b": {topicB, 4}}
	g := assignGroup(topics, map[string][]string{"x": {"a"}, "y": {"b"}, "z": {"a", "b"}})
	for _, tc := range []struct {
		topic [16]byte
		id    string
	}{{topicA, "x"}, {topicB, "y"}} {
		pp, pm := readers(g, tc.topic, 4)
		within(t, "partition", pp, 1, 1)
		if pm[tc.id] != 2 || pm["z"] != 2 {
			t.Errorf("topic %x: %v, want %s and z with 2 each", tc.topic[0], pm, tc.id)
		}
	}
	if len(g.members["x"].assigned[topicB]) != 0 || len(g.members["y"].assigned[topicA]) != 0 {
		t.Errorf("a member got a topic it does not subscribe to: x %v y %v", g.members["x"].assigned, g.members["y"].assigned)
	}
	// Homogeneous subscriptions over two 1-partition topics balance
	// across both: two members get one partition each, not both.
	g = assignGroup(map[string]TopicMeta{"a": {topicA, 1}, "b": {topicB, 1}}, map[string][]string{"x": {"a", "b"}, "y": {"a", "b"}})
	for id, m := range g.members {
		if n := len(m.assigned[topicA]) + len(m.assigned[topicB]); n != 1 {
			t.Errorf("%s reads %d partitions, want 1", id, n)
		}
	}
	// An unsubscribed topic is taken away.
	g.members["x"].topics = []string{"a"}
	g.refresh(map[string]TopicMeta{"a": {topicA, 1}, "b": {topicB, 1}}, true)
	if len(g.members["x"].assigned[topicB]) != 0 {
		t.Errorf("x still reads b after unsubscribing: %v", g.members["x"].assigned)
	}
}
