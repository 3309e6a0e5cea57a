// Package testcluster starts a cluster of real tributary processes on
// loopback for tests, each with its own log dir and ports: every node a
// broker and a voter of the controller quorum (combined mode, Start), or
// controller-only voters beside broker-only nodes (StartSplit). A test
// kills (-9), pauses, restarts nodes and waits for the controller or for
// partition leaders. When the test ends every node still running is stopped
// with SIGTERM, all at once, and must exit with status 0; the logs of every
// node and every incarnation (a node killed with -9 and restarted) are
// scanned for data races, panics and fatal errors, any of which fails the
// test (testbroker.Broker.Finish).
package testcluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/kwire"
	"github.com/tributary-io/tributary/internal/testbroker"
)

// Cluster is N nodes.
type Cluster struct {
	t     testing.TB
	Nodes []*Node
	// base are the props every node shares (the quorum, the timeouts).
	base []string
	// ClientOpts are added to every client the harness makes (Admin,
	// Leaders, Score) and Peer is how its own Kafka connections log in
	// (DescribeQuorum): set both for a cluster with secured listeners.
	ClientOpts []kgo.Opt
	Peer       kwire.Security
}

// Node is one process of the cluster.
type Node struct {
	ID int32
	// IsBroker and IsController are its process.roles.
	IsBroker, IsController bool
	// ControllerAddr is its CONTROLLER listener: a voter's quorum address,
	// where a broker-only node receives the metadata log.
	ControllerAddr string
	*testbroker.Broker
}

// Start starts n nodes, ids 1 to n, each broker and controller, with props
// ("name=value") on each, and waits until every one is ready. The session
// timeout defaults to 3 s, so that fencing is quick in tests.
func Start(t testing.TB, n int, props ...string) *Cluster {
	t.Helper()
	return start(t, n, 0, props, nil)
}

// StartCustom is Start with each node's configuration passed to customize
// before the node starts, to add listeners or flags.
func StartCustom(t testing.TB, n int, customize func(n *Node, cfg *testbroker.Config), props ...string) *Cluster {
	t.Helper()
	return start(t, n, 0, props, customize)
}

// StartSplit starts controllers controller-only nodes (ids 1 to
// controllers, the quorum's voters) and brokers broker-only nodes (the ids
// after them), as a production cluster is laid out.
func StartSplit(t testing.TB, controllers, brokers int, props ...string) *Cluster {
	t.Helper()
	return start(t, controllers, brokers, props, nil)
}

// StartSplitCustom is StartSplit with each node's configuration passed to
// customize before the node starts.
func StartSplitCustom(t testing.TB, controllers, brokers int, customize func(n *Node, cfg *testbroker.Config), props ...string) *Cluster {
	t.Helper()
	return start(t, controllers, brokers, props, customize)
}

