package cluster_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/kwire"
	"github.com/tributary-io/tributary/internal/testcluster"
)

// TestReplicationFailover: a topic replicated 3 times takes acks=all
// writes, every replica holds them, and when the leader dies another ISR
// member leads with every acknowledged record; the dead broker comes back
// as a follower and rejoins the ISR.
func TestReplicationFailover(t *testing.T) {
	c := testcluster.Start(t, 3)
	c.Controller(15 * time.Second)
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	waitBrokers(t, adm, 3)
	if _, err := adm.CreateTopic(ctx, 1, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "rep"); err != nil {
		t.Fatal(err)
	}
	leader := c.Leaders("rep", 10*time.Second)[0]
	produce(t, c.Bootstrap(), "rep", 0, 500)
	waitISR(t, c, "rep", 3)
	for _, n := range c.Nodes {
		waitReplicaHW(t, n.Addr(), "rep", 500)
	}

	c.Node(leader).Kill()
	start := time.Now()
	produce(t, c.Bootstrap(), "rep", 500, 500)
	t.Logf("leader %d killed; 500 more records acknowledged after %v", leader, time.Since(start).Round(time.Millisecond))
	consumeAll(t, c.Bootstrap(), "rep", 1000)
	waitISR(t, c, "rep", 2)

	c.Node(leader).Restart()
	waitISR(t, c, "rep", 3)
	waitReplicaHW(t, c.Node(leader).Addr(), "rep", 1000)
}

// waitBrokers waits until the metadata lists n brokers. The bound is
// generous: on a loaded machine under the race detector a registration can
// wait out an election and a controller request's timeout.
func waitBrokers(t testing.TB, adm *kadm.Client, n int) {
	t.Helper()
	start := time.Now()
	for deadline := start.Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		brokers, err := adm.ListBrokers(context.Background())
		if err == nil && len(brokers) == n {
			t.Logf("%d brokers in the metadata after %v", n, time.Since(start).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Metadata lists %d brokers (%v), want %d", len(brokers), err, n)
		}
	}
}

// topicState asks the running brokers in turn, each for at most a second,
// for topic's partitions, so that a paused broker never stalls a test.
func topicState(c *testcluster.Cluster, topic string) ([]kmsg.MetadataResponseTopicPartition, bool) {
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		if ps, ok := nodeTopicState(n.Addr(), topic); ok {
			return ps, true
		}
	}
	return nil, false
}

// nodeTopicState asks the broker at addr, for at most a second, for
// topic's partitions as its own metadata has them.
func nodeTopicState(addr, topic string) ([]kmsg.MetadataResponseTopicPartition, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	conn, err := kwire.Dial(ctx, addr, "test")
	cancel()
	if err != nil {
		return nil, false
	}
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := conn.RoundTrip(req, time.Second)
	conn.Close()
	if err != nil {
		return nil, false
	}
	m := resp.(*kmsg.MetadataResponse)
	if len(m.Topics) != 1 || m.Topics[0].ErrorCode != 0 || len(m.Topics[0].Partitions) == 0 {
		return nil, false
	}
	ps := m.Topics[0].Partitions
	sort.Slice(ps, func(i, j int) bool { return ps[i].Partition < ps[j].Partition })
	return ps, true
}

// waitISR waits until partition 0 of topic has an ISR of n brokers.
func waitISR(t testing.TB, c *testcluster.Cluster, topic string, n int) {
	t.Helper()
	var last []int32
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if ps, ok := topicState(c, topic); ok {
			if last = ps[0].ISR; len(last) == n {
				return
			}
		}
	}
	t.Fatalf("ISR of %s-0 is %v, want %d members", topic, last, n)
}

// waitReplicaHW waits until the broker at addr, leader or follower, serves
// partition 0 of topic up to offset hw.
func waitReplicaHW(t *testing.T, addr, topic string, hw int64) {
	t.Helper()
	var got int64 = -1
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(12)
		req.ReplicaID, req.MaxBytes, req.SessionEpoch = -1, 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		conn, err := kwire.Dial(context.Background(), addr, "test")
		if err != nil {
			continue
		}
		r, err := conn.RoundTrip(req, 5*time.Second)
		conn.Close()
		if err != nil {
			continue
		}
		resp := r.(*kmsg.FetchResponse)
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Logf("fetch from %s: %v", addr, kerr.ErrorForCode(p.ErrorCode))
			continue
		}
		if got = p.HighWatermark; got >= hw {
			return
		}
	}
	t.Fatalf("broker %s serves %s-0 up to %d, want %d", addr, topic, got, hw)
}
