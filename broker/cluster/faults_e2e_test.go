package cluster_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testcluster"
)

// The fault scenarios of a replicated cluster, scored like Jepsen's queue
// workload: unique values, a full read at the end, and lost, duplicated,
// unexpected and reordered records counted (internal/testcluster). Unless
// a test says otherwise: 3 brokers, replication factor 3,
// min.insync.replicas=2, idempotent producers with acks=all, and a session
// timeout of 3 s. TRIBUTARY_TEST_LONG=1 (make test-long) runs them longer.

// sessionTimeout is testcluster's broker.session.timeout.ms.
const sessionTimeout = 3 * time.Second

func long() bool { return os.Getenv("TRIBUTARY_TEST_LONG") != "" }

// startQueue starts 3 brokers and creates topic q with the given
// partitions, replicated 3 times, min.insync.replicas=2.
func startQueue(t testing.TB, partitions int32) (*testcluster.Cluster, *kadm.Client) {
	t.Helper()
	c := testcluster.Start(t, 3)
	c.Controller(15 * time.Second)
	adm := c.Admin()
	waitBrokers(t, adm, 3)
	// A controller request can wait out an election on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, partitions, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "q"); err != nil {
		t.Fatal(err)
	}
	c.Leaders("q", 10*time.Second)
	return c, adm
}

// leaderOf is the current leader of q-p, waiting while there is none.
func leaderOf(t testing.TB, c *testcluster.Cluster, p int32) int32 {
	t.Helper()
	return c.Leaders("q", 30*time.Second)[p]
}

// newLeader waits until the metadata names a leader of q-0 other than old
// and returns it with how long that took since from.
func newLeader(t *testing.T, c *testcluster.Cluster, old int32, from time.Time) (int32, time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if ps, ok := topicState(c, "q"); ok && ps[0].Leader >= 0 && ps[0].Leader != old {
			return ps[0].Leader, time.Since(from)
		}
	}
	t.Fatalf("q-0 has no leader other than %d after 30 s", old)
	return -1, 0
}

// checkReplicas runs `tributary cluster check-replicas` and fails the test
// on a divergence.
func checkReplicas(t *testing.T, c *testcluster.Cluster) {
	t.Helper()
	var out []byte
	var err error
	// A follower may still be catching up to the leader's high watermark.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		out, err = exec.Command(testbroker.Binary(t), "cluster", "check-replicas", "-b", c.Bootstrap(), "--topic", "q").CombinedOutput()
		if err == nil {
			t.Logf("tributary cluster check-replicas:\n%s", out)
			return
		}
		if strings.Contains(string(out), "DIVERGED") {
			break
		}
	}
	t.Fatalf("tributary cluster check-replicas: %v\n%s", err, out)
}

// score reads q and checks the histories against it, and that at least
// minAcked records were acknowledged: a scenario whose producer got
// nothing through would pass with nothing to lose.
func score(t testing.TB, c *testcluster.Cluster, minAcked int, hs ...*testcluster.History) testcluster.Score {
	t.Helper()
	s := c.Score("q", hs...)
	t.Logf("score: %s", s)
	s.Check(t, minAcked)
	return s
}

// minAcked is what a 1,000 records/s workload acknowledges at the least:
// each scenario lets it run 2 s on a healthy cluster before the first
// fault, and more after the last.
const minAcked = 1000

// 1. Kill -9 the leader of the hot partition every 5-10 s and restart it,
// while a Java producer sends 200,000 records (1M with TRIBUTARY_TEST_LONG).
func TestFaultLeaderKillLoop(t *testing.T) {
	n, rate := 200_000, 5_000.0
	if long() {
		n, rate = 1_000_000, 10_000
	}
	c, _ := startQueue(t, 1)
	j := testcluster.StartJavaProducer(t, c.Bootstrap(), testcluster.WorkloadConfig{Topic: "q", Records: n, Rate: rate})
	var recoveries []time.Duration
	for {
		time.Sleep(5*time.Second + rand.N(5*time.Second))
		if j.Acks()+j.Errors() >= int64(n)*9/10 {
			break // too close to the end for a kill to be measured
		}
		l := leaderOf(t, c, 0)
		c.Node(l).Kill()
		killed := time.Now()
		c.Node(l).Restart()
		d, ok := j.AwaitAck(killed, 30*time.Second)
		if !ok {
			dumpLogs(t, c)
			t.Fatalf("no record acknowledged within 30 s of killing leader %d", l)
		}
		recoveries = append(recoveries, d)
		t.Logf("killed and restarted leader %d: acknowledgements resumed after %v (%d acked so far)", l, d.Round(time.Millisecond), j.Acks())
	}
	h := j.Wait(t)
	score(t, c, n*9/10, h)
	if len(recoveries) < 2 {
		t.Errorf("only %d leader kills during the run, want at least 2", len(recoveries))
	}
	sort.Slice(recoveries, func(i, j int) bool { return recoveries[i] < recoveries[j] })
	t.Logf("%d kills; time to the next acknowledgement: median %v, max %v", len(recoveries), recoveries[len(recoveries)/2], recoveries[len(recoveries)-1])
}