// start starts voters nodes with the controller role (also brokers when
// brokersOnly is 0: combined mode) and brokersOnly broker-only nodes.
func start(t testing.TB, voters, brokersOnly int, props []string, customize func(*Node, *testbroker.Config)) *Cluster {
	t.Helper()
	n := voters + brokersOnly
	combined := brokersOnly == 0
	ports := make([]int, n)
	// Every node has a controller listener: a voter's is its address in
	// the quorum, a broker-only node's receives the metadata log (Raft is
	// never accepted on a client listener).
	ctrlPorts := make([]int, n)
	var quorum []string
	for i := range ports {
		ports[i] = testbroker.FreePort(t)
		ctrlPorts[i] = testbroker.FreePort(t)
		if i < voters {
			quorum = append(quorum, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ctrlPorts[i]))
		}
	}
	base := []string{
		"controller.listener.names=CONTROLLER",
		"controller.quorum.voters=" + strings.Join(quorum, ","),
		"broker.session.timeout.ms=3000",
		"broker.heartbeat.interval.ms=500",
		"controller.quorum.election.timeout.ms=500",
	}
	base = append(base, props...)
	c := &Cluster{t: t, Nodes: make([]*Node, n), base: base}
	var wg sync.WaitGroup
	for i := range n {
		node := &Node{ID: int32(i + 1), IsController: i < voters, IsBroker: combined || i >= voters,
			ControllerAddr: fmt.Sprintf("127.0.0.1:%d", ctrlPorts[i])}
		cfg := testbroker.Config{Dir: t.TempDir(), Port: ports[i]}
		switch {
		case node.IsBroker && node.IsController:
			cfg.Listeners = fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", ports[i], ctrlPorts[i])
			cfg.Props = []string{"process.roles=broker,controller"}
		case node.IsController:
			// Its only listener is the controller's, which Addr names.
			cfg.Port = ctrlPorts[i]
			cfg.Listeners = fmt.Sprintf("CONTROLLER://127.0.0.1:%d", ctrlPorts[i])
			cfg.Props = []string{"process.roles=controller"}
		default:
			cfg.Listeners = fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", ports[i], ctrlPorts[i])
			cfg.Props = []string{"process.roles=broker"}
		}
		cfg.Props = append(append(cfg.Props, fmt.Sprintf("node.id=%d", i+1)), base...)
		if customize != nil {
			customize(node, &cfg)
		}
		wg.Add(1)
		// Together: a node waits for a quorum before it calls itself ready.
		go func() {
			defer wg.Done()
			node.Broker = testbroker.StartConfig(t, cfg)
			c.Nodes[i] = node
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// Registered after the nodes' own cleanups, so it runs before them: a
	// node stopped alone would wait out controlled shutdown against a
	// quorum its peers already took down with them.
	t.Cleanup(c.stop)
	return c
}

// BrokerOnlyConfig is the configuration of a broker-only node id that joins
// the cluster, with its own log dir and ports, for a test to start
// (testbroker.StartConfig) or to run as it wants.
func (c *Cluster) BrokerOnlyConfig(id int32) testbroker.Config {
	port, ctrl := testbroker.FreePort(c.t), testbroker.FreePort(c.t)
	return testbroker.Config{Dir: c.t.TempDir(), Port: port,
		Listeners: fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", port, ctrl),
		Props:     append([]string{"process.roles=broker", fmt.Sprintf("node.id=%d", id)}, c.base...)}
}

// stop stops the nodes still running, broker-only nodes first and then the
// controllers (as Kafka's operators are told to), each group at once, and
// checks what every node left behind.
func (c *Cluster) stop() {
	c.t.Helper()
	var brokers, controllers []*testbroker.Broker
	for _, n := range c.Nodes {
		if n.IsController {
			controllers = append(controllers, n.Broker)
		} else {
			brokers = append(brokers, n.Broker)
		}
	}
	testbroker.FinishAll(c.t, brokers, controllers)
}

// Brokers are the nodes with the broker role.
func (c *Cluster) Brokers() []*Node {
	var out []*Node
	for _, n := range c.Nodes {
		if n.IsBroker {
			out = append(out, n)
		}
	}
	return out
}

// Bootstrap is every broker's client address, comma-separated.
func (c *Cluster) Bootstrap() string {
	var out []string
	for _, n := range c.Brokers() {
		out = append(out, n.Addr())
	}
	return strings.Join(out, ",")
}

// Node is the node with id.
func (c *Cluster) Node(id int32) *Node { return c.Nodes[id-1] }

// Admin is a kadm client of the cluster, closed when the test ends.
func (c *Cluster) Admin() *kadm.Client {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...)}, c.ClientOpts...)...)
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// Controller waits until the running nodes agree on an active controller
// that is one of them, and returns its id. timeout is what the test
// expects: a longer wait is logged, and only one past HangBound fails.
func (c *Cluster) Controller(timeout time.Duration) int32 {
	c.t.Helper()
	start := time.Now()
	deadline := start.Add(hangBound(timeout))
	for time.Now().Before(deadline) {
		if id := c.agreedController(); id > 0 {
			c.logSlow("an agreed active controller", start, timeout)
			return id
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("no agreed active controller after %v", hangBound(timeout))
	return -1
}

// logSlow logs a wait that took longer than the test expected, so that
// slowness stays visible in the log without failing a correct cluster.
func (c *Cluster) logSlow(what string, start time.Time, expected time.Duration) {
	c.t.Helper()
	if d := time.Since(start); d > expected {
		c.t.Logf("%s after %v (the test expected it within %v)", what, d.Round(time.Millisecond), expected)
	}
}

// agreedController asks every running node for the quorum's leader
// (DescribeQuorum): the same running node from all of them, or -1.
func (c *Cluster) agreedController() int32 {
	agreed := int32(-1)
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		leader := int32(-1)
		if q, err := describeQuorum(n.Addr(), c.Peer); err == nil {
			leader = q.LeaderID
		}
		if leader < 0 || (agreed >= 0 && leader != agreed) || !c.Node(leader).Running() {
			return -1
		}
		agreed = leader
	}
	return agreed
}

// Leaders waits until every partition of topic has a leader on a running
// node and returns them by partition. timeout is what the test expects: a
// longer wait is logged, and only one past HangBound fails.
func (c *Cluster) Leaders(topic string, timeout time.Duration) map[int32]int32 {
	c.t.Helper()
	adm := c.Admin()
	start := time.Now()
	deadline := start.Add(hangBound(timeout))
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		m, err := adm.Metadata(ctx, topic)
		cancel()
		if err == nil {
			if td, ok := m.Topics[topic]; ok && td.Err == nil && len(td.Partitions) > 0 {
				out, ok := map[int32]int32{}, true
				for p, pd := range td.Partitions {
					if pd.Leader < 0 || !c.Node(pd.Leader).Running() {
						ok = false
					}
					out[p] = pd.Leader
				}
				if ok {
					c.logSlow("a leader for every partition of "+topic, start, timeout)
					return out
				}
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("topic %s has no leader for every partition after %v (last: %v)", topic, hangBound(timeout), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// QuorumLeader is the active controller as the node at addr sees it, -1
// when it does not know or does not answer.
func QuorumLeader(addr string) int32 {
	q, err := DescribeQuorum(addr)
	if err != nil {
		return -1
	}
	return q.LeaderID
}

// DescribeQuorum asks the node at addr for the metadata quorum.
func DescribeQuorum(addr string) (*kmsg.DescribeQuorumResponseTopicPartition, error) {
	return describeQuorum(addr, kwire.Security{})
}

func describeQuorum(addr string, sec kwire.Security) (*kmsg.DescribeQuorumResponseTopicPartition, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	conn, err := kwire.DialSecure(ctx, addr, "testcluster", sec)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	req := kmsg.NewPtrDescribeQuorumRequest()
	req.SetVersion(1)
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = []kmsg.DescribeQuorumRequestTopicPartition{kmsg.NewDescribeQuorumRequestTopicPartition()}
	req.Topics = append(req.Topics, rt)
	resp, err := conn.RoundTrip(req, time.Second)
	if err != nil {
		return nil, err
	}
	r := resp.(*kmsg.DescribeQuorumResponse)
	if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
		return nil, fmt.Errorf("DescribeQuorum at %s: no answer for __cluster_metadata-0", addr)
	}
	p := r.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		return nil, fmt.Errorf("DescribeQuorum at %s: error code %d", addr, p.ErrorCode)
	}
	return &p, nil
}
