// Package testcluster starts a cluster of real tributary broker processes
// on loopback for tests: every node a broker and a voter of the controller
// quorum (combined mode), each with its own log dir, client and controller
// ports. A test kills (-9), pauses, restarts nodes and waits for the
// controller or for partition leaders, and the cluster is killed when the
// test ends.
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

	"github.com/tributary-io/tributary/internal/testbroker"
)

// Cluster is N nodes.
type Cluster struct {
	t     testing.TB
	Nodes []*Node
}

// Node is one process of the cluster.
type Node struct {
	ID int32
	*testbroker.Broker
}

// Start starts n nodes, ids 1 to n, with props ("name=value") on each, and
// waits until every one is ready. The session timeout defaults to 3 s, so
// that fencing is quick in tests.
func Start(t testing.TB, n int, props ...string) *Cluster {
	t.Helper()
	type ports struct{ client, ctrl int }
	ps := make([]ports, n)
	var voters []string
	for i := range ps {
		ps[i] = ports{testbroker.FreePort(t), testbroker.FreePort(t)}
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, ps[i].ctrl))
	}
	base := []string{
		"process.roles=broker,controller",
		"controller.listener.names=CONTROLLER",
		"controller.quorum.voters=" + strings.Join(voters, ","),
		"broker.session.timeout.ms=3000",
		"broker.heartbeat.interval.ms=500",
		"controller.quorum.election.timeout.ms=500",
	}
	c := &Cluster{t: t, Nodes: make([]*Node, n)}
	var wg sync.WaitGroup
	for i := range n {
		cfg := testbroker.Config{
			Dir:       t.TempDir(),
			Port:      ps[i].client,
			Listeners: fmt.Sprintf("PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", ps[i].client, ps[i].ctrl),
			Props:     append(append([]string{fmt.Sprintf("node.id=%d", i+1)}, base...), props...),
		}
		wg.Add(1)
		// Together: a node waits for a quorum before it calls itself ready.
		go func() {
			defer wg.Done()
			c.Nodes[i] = &Node{ID: int32(i + 1), Broker: testbroker.StartConfig(t, cfg)}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return c
}

// Bootstrap is every node's client address, comma-separated.
func (c *Cluster) Bootstrap() string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.Addr())
	}
	return strings.Join(out, ",")
}

// Node is the node with id.
func (c *Cluster) Node(id int32) *Node { return c.Nodes[id-1] }

// Admin is a kadm client of the cluster, closed when the test ends.
func (c *Cluster) Admin() *kadm.Client {
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...))
	if err != nil {
		c.t.Fatal(err)
	}
	c.t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// Controller waits until the running nodes agree on an active controller
// that is one of them, and returns its id.
func (c *Cluster) Controller(timeout time.Duration) int32 {
	c.t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if id := c.agreedController(); id > 0 {
			return id
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("no agreed active controller after %v", timeout)
	return -1
}

func (c *Cluster) agreedController() int32 {
	agreed := int32(-1)
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.Addr()))
		if err != nil {
			return -1
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		m, err := kadm.NewClient(cl).BrokerMetadata(ctx)
		cancel()
		cl.Close()
		if err != nil || m.Controller < 0 || (agreed >= 0 && m.Controller != agreed) {
			return -1
		}
		if !c.Node(m.Controller).Running() {
			return -1
		}
		agreed = m.Controller
	}
	return agreed
}

// Leaders waits until every partition of topic has a leader on a running
// node and returns them by partition.
func (c *Cluster) Leaders(topic string, timeout time.Duration) map[int32]int32 {
	c.t.Helper()
	adm := c.Admin()
	deadline := time.Now().Add(timeout)
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
					return out
				}
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("topic %s has no leader for every partition after %v (last: %v)", topic, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