// 2. SIGSTOP the leader past its session, let the new leader take writes,
// then SIGCONT: the old leader acknowledges nothing it lost, truncates any
// divergent tail and catches up.
func TestFaultPausedLeader(t *testing.T) {
	c, _ := startQueue(t, 1)
	w := testcluster.StartWorkload(t, c.Bootstrap(), testcluster.WorkloadConfig{Topic: "q", Rate: 1000, Key: "hot"})
	time.Sleep(2 * time.Second)
	old := leaderOf(t, c, 0)
	if err := c.Node(old).Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	l, d := newLeader(t, c, old, paused)
	t.Logf("leader %d paused; broker %d leads after %v", old, l, d.Round(time.Millisecond))
	// The producer's requests in flight to the paused leader hold it back
	// until they time out (franz-go: the produce timeout plus 10 s).
	if _, ok := w.AwaitAck(paused.Add(d), 45*time.Second); !ok {
		dumpLogs(t, c)
		t.Fatalf("the new leader %d acknowledged nothing (%d acks, %d errors)", l, w.Acks(), w.Errors())
	}
	time.Sleep(3 * time.Second)
	if err := c.Node(old).Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	waitISR(t, c, "q", 3)
	time.Sleep(time.Second)
	score(t, c, minAcked, w.Stop())
	checkReplicas(t, c)
}

// 3. Kill the leader, then its successor within a second of its election,
// then restart both: the replicas agree batch by batch.
func TestFaultDoubleFailover(t *testing.T) {
	c, _ := startQueue(t, 1)
	w := testcluster.StartWorkload(t, c.Bootstrap(), testcluster.WorkloadConfig{Topic: "q", Rate: 1000, Key: "hot"})
	time.Sleep(2 * time.Second)
	first := leaderOf(t, c, 0)
	c.Node(first).Kill()
	second, d := newLeader(t, c, first, time.Now())
	c.Node(second).Kill()
	t.Logf("killed leader %d, then %d %v after it was elected", first, second, d.Round(time.Millisecond))
	time.Sleep(time.Second)
	c.Node(first).Restart()
	c.Node(second).Restart()
	waitISR(t, c, "q", 3)
	if _, ok := w.AwaitAck(time.Now(), 15*time.Second); !ok {
		t.Fatal("nothing acknowledged after both brokers came back")
	}
	score(t, c, minAcked, w.Stop())
	checkReplicas(t, c)
}

// 4. A follower dies with a torn tail in its active segment and no index
// files: it recovers, truncates, catches up and rejoins the ISR.
func TestFaultUncleanFollowerRestart(t *testing.T) {
	c, _ := startQueue(t, 1)
	w := testcluster.StartWorkload(t, c.Bootstrap(), testcluster.WorkloadConfig{Topic: "q", Rate: 1000, Key: "hot"})
	time.Sleep(3 * time.Second)
	l := leaderOf(t, c, 0)
	f := l%3 + 1
	c.Node(f).Kill()
	dir := filepath.Join(c.Node(f).DataDir(), "q-0")
	damageTail(t, dir)
	c.Node(f).Restart()
	waitISR(t, c, "q", 3)
	time.Sleep(time.Second)
	score(t, c, minAcked, w.Stop())
	checkReplicas(t, c)
}

