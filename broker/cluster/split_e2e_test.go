package cluster_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	checkJavaTools(t, c, ctrl)
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

	// Admin requests keep working under the new controller. The deadline is
	// this step's own: on a loaded machine the kills above can use up
	// most of the first one.
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreatePartitions(ctx, 1, "q"); err != nil {
		t.Fatal(err)
	}
	waitISRAll(t, c, "q", 3)
	if _, ok := w.AwaitAck(time.Now(), 10*time.Second); !ok {
		t.Fatal("nothing acknowledged after the nodes came back")
	}
	score(t, c, minAcked, w.Stop())
	checkReplicas(t, c)
	checkUnregister(t, c)
}

// checkJavaTools runs Apache Kafka's own tools against broker-only nodes:
// kafka-metadata-quorum describe --status (DescribeQuorum) and kafka-topics
// --create (CreateTopics, forwarded to the controller).
func checkJavaTools(t *testing.T, c *testcluster.Cluster, ctrl int32) {
	t.Helper()
	out := javaTool(t, "org.apache.kafka.tools.MetadataQuorumCommand", "--bootstrap-server", c.Node(4).Addr(), "describe", "--status")
	leader := regexp.MustCompile(`LeaderId:\s+(\d+)`).FindStringSubmatch(out)
	if leader == nil || leader[1] != fmt.Sprint(ctrl) {
		t.Errorf("kafka-metadata-quorum describe --status does not name leader %d:\n%s", ctrl, out)
	}
	for _, want := range []string{`CurrentVoters:\s+\[.*"id": ?1\b.*"id": ?2\b.*"id": ?3\b`, `CurrentObservers:\s+\[.*"id": ?4\b.*"id": ?5\b.*"id": ?6\b`} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("kafka-metadata-quorum describe --status does not match %s:\n%s", want, out)
		}
	}
	javaTool(t, "org.apache.kafka.tools.TopicCommand", "--bootstrap-server", c.Node(5).Addr(), "--create", "--topic", "java-created",
		"--partitions", "2", "--replication-factor", "3")
	if ps, ok := topicState(c, "java-created"); !ok || len(ps) != 2 || len(ps[0].Replicas) != 3 {
		t.Errorf("kafka-topics --create through broker 5: %+v", ps)
	}
}

