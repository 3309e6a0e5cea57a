package cluster_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/kwire"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testcluster"
)

// Controllers and brokers on separate processes (process.roles=controller
// and =broker), as production clusters run: three controller-only voters,
// three broker-only nodes that follow the metadata log without voting. The
// clients see only the brokers; admin requests sent to a broker reach the
// active controller; losing the active controller and a partition leader
// loses no acknowledged record.
func TestReplicationSplitRoles(t *testing.T) {
	c := testcluster.StartSplit(t, 3, 3)
	ctrl := c.Controller(15 * time.Second)
	if !c.Node(ctrl).IsController || c.Node(ctrl).IsBroker {
		t.Fatalf("active controller is node %d, not a controller-only node", ctrl)
	}
	adm := c.Admin()
	waitBrokers(t, adm, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ids := meta.Brokers.NodeIDs(); !slices.Equal(ids, []int32{4, 5, 6}) {
		t.Errorf("Metadata lists brokers %v, want the broker-only nodes [4 5 6]", ids)
	}
	if meta.Controller < 4 || meta.Controller > 6 {
		t.Errorf("Metadata names node %d as controller, want a broker the client can reach", meta.Controller)
	}
	checkQuorum(t, c.Node(4).Addr(), ctrl)
	out, err := exec.Command(testbroker.Binary(t), "cluster", "describe", "-b", c.Bootstrap()).CombinedOutput()
	if want := fmt.Sprintf("CONTROLLER  %d\n", ctrl); err != nil || !strings.Contains(string(out), want) || !strings.Contains(string(out), "voters 1,2,3; observers 4,5,6") {
		t.Errorf("tributary cluster describe (%v) does not show controller %d and the quorum:\n%s", err, ctrl, out)
	}
	if _, err := metadataAt(c.Node(ctrl).Addr()); err == nil {
		t.Error("a controller listener answered Metadata, a client API")
	}

	// CreateTopics reaches the controller through the broker that got it.
	if _, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "q"); err != nil {
		t.Fatal(err)
	}
	c.Leaders("q", 10*time.Second)
	w := testcluster.StartWorkload(t, c.Bootstrap(), testcluster.WorkloadConfig{Topic: "q", Rate: 1000})
	time.Sleep(2 * time.Second)

	c.Node(ctrl).Kill()
	killed := time.Now()
	next := c.Controller(15 * time.Second)
	t.Logf("active controller %d killed; %d active after %v", ctrl, next, time.Since(killed).Round(time.Millisecond))
	l := leaderOf(t, c, 0)
	c.Node(l).Kill()
	killed = time.Now()
	if d, ok := w.AwaitAck(killed, sessionTimeout+10*time.Second); !ok {
		dumpLogs(t, c)
		t.Fatalf("nothing acknowledged after leader %d was killed", l)
	} else {
		t.Logf("leader %d killed: acknowledgements resumed after %v", l, d.Round(time.Millisecond))
	}
	c.Node(l).Restart()
	c.Node(ctrl).Restart()

	// Admin requests keep working under the new controller.
	if _, err := adm.CreatePartitions(ctx, 1, "q"); err != nil {
		t.Fatal(err)
	}
	waitISRAll(t, c, "q", 3)
	if _, ok := w.AwaitAck(time.Now(), 10*time.Second); !ok {
		t.Fatal("nothing acknowledged after the nodes came back")
	}
	score(t, c, w.Stop())
	checkReplicas(t, c)
}

// checkQuorum asks the node at addr for DescribeQuorum: leader, voters
// 1-3 and the brokers 4-6 as observers.
func checkQuorum(t *testing.T, addr string, leader int32) {
	t.Helper()
	if got := testcluster.QuorumLeader(addr); got != leader {
		t.Errorf("DescribeQuorum at %s: leader %d, want %d", addr, got, leader)
	}
	p, err := testcluster.DescribeQuorum(addr)
	if err != nil {
		t.Fatal(err)
	}
	ids := func(rs []kmsg.DescribeQuorumResponseTopicPartitionReplicaState) []int32 {
		var out []int32
		for _, r := range rs {
			out = append(out, r.ReplicaID)
		}
		slices.Sort(out)
		return out
	}
	if v, o := ids(p.CurrentVoters), ids(p.Observers); !slices.Equal(v, []int32{1, 2, 3}) || !slices.Equal(o, []int32{4, 5, 6}) {
		t.Errorf("DescribeQuorum: voters %v, observers %v; want [1 2 3] and [4 5 6]", v, o)
	}
	if p.LeaderEpoch <= 0 || p.HighWatermark <= 0 {
		t.Errorf("DescribeQuorum: epoch %d, high watermark %d", p.LeaderEpoch, p.HighWatermark)
	}
}

// metadataAt sends one Metadata request to addr.
func metadataAt(addr string) (*kmsg.MetadataResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := kwire.Dial(ctx, addr, "test")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	resp, err := conn.RoundTrip(req, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}