// damageTail cuts the last segment of a partition dir in the middle of its
// last batch, appends garbage, and deletes every index.
func damageTail(t *testing.T, dir string) {
	t.Helper()
	active, size := lastSegment(t, dir, 200)
	if err := os.Truncate(active, size-37); err != nil {
		t.Fatal(err)
	}
	fh, err := os.OpenFile(active, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.Write([]byte("\x00\x00\x00\x00\x00\x00\x99\x99garbage after a torn write"))
	fh.Close()
	deleteIndexes(dir)
	t.Logf("damaged %s (was %d bytes) and deleted its indexes", active, size)
}

// lastSegment is a partition dir's active segment and its size, which must
// be at least min bytes.
func lastSegment(t *testing.T, dir string, min int64) (string, int64) {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	if len(segs) == 0 {
		t.Fatalf("no segment in %s", dir)
	}
	sort.Strings(segs)
	active := segs[len(segs)-1]
	st, err := os.Stat(active)
	if err != nil || st.Size() < min {
		t.Fatalf("active segment %s: %v, %d bytes", active, err, st.Size())
	}
	return active, st.Size()
}

// deleteIndexes removes a partition dir's offset and time indexes.
func deleteIndexes(dir string) {
	for _, pat := range []string{"*.index", "*.timeindex"} {
		idx, _ := filepath.Glob(filepath.Join(dir, pat))
		for _, p := range idx {
			os.Remove(p)
		}
	}
}

// 5. With two followers paused, acks=all produce gets NOT_ENOUGH_REPLICAS,
// and nothing is acknowledged that is not replicated. Five nodes, so that
// the controller quorum outlives two paused brokers and can shrink the ISR
// (three would lose their majority, and with it every metadata change);
// q's replicas are brokers 1, 2 and 3.
func TestFaultMinISR(t *testing.T) {
	c := testcluster.Start(t, 5)
	// A failure shows what the brokers said: the controller's fencing,
	// the ISR changes, elections.
	defer func() {
		if t.Failed() {
			dumpLogs(t, c)
		}
	}()
	c.Controller(15 * time.Second)
	adm := c.Admin()
	waitBrokers(t, adm, 5)
	createAssigned(t, c, "q", [][]int32{{1, 2, 3}}, "min.insync.replicas", "2")
	c.Leaders("q", 10*time.Second)
	w := testcluster.StartWorkload(t, c.Bootstrap(), testcluster.WorkloadConfig{Topic: "q", Rate: 500, Key: "hot"})
	time.Sleep(2 * time.Second)
	l := leaderOf(t, c, 0)
	var paused []int32
	for _, id := range []int32{1, 2, 3} {
		if id != l {
			if err := c.Node(id).Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			paused = append(paused, id)
		}
	}
	paused0 := time.Now()
	// What the produce below meets is the leader's own metadata, which
	// may trail another broker's: wait for the leader's. The controller
	// shrinks the ISR when it fences the paused brokers, a session
	// timeout after their last heartbeat or after its own takeover; the
	// leader would shrink it itself only after replica.lag.time.max.ms
	// (30 s, checked every 15 s). So this is a hang detector, not 30 s.
	waitISROf(t, c, l, "q", []int32{l})
	t.Logf("the ISR of q-0 is leader %d alone, in its own metadata, %v after the pause", l, time.Since(paused0).Round(time.Millisecond))
	// Requests in flight when the ISR shrank may still be answered (with
	// an error); give them a moment before counting.
	time.Sleep(time.Second)
	before := w.Acks()

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Node(l).Addr()), kgo.DefaultProduceTopic("q"),
		kgo.DisableIdempotentWrite(), kgo.RecordRetries(0), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err = cl.ProduceSync(ctx, &kgo.Record{Value: []byte("not-replicated")}).FirstErr()
	cancel()
	if !errors.Is(err, kerr.NotEnoughReplicas) {
		t.Errorf("acks=all produce to leader %d with an ISR of 1: %v, want NOT_ENOUGH_REPLICAS", l, err)
	}
	time.Sleep(2 * time.Second)
	if after := w.Acks(); after != before {
		t.Errorf("%d records acknowledged while the ISR was the leader alone", after-before)
	}
	for _, id := range paused {
		c.Node(id).Signal(syscall.SIGCONT)
	}
	resumed := time.Now()
	// The resumed brokers rejoin once the controller has unfenced them.
	// Asked of the leader, which never paused: a resumed follower answers
	// at first from the image it held when paused, whose ISR was still
	// whole, and the wait would pass before anything rejoined.
	waitISROf(t, c, l, "q", []int32{1, 2, 3})
	t.Logf("the ISR of q-0 is whole again %v after the followers resumed", time.Since(resumed).Round(time.Millisecond))
	if _, ok := w.AwaitAck(time.Now(), 15*time.Second); !ok {
		t.Fatal("nothing acknowledged after the followers came back")
	}
	score(t, c, minAcked/2, w.Stop()) // 500 records/s
}

