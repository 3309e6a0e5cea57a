package cluster

import (
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

// threeBrokers is a single-node controller that also knows brokers 2 and 3
// (as a quorum's would), with topic t replicated on all three.
func threeBrokers(t *testing.T, racks ...string) (*Controller, *Topic) {
	t.Helper()
	c := openTest(t, t.TempDir())
	t.Cleanup(func() { c.Close() })
	for id := int32(1); id <= 3; id++ {
		b := c.Image().Brokers[1]
		b.ID = id
		if len(racks) > 0 {
			b.Rack = racks[id-1]
		}
		if err := c.commit([]Record{{RegisterBroker: &b}}); err != nil {
			t.Fatal(err)
		}
	}
	tp, err := c.CreateTopic(TopicSpec{Name: "t", Partitions: 3, ReplicationFactor: 3}, false)
	if err != nil {
		t.Fatal(err)
	}
	return c, tp
}

func (c *Controller) partition(t *testing.T, i int32) Partition {
	t.Helper()
	return c.Image().Topics["t"].Partitions[i]
}

// A fenced broker leaves every ISR and its leaderships go to the next ISR
// member in replica order, with a new leader epoch; the last ISR member
// leaves for the ELR, so the partition waits for it.
func TestFencingMovesLeadershipWithinTheISR(t *testing.T) {
	c, _ := threeBrokers(t)
	p0 := c.partition(t, 0)
	leader := p0.Leader
	if err := c.setFenced(leader, true); err != nil {
		t.Fatal(err)
	}
	p1 := c.partition(t, 0)
	if p1.Leader == leader || p1.Leader < 0 || slices.Contains(p1.ISR, leader) || p1.LeaderEpoch != p0.LeaderEpoch+1 {
		t.Fatalf("after fencing leader %d: %+v (was %+v)", leader, p1, p0)
	}
	for _, id := range p1.ISR {
		if err := c.setFenced(id, true); err != nil {
			t.Fatal(err)
		}
	}
	p2 := c.partition(t, 0)
	if p2.Leader != -1 || len(p2.ISR) != 0 || len(p2.ELR) != 1 {
		t.Fatalf("with every broker fenced: %+v, want no leader and the last ISR member eligible", p2)
	}
	// The fenced broker that was not the last member comes back: it is not
	// eligible, so it does not lead; the last member does.
	if err := c.setFenced(leader, false); err != nil {
		t.Fatal(err)
	}
	if p := c.partition(t, 0); p.Leader != -1 {
		t.Fatalf("broker %d, out of the ISR, leads: %+v", leader, p)
	}
	if err := c.setFenced(p2.ELR[0], false); err != nil {
		t.Fatal(err)
	}
	if p := c.partition(t, 0); p.Leader != p2.ELR[0] || !slices.Equal(p.ISR, p2.ELR) || len(p.ELR) != 0 {
		t.Fatalf("the last ISR member %d is back but does not lead: %+v", p2.ELR[0], p)
	}
}

// KIP-966: replicas leaving an ISR below min.insync.replicas become
// eligible leaders and lead when the ISR is gone; a broker back from an
// unclean shutdown is no longer eligible while another replica is, so it
// cannot lead with a log that lost what it had not flushed.
func TestEligibleLeaderReplicas(t *testing.T) {
	c, _ := threeBrokers(t)
	two := "2"
	tp, err := c.CreateTopic(TopicSpec{Name: "e", Assignment: [][]int32{{1, 2, 3}}, Configs: map[string]string{"min.insync.replicas": two}}, false)
	if err != nil {
		t.Fatal(err)
	}
	e := func() Partition { return c.Image().Topics["e"].Partitions[0] }
	shrink := func(isr ...int32) Partition {
		t.Helper()
		p := e()
		got, err := c.AlterPartition(ISRChange{TopicID: tp.ID, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: isr})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if p := shrink(1, 2); len(p.ELR) != 0 {
		t.Fatalf("ISR 1,2 meets min.insync.replicas, yet ELR %v", p.ELR)
	}
	if p := shrink(1); !slices.Equal(p.ELR, []int32{2}) {
		t.Fatalf("ISR 1 below min.insync.replicas: ELR %v, want [2]", p.ELR)
	}
	// 3 left while the ISR was large enough: it may lack committed records.
	if err := c.setFenced(2, true); err != nil {
		t.Fatal(err)
	}
	if err := c.setFenced(1, true); err != nil {
		t.Fatal(err)
	}
	if p := e(); p.Leader != -1 || len(p.ISR) != 0 || !slices.Equal(p.ELR, []int32{2, 1}) {
		t.Fatalf("leader 1 fenced with 2 fenced too: %+v, want offline with ELR [2 1]", p)
	}
	b1 := c.Image().Brokers[1]
	if _, err := c.Register(Registration{Broker: b1, Unclean: true}); err != nil {
		t.Fatal(err)
	}
	if p := e(); !slices.Equal(p.ELR, []int32{2}) {
		t.Fatalf("after 1 restarted uncleanly: ELR %v, want [2]", p.ELR)
	}
	if _, err := c.Heartbeat(1, c.Image().Brokers[1].Epoch, false, false); err != nil {
		t.Fatal(err)
	}
	if p := e(); p.Leader != -1 {
		t.Fatalf("broker 1, back from an unclean shutdown, leads: %+v", p)
	}
	if err := c.setFenced(2, false); err != nil {
		t.Fatal(err)
	}
	if p := e(); p.Leader != 2 || !slices.Equal(p.ISR, []int32{2}) || len(p.ELR) != 0 {
		t.Fatalf("eligible broker 2 back: %+v, want it leading, alone in the ISR", p)
	}
	if p := shrink(2, 1); len(p.ELR) != 0 || p.Leader != 2 {
		t.Fatalf("ISR back to 2 members: %+v", p)
	}

	// The only replica left that may hold the committed records stays
	// eligible after an unclean restart: its log is the best there is.
	if err := c.setFenced(1, true); err != nil {
		t.Fatal(err)
	}
	if err := c.setFenced(2, true); err != nil {
		t.Fatal(err)
	}
	if p := e(); !slices.Equal(p.ELR, []int32{1, 2}) {
		t.Fatalf("ELR %v, want [1 2]", p.ELR)
	}
	b2 := c.Image().Brokers[2]
	c.Register(Registration{Broker: b2, Unclean: true})
	c.Register(Registration{Broker: b1, Unclean: true})
	if p := e(); !slices.Equal(p.ELR, []int32{1}) {
		t.Fatalf("both restarted uncleanly: ELR %v, want the last one kept", p.ELR)
	}
}

// AlterPartition checks the leader's epochs and who may join.
func TestAlterPartition(t *testing.T) {
	c, tp := threeBrokers(t)
	p := c.partition(t, 1)
	shrink := ISRChange{TopicID: tp.ID, Partition: 1, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: []int32{p.Leader}}
	got, err := c.AlterPartition(shrink)
	if err != nil || !slices.Equal(got.ISR, []int32{p.Leader}) || got.PartitionEpoch != p.PartitionEpoch+1 {
		t.Fatalf("shrink: %+v, %v", got, err)
	}
	_, err = c.AlterPartition(shrink) // the same, from a stale partition epoch
	wantCode(t, err, kerr.InvalidUpdateVersion)
	stale := shrink
	stale.LeaderEpoch--
	_, err = c.AlterPartition(stale)
	wantCode(t, err, kerr.FencedLeaderEpoch)

	other := p.Replicas[1]
	if err := c.setFenced(other, true); err != nil {
		t.Fatal(err)
	}
	cur := c.partition(t, 1)
	expand := ISRChange{TopicID: tp.ID, Partition: 1, Leader: cur.Leader, LeaderEpoch: cur.LeaderEpoch, PartitionEpoch: cur.PartitionEpoch, ISR: []int32{cur.Leader, other}}
	_, err = c.AlterPartition(expand)
	wantCode(t, err, kerr.IneligibleReplica)
	noLeader := expand
	noLeader.ISR = []int32{other}
	_, err = c.AlterPartition(noLeader)
	wantCode(t, err, kerr.InvalidRequest)
}

// Preferred-leader election moves leadership back to the first replica
// once it is in the ISR.
func TestElectPreferredLeaders(t *testing.T) {
	c, _ := threeBrokers(t)
	p := c.partition(t, 2)
	pref := p.Replicas[0]
	if err := c.setFenced(pref, true); err != nil {
		t.Fatal(err)
	}
	res, err := c.ElectLeaders(false, map[string][]int32{"t": {2}})
	if err != nil || res[0].Err == nil || res[0].Err.Code != kerr.PreferredLeaderNotAvailable {
		t.Fatalf("electing a fenced preferred leader: %+v, %v", res, err)
	}
	if err := c.setFenced(pref, false); err != nil {
		t.Fatal(err)
	}
	// Back, but not in the ISR until its leader adds it.
	cur := c.partition(t, 2)
	if _, err := c.AlterPartition(ISRChange{TopicID: c.Image().Topics["t"].ID, Partition: 2, Leader: cur.Leader,
		LeaderEpoch: cur.LeaderEpoch, PartitionEpoch: cur.PartitionEpoch, ISR: append(cur.ISR, pref)}); err != nil {
		t.Fatal(err)
	}
	res, err = c.ElectLeaders(false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Partition == 2 && r.Err != nil {
			t.Fatalf("partition 2: %v", r.Err)
		}
		if r.Partition != 2 && (r.Err == nil || r.Err.Code != kerr.ElectionNotNeeded) {
			t.Fatalf("partition %d: %v, want ELECTION_NOT_NEEDED", r.Partition, r.Err)
		}
	}
	if l := c.partition(t, 2).Leader; l != pref {
		t.Fatalf("leader %d after the election, want the preferred %d", l, pref)
	}
}

// A reassignment adds the new replicas, then drops the old ones when the
// new ones are in the ISR, moving leadership out of a removed replica.
func TestReassignment(t *testing.T) {
	c, tp := threeBrokers(t)
	b := c.Image().Brokers[1]
	b.ID = 4
	if err := c.commit([]Record{{RegisterBroker: &b}}); err != nil {
		t.Fatal(err)
	}
	p := c.partition(t, 0)
	leaving := p.Leader
	var target []int32
	for _, r := range p.Replicas {
		if r != leaving {
			target = append(target, r)
		}
	}
	target = append(target, 4)
	if err := c.Reassign("t", 0, target); err != nil {
		t.Fatal(err)
	}
	p = c.partition(t, 0)
	if !slices.Equal(p.Adding, []int32{4}) || !slices.Equal(p.Removing, []int32{leaving}) || len(p.Replicas) != 4 {
		t.Fatalf("in progress: %+v", p)
	}
	if got := c.Image().Reassignments(nil); len(got) != 1 || got[0].Partition != 0 {
		t.Fatalf("listed reassignments: %+v", got)
	}
	// The leader adds 4 to the ISR: the move completes.
	if _, err := c.AlterPartition(ISRChange{TopicID: tp.ID, Partition: 0, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch,
		PartitionEpoch: p.PartitionEpoch, ISR: append(slices.Clone(p.ISR), 4)}); err != nil {
		t.Fatal(err)
	}
	p2 := c.partition(t, 0)
	if p2.Reassigning() || !slices.Equal(p2.Replicas, target) || slices.Contains(p2.ISR, leaving) || p2.Leader == leaving || p2.LeaderEpoch != p.LeaderEpoch+1 {
		t.Fatalf("after the new replica caught up: %+v", p2)
	}
	wantCode(t, c.Reassign("t", 0, nil), kerr.NoReassignmentInProgress)
	wantCode(t, c.Reassign("t", 0, []int32{1, 9, 2}), kerr.InvalidReplicaAssignment)
}

// With broker.rack set, a partition's replicas span the racks.
func TestRackAwarePlacement(t *testing.T) {
	c := openTest(t, t.TempDir())
	defer c.Close()
	racks := map[int32]string{1: "a", 2: "a", 3: "b", 4: "b"}
	for id, rack := range racks {
		b := c.Image().Brokers[1]
		b.ID, b.Rack = id, rack
		if err := c.commit([]Record{{RegisterBroker: &b}}); err != nil {
			t.Fatal(err)
		}
	}
	tp, err := c.CreateTopic(TopicSpec{Name: "r", Partitions: 8, ReplicationFactor: 2}, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range tp.Partitions {
		if racks[p.Replicas[0]] == racks[p.Replicas[1]] {
			t.Errorf("partition %d on %v: both in rack %s", p.Index, p.Replicas, racks[p.Replicas[0]])
		}
	}
}

// Unregistering a broker fences it first, so its leaderships and ISR
// memberships move, then removes its registration; its replicas stay.
func TestUnregister(t *testing.T) {
	c, _ := threeBrokers(t)
	p0 := c.partition(t, 0)
	leader := p0.Leader
	if err := c.Unregister(leader); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Image().Brokers[leader]; ok {
		t.Fatalf("broker %d still registered", leader)
	}
	p := c.partition(t, 0)
	if p.Leader == leader || slices.Contains(p.ISR, leader) || !slices.Contains(p.Replicas, leader) {
		t.Fatalf("q-0 after unregistering its leader %d: %+v", leader, p)
	}
	wantCode(t, c.Unregister(leader), kerr.BrokerIDNotRegistered)
}

// With the whole ISR gone, an unclean election (ElectLeaders, or
// unclean.leader.election.enable on the topic) takes any live replica,
// which becomes the whole ISR; without it the partition waits.
func TestUncleanElection(t *testing.T) {
	c, tp := threeBrokers(t)
	// isolate shrinks partition i's ISR to its leader and returns it.
	isolate := func(i int32) int32 {
		t.Helper()
		p := c.partition(t, i)
		if _, err := c.AlterPartition(ISRChange{TopicID: tp.ID, Partition: i, Leader: p.Leader, LeaderEpoch: p.LeaderEpoch, PartitionEpoch: p.PartitionEpoch, ISR: []int32{p.Leader}}); err != nil {
			t.Fatal(err)
		}
		return p.Leader
	}
	leader := isolate(0)
	if err := c.setFenced(leader, true); err != nil {
		t.Fatal(err)
	}
	if p := c.partition(t, 0); p.Leader != -1 {
		t.Fatalf("the only ISR member %d fenced, unclean election off: %+v, want no leader", leader, p)
	}
	res, err := c.ElectLeaders(true, map[string][]int32{"t": {0}})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("unclean ElectLeaders: %+v, %v", res, err)
	}
	p := c.partition(t, 0)
	if p.Leader < 0 || p.Leader == leader || !slices.Equal(p.ISR, []int32{p.Leader}) || len(p.ELR) != 0 {
		t.Fatalf("after an unclean election: %+v, want a live replica leading alone", p)
	}
	res, _ = c.ElectLeaders(true, map[string][]int32{"t": {0}})
	if res[0].Err == nil || res[0].Err.Code != kerr.ElectionNotNeeded {
		t.Fatalf("second unclean ElectLeaders: %+v, want ELECTION_NOT_NEEDED", res)
	}

	on := "true"
	if err := c.AlterTopicConfigs("t", []ConfigChange{{Name: "unclean.leader.election.enable", Value: &on}}, false, false); err != nil {
		t.Fatal(err)
	}
	leader1 := isolate(1)
	if leader1 == leader {
		t.Fatalf("partition 1 is led by fenced broker %d", leader)
	}
	if err := c.setFenced(leader1, true); err != nil {
		t.Fatal(err)
	}
	if p := c.partition(t, 1); p.Leader < 0 || p.Leader == leader1 || !slices.Equal(p.ISR, []int32{p.Leader}) {
		t.Fatalf("unclean.leader.election.enable=true, ISR leader %d fenced: %+v, want another live replica leading", leader1, p)
	}
}