// javaTool runs one of Apache Kafka's tools (a main class) and returns its
// output, failing the test if it fails.
func javaTool(t *testing.T, class string, args ...string) string {
	t.Helper()
	jdk := testbroker.FindJDK(testbroker.NoSkip(t))
	cmd := exec.Command(jdk.Java, append(append(jdk.JVMArgs(jdk.Classpath()), class), args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", class, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// checkUnregister kills broker 6 and removes it with Kafka's kafka-cluster
// unregister: Metadata and the quorum forget it, and its replicas show as
// offline; a voter cannot be removed.
func checkUnregister(t *testing.T, c *testcluster.Cluster) {
	t.Helper()
	c.Node(6).Kill()
	javaTool(t, "org.apache.kafka.tools.ClusterTool", "unregister", "--bootstrap-server", c.Node(4).Addr(), "--id", "6")
	// The controller answered once the change was committed; the brokers
	// learn of it a moment later.
	var observers, brokers int
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		q, err := testcluster.DescribeQuorum(c.Node(5).Addr())
		m, merr := metadataAt(c.Node(4).Addr())
		if err != nil || merr != nil {
			continue
		}
		if observers, brokers = len(q.Observers), len(m.Brokers); observers == 2 && brokers == 2 {
			break
		}
	}
	if observers != 2 || brokers != 2 {
		t.Errorf("after unregistering 6: %d observers in DescribeQuorum and %d brokers in Metadata, want 2 and 2", observers, brokers)
	}
	ps, _ := topicState(c, "q")
	if len(ps) == 0 || !slices.Contains(ps[0].OfflineReplicas, 6) || slices.Contains(ps[0].ISR, 6) {
		t.Errorf("q-0 after unregistering 6: %+v, want 6 offline and out of the ISR", ps)
	}
	out, err := exec.Command(testbroker.Binary(t), "cluster", "unregister", "--id", "1", "-b", c.Bootstrap()).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "voter") {
		t.Errorf("tributary cluster unregister --id 1 (a controller): %v\n%s", err, out)
	}
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

// KIP-966, the case the issue names: the last ISR member dies, loses the
// tail it had not flushed (a power loss: here its segment is cut after
// kill -9) and restarts. It must not lead and have the others truncate to
// its shorter log: the eligible replica that left the ISR when it fell
// below min.insync.replicas leads instead, and no acknowledged record is
// lost. Split roles, so that the quorum outlives every broker being down.
func TestReplicationEligibleLeaderAfterUncleanRestart(t *testing.T) {
	c := testcluster.StartSplit(t, 3, 3)
	c.Controller(15 * time.Second)
	waitBrokers(t, c.Admin(), 3)
	createAssigned(t, c, "q", [][]int32{{4, 5, 6}}, "min.insync.replicas", "2")
	c.Leaders("q", 10*time.Second)
	w := testcluster.StartWorkload(t, c.Bootstrap(), testcluster.WorkloadConfig{Topic: "q", Rate: 1000, Key: "hot"})
	time.Sleep(2 * time.Second)

	c.Node(6).Kill()
	waitPartition(t, c, "ISR 4,5 after 6 died", func(p kmsg.MetadataResponseTopicPartition) bool {
		return slices.Equal(p.ISR, []int32{4, 5})
	})
	time.Sleep(2 * time.Second) // acknowledged with 4 and 5 in sync
	c.Node(5).Kill()
	waitPartition(t, c, "ISR 4 after 5 died", func(p kmsg.MetadataResponseTopicPartition) bool {
		return slices.Equal(p.ISR, []int32{4})
	})
	acked := w.Acks()
	c.Node(4).Kill()
	cutSegment(t, filepath.Join(c.Node(4).DataDir(), "q-0"))
	c.Node(4).Restart()
	time.Sleep(time.Second) // it would have been elected by now
	if p := describePartition(t, c.Node(4).Addr()); p.LeaderID >= 0 || !slices.Equal(p.EligibleLeaderReplicas, []int32{5}) {
		t.Fatalf("broker 4 back from an unclean shutdown without its tail: leader %d, ISR %v, ELR %v; want no leader and ELR [5]",
			p.LeaderID, p.ISR, p.EligibleLeaderReplicas)
	}
	c.Node(5).Restart()
	waitPartition(t, c, "eligible broker 5 leading", func(p kmsg.MetadataResponseTopicPartition) bool { return p.Leader == 5 })
	c.Node(6).Restart()
	waitISR(t, c, "q", 3)
	if _, ok := w.AwaitAck(time.Now(), 15*time.Second); !ok {
		t.Fatal("nothing acknowledged after the brokers came back")
	}
	s := score(t, c, minAcked, w.Stop())
	if s.Acknowledged < int(acked) || acked < 1000 {
		t.Errorf("%d acknowledged before the ISR fell below min.insync.replicas, %d in all", acked, s.Acknowledged)
	}
	checkReplicas(t, c)
}

// describePartition is q-0 as DescribeTopicPartitions at addr tells it,
// eligible leader replicas included.
func describePartition(t *testing.T, addr string) kmsg.DescribeTopicPartitionsResponseTopicPartition {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := kwire.Dial(ctx, addr, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	rt.Topic = "q"
	req.Topics = append(req.Topics, rt)
	req.ResponsePartitionLimit = 10
	resp, err := conn.RoundTrip(req, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ts := resp.(*kmsg.DescribeTopicPartitionsResponse).Topics
	if len(ts) != 1 || len(ts[0].Partitions) != 1 {
		t.Fatalf("DescribeTopicPartitions q: %+v", ts)
	}
	return ts[0].Partitions[0]
}

// waitPartition waits until q-0 is as ok says.
func waitPartition(t *testing.T, c *testcluster.Cluster, what string, ok func(kmsg.MetadataResponseTopicPartition) bool) {
	t.Helper()
	var last []kmsg.MetadataResponseTopicPartition
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if ps, found := topicState(c, "q"); found {
			if last = ps; ok(ps[0]) {
				return
			}
		}
	}
	t.Fatalf("q-0 not %s after 30 s: %+v", what, last)
}

// cutSegment loses the second half of a partition's last segment and its
// indexes, as a power loss loses what was not flushed.
func cutSegment(t *testing.T, dir string) {
	t.Helper()
	last, size := lastSegment(t, dir, 4096)
	if err := os.Truncate(last, size/2); err != nil {
		t.Fatal(err)
	}
	deleteIndexes(dir)
	t.Logf("cut %s from %d to %d bytes", last, size, size/2)
}