// 6. Kill the active controller: another is elected within seconds, the
// metadata is intact, and producers and consumers go on.
func TestFaultControllerLoss(t *testing.T) {
	c, adm := startQueue(t, 3)
	w := testcluster.StartWorkload(t, c.Bootstrap(), testcluster.WorkloadConfig{Topic: "q", Rate: 1000})
	time.Sleep(2 * time.Second)
	ctrl := c.Controller(10 * time.Second)
	c.Node(ctrl).Kill()
	killed := time.Now()
	next := c.Controller(15 * time.Second)
	// How long the election took is a measurement (logged here), not an
	// assertion: a loaded CI machine can stretch it past any short bound.
	t.Logf("controller %d killed; %d active after %v", ctrl, next, time.Since(killed).Round(time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m, err := adm.Metadata(ctx, "q")
	if err != nil || len(m.Topics["q"].Partitions) != 3 {
		t.Fatalf("metadata after the controller failover: %v, %d partitions of q", err, len(m.Topics["q"].Partitions))
	}
	if d, ok := w.AwaitAck(killed, sessionTimeout+10*time.Second); !ok {
		t.Fatal("nothing acknowledged after the controller died")
	} else {
		t.Logf("acknowledgements resumed %v after the kill", d.Round(time.Millisecond))
	}
	c.Node(ctrl).Restart()
	waitISRAll(t, c, "q", 3)
	time.Sleep(time.Second)
	score(t, c, minAcked, w.Stop())
}

// 8. After a leader kill, produce resumes, the broker still down. How
// soon (the target: within the session timeout plus 5 s) is measured by
// BenchmarkFailoverResume and logged here: on a loaded CI machine under
// the race detector a correct failover can take longer.
func TestFaultLiveness(t *testing.T) {
	c, _ := startQueue(t, 1)
	w := testcluster.StartWorkload(t, c.Bootstrap(), testcluster.WorkloadConfig{Topic: "q", Rate: 1000, Key: "hot"})
	time.Sleep(2 * time.Second)
	l := leaderOf(t, c, 0)
	c.Node(l).Kill()
	killed := time.Now()
	d, ok := w.AwaitAck(killed, 30*time.Second)
	if !ok {
		dumpLogs(t, c)
		t.Fatalf("produce did not resume within %v of killing leader %d", testcluster.HangBound, l)
	}
	t.Logf("leader %d killed; acknowledgements resumed after %v (target %v)", l, d.Round(time.Millisecond), sessionTimeout+5*time.Second)
	time.Sleep(time.Second)
	score(t, c, minAcked, w.Stop())
}

// waitISRAll waits until every partition of topic has an ISR of n.
func waitISRAll(t *testing.T, c *testcluster.Cluster, topic string, n int) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ps, ok := topicState(c, topic)
		for _, p := range ps {
			ok = ok && len(p.ISR) == n
		}
		if ok {
			return
		}
	}
	t.Fatalf("not every partition of %s has %d in-sync replicas after 30 s", topic, n)
}

// waitISROf waits until partition 0 of topic has exactly the ISR isr, led
// by leader, in leader's own metadata; leader -1 takes any leader, in any
// running broker's. It waits testcluster.HangBound: ISR changes wait out
// sessions and elections.
func waitISROf(t *testing.T, c *testcluster.Cluster, leader int32, topic string, isr []int32) {
	t.Helper()
	var last []kmsg.MetadataResponseTopicPartition
	for deadline := time.Now().Add(testcluster.HangBound); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var ps []kmsg.MetadataResponseTopicPartition
		var ok bool
		if leader < 0 {
			ps, ok = topicState(c, topic)
		} else {
			ps, ok = nodeTopicState(c.Node(leader).Addr(), topic)
		}
		if !ok {
			continue
		}
		last = ps
		if (leader < 0 || ps[0].Leader == leader) && equalSets(ps[0].ISR, isr) {
			return
		}
	}
	if len(last) == 0 {
		t.Fatalf("%s-0: no metadata from broker %d in %v", topic, leader, testcluster.HangBound)
	}
	t.Fatalf("%s-0 has leader %d and ISR %v after %v, want leader %d and ISR %v (broker %d's metadata; -1: any's)",
		topic, last[0].Leader, last[0].ISR, testcluster.HangBound, leader, isr, leader)
}

// createAssigned creates topic with partition p on the replicas assign[p].
func createAssigned(t *testing.T, c *testcluster.Cluster, topic string, assign [][]int32, configs ...string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 10000
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = topic, -1, -1
	for p, replicas := range assign {
		a := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		a.Partition, a.Replicas = int32(p), replicas
		rt.ReplicaAssignment = append(rt.ReplicaAssignment, a)
	}
	for i := 0; i+1 < len(configs); i += 2 {
		cfg := kmsg.NewCreateTopicsRequestTopicConfig()
		cfg.Name, cfg.Value = configs[i], kmsg.StringPtr(configs[i+1])
		rt.Configs = append(rt.Configs, cfg)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.Topics[0].ErrorCode)
	}
	if err != nil {
		t.Fatalf("creating %s on %v: %v", topic, assign, err)
	}
}

// 9. Move a partition from brokers {1,2,3} to {2,3,4} under load, with
// `tributary cluster reassign`: nothing is lost, and broker 1 deletes its
// copy.
func TestFaultReassignment(t *testing.T) {
	c := testcluster.Start(t, 4)
	c.Controller(15 * time.Second)
	adm := c.Admin()
	waitBrokers(t, adm, 4)
	createAssigned(t, c, "q", [][]int32{{1, 2, 3}}, "min.insync.replicas", "2")
	c.Leaders("q", 10*time.Second)
	w := testcluster.StartWorkload(t, c.Bootstrap(), testcluster.WorkloadConfig{Topic: "q", Rate: 1000, Key: "hot"})
	time.Sleep(3 * time.Second)

	plan := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(plan, []byte(`{"version":1,"partitions":[{"topic":"q","partition":0,"replicas":[2,3,4]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := testbroker.Binary(t)
	out, err := exec.Command(bin, "cluster", "reassign", "execute", "-b", c.Bootstrap(), "-f", plan).CombinedOutput()
	if err != nil {
		t.Fatalf("reassign execute: %v\n%s", err, out)
	}
	t.Logf("tributary cluster reassign execute:\n%s", out)
	start := time.Now()
	for {
		out, err = exec.Command(bin, "cluster", "reassign", "verify", "-b", c.Bootstrap(), "-f", plan).CombinedOutput()
		if err == nil {
			break
		}
		if time.Since(start) > 60*time.Second {
			t.Fatalf("reassignment not complete after 60 s: %v\n%s", err, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("reassignment complete after %v:\n%s", time.Since(start).Round(time.Millisecond), out)
	m, err := adm.Metadata(context.Background(), "q")
	if err != nil {
		t.Fatal(err)
	}
	if p := m.Topics["q"].Partitions[0]; !equalSets(p.Replicas, []int32{2, 3, 4}) || !equalSets(p.ISR, []int32{2, 3, 4}) {
		t.Fatalf("after the reassignment: replicas %v, ISR %v, want 2, 3, 4", p.Replicas, p.ISR)
	}
	old := filepath.Join(c.Node(1).DataDir(), "q-0")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if _, err := os.Stat(old); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is still there after the reassignment", old)
		}
	}
	time.Sleep(time.Second)
	score(t, c, minAcked, w.Stop())
	checkReplicas(t, c)
}

func equalSets(a, b []int32) bool {
	a, b = append([]int32(nil), a...), append([]int32(nil), b...)
	sort.Slice(a, func(i, j int) bool { return a[i] < a[j] })
	sort.Slice(b, func(i, j int) bool { return b[i] < b[j] })
	return slices.Equal(a, b)
}

// dumpLogs logs what each broker said at INFO and above, for a failure.
func dumpLogs(t testing.TB, c *testcluster.Cluster) {
	for _, n := range c.Nodes {
		var keep []string
		for _, line := range strings.Split(n.Log(), "\n") {
			if !strings.Contains(line, "level=DEBUG") {
				keep = append(keep, line)
			}
		}
		if len(keep) > 150 {
			keep = keep[len(keep)-150:]
		}
		t.Logf("broker %d:\n%s", n.ID, strings.Join(keep, "\n"))
	}
}
