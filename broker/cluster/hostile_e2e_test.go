package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/replica"
	"github.com/tributary-io/tributary/internal/kwire"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testcluster"
)

// A hostile client against a three-node cluster, as the issue tried it: a
// hand-written client that skips ApiVersions and sends the brokers'
// internal APIs to client listeners, heartbeats with forged and stale
// broker epochs, registrations of live node ids, Raft to a client listener
// and replica fetches from a broker that is not a replica. Then a real
// second process with a live node's node.id. Nothing changes: every
// partition keeps its leader, Metadata lists the same brokers, and acks=all
// produce and consume go on.
func TestHostileClients(t *testing.T) {
	c := testcluster.Start(t, 3)
	ctrl := c.Controller(15 * time.Second)
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 6, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "h"); err != nil {
		t.Fatal(err)
	}
	createAssigned(t, c, "two", [][]int32{{1, 2}}) // broker 3 is no replica of it
	c.Leaders("h", 15*time.Second)
	c.Leaders("two", 15*time.Second)
	waitISR(t, c, "two", 2)
	produce(t, c.Bootstrap(), "h", 0, 100)

	// A broker-only node too, for the duplicate node.id below.
	cfg4 := c.BrokerOnlyConfig(4)
	b4 := testbroker.StartConfig(t, cfg4)
	raft4 := strings.TrimPrefix(strings.Split(cfg4.Listeners, ",")[1], "CONTROLLER://")
	waitBrokers(t, adm, 4)
	epoch4 := loggedEpoch(t, b4.Log())

	leaders := partitionLeaders(t, adm)
	quorumBefore, err := testcluster.DescribeQuorum(c.Node(ctrl).Addr())
	if err != nil {
		t.Fatal(err)
	}

	t.Run("InternalAPIsOnClientListeners", func(t *testing.T) {
		addrs := []string{b4.Addr()}
		for _, n := range c.Nodes {
			addrs = append(addrs, n.Addr())
		}
		for _, addr := range addrs {
			for id := int32(1); id <= 4; id++ {
				for _, req := range internalRequests(id, epoch4) {
					if resp, err := roundTrip(addr, req); !closedConn(err) {
						t.Errorf("the client listener %s answered %s for broker %d (%+v, %v); want the connection closed",
							addr, kmsg.NameForKey(req.Key()), id, resp, err)
					}
				}
			}
		}
		// A broker-only node's controller listener is for Raft alone.
		for _, req := range append(internalRequests(4, epoch4), kmsg.NewPtrMetadataRequest(), kmsg.NewPtrApiVersionsRequest()) {
			if resp, err := roundTrip(raft4, req); !closedConn(err) {
				t.Errorf("broker-only node 4's controller listener answered %s (%+v, %v); want the connection closed", kmsg.NameForKey(req.Key()), resp, err)
			}
		}
	})

	t.Run("ForgedAndStaleEpochs", func(t *testing.T) {
		// Epochs are metadata offsets, small and guessable (0 is the first
		// broker's when it registers first): these are surely not one.
		forged := []int64{-1, -2, 1 << 40, math.MaxInt64}
		for id := int32(1); id <= 4; id++ {
			epochs := forged
			if id == 4 {
				epochs = append(epochs, epoch4+1, epoch4-1)
			}
			for _, e := range epochs {
				hb := heartbeat(id, e)
				resp, err := roundTrip(c.Node(ctrl).ControllerAddr, hb)
				if err != nil {
					t.Fatalf("heartbeat for %d with epoch %d: %v", id, e, err)
				}
				r := resp.(*kmsg.BrokerHeartbeatResponse)
				if r.ErrorCode != kerr.StaleBrokerEpoch.Code || r.ShouldShutdown {
					t.Errorf("heartbeat with WantShutdown for broker %d, epoch %d: %v, ShouldShutdown %v; want STALE_BROKER_EPOCH",
						id, e, kerr.ErrorForCode(r.ErrorCode), r.ShouldShutdown)
				}
			}
			ap := alterPartition(t, c, id, -1)
			resp, err := roundTrip(c.Node(ctrl).ControllerAddr, ap)
			if err != nil {
				t.Fatal(err)
			}
			if code := resp.(*kmsg.AlterPartitionResponse).ErrorCode; code != kerr.StaleBrokerEpoch.Code {
				t.Errorf("AlterPartition from broker %d with epoch -1: %v, want STALE_BROKER_EPOCH", id, kerr.ErrorForCode(code))
			}
			pid := kmsg.NewPtrAllocateProducerIDsRequest()
			pid.BrokerID, pid.BrokerEpoch = id, -1
			if resp, err = roundTrip(c.Node(ctrl).ControllerAddr, pid); err != nil {
				t.Fatal(err)
			}
			if r := resp.(*kmsg.AllocateProducerIDsResponse); r.ErrorCode != kerr.StaleBrokerEpoch.Code || r.ProducerIDLen != 0 {
				t.Errorf("AllocateProducerIds for broker %d with epoch -1: %v, %d ids; want STALE_BROKER_EPOCH", id, kerr.ErrorForCode(r.ErrorCode), r.ProducerIDLen)
			}
		}
		// The other voters are not the active controller.
		for _, n := range c.Nodes {
			if n.ID == ctrl {
				continue
			}
			resp, err := roundTrip(n.ControllerAddr, heartbeat(1, -1))
			if err != nil || resp.(*kmsg.BrokerHeartbeatResponse).ErrorCode != kerr.NotController.Code {
				t.Errorf("heartbeat to voter %d, not the active controller: %+v %v; want NOT_CONTROLLER", n.ID, resp, err)
			}
		}
	})

	t.Run("DuplicateRegistration", func(t *testing.T) {
		// Node 4's duplicate is a real process, below.
		for _, id := range []int32{2, 3} {
			req := kmsg.NewPtrBrokerRegistrationRequest()
			req.SetVersion(3)
			req.BrokerID, req.ClusterID = id, clusterID(t, c)
			req.IncarnationID = [16]byte{0xba, 0xd}
			l := kmsg.NewBrokerRegistrationRequestListener()
			l.Name, l.Host, l.Port = "PLAINTEXT", "127.0.0.1", 1
			rl := l
			rl.Name = "CONTROLLER"
			req.Listeners = append(req.Listeners, l, rl)
			req.LogDirs = [][16]byte{{0xba, 0xd}}
			resp, err := roundTrip(c.Node(ctrl).ControllerAddr, req)
			if err != nil {
				t.Fatal(err)
			}
			if code := resp.(*kmsg.BrokerRegistrationResponse).ErrorCode; code != kerr.DuplicateBrokerRegistration.Code {
				t.Errorf("registration of live broker %d by another incarnation: %v, want DUPLICATE_BROKER_REGISTRATION", id, kerr.ErrorForCode(code))
			}
		}
	})

	t.Run("RaftOnClientListener", func(t *testing.T) {
		for _, n := range c.Nodes {
			if err := appendEntries(n.Addr(), quorumBefore.LeaderEpoch+100); err == nil {
				t.Errorf("node %d's client listener took a Raft AppendEntries", n.ID)
			}
		}
		if err := appendEntries(b4.Addr(), quorumBefore.LeaderEpoch+100); err == nil {
			t.Error("broker-only node 4's client listener took a Raft AppendEntries")
		}
		// An election may happen under load (the tests' election timeout
		// is 500 ms), but no node took the injected term.
		for _, n := range c.Nodes {
			if q, err := testcluster.DescribeQuorum(n.Addr()); err == nil && q.LeaderEpoch >= quorumBefore.LeaderEpoch+100 {
				t.Errorf("node %d is at Raft term %d, the one a client injected", n.ID, q.LeaderEpoch)
			}
		}
	})

	t.Run("ReplicaFetchFromNonReplica", func(t *testing.T) {
		secret := clusterSecret(t, c.Node(1).DataDir())
		p := partitionOf(t, c, "two", 0)
		leader := c.Node(p.Leader)
		cases := []struct {
			secret string
			epoch  int32
			want   *kerr.Error
		}{
			{"", p.LeaderEpoch, kerr.ClusterAuthorizationFailed},
			{secret, p.LeaderEpoch, kerr.UnknownLeaderEpoch},
			{secret, -1, kerr.NotLeaderForPartition},
			{secret, p.LeaderEpoch + 1, kerr.UnknownLeaderEpoch},
		}
		if p.LeaderEpoch > 0 {
			cases = append(cases, struct {
				secret string
				epoch  int32
				want   *kerr.Error
			}{secret, p.LeaderEpoch - 1, kerr.FencedLeaderEpoch})
		}
		for _, tc := range cases {
			r := replicaFetch{addr: leader.Addr(), version: 12, id: 3, secret: tc.secret, topic: "two", leaderEpoch: tc.epoch}.send(t)
			code := r.ErrorCode
			var records int
			if code == 0 && len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
				code = r.Topics[0].Partitions[0].ErrorCode
				records = len(r.Topics[0].Partitions[0].RecordBatches)
			}
			if code != tc.want.Code || records != 0 {
				t.Errorf("replica fetch of two-0 by non-replica 3 (secret %v, leader epoch %d): %v with %d bytes of records, want %v",
					tc.secret != "", tc.epoch, kerr.ErrorForCode(code), records, tc.want)
			}
		}
		if got := partitionOf(t, c, "two", 0); !slices.Equal(got.ISR, []int32{1, 2}) && !slices.Equal(got.ISR, []int32{2, 1}) {
			t.Errorf("two-0's ISR is %v after the fetches, want [1 2]", got.ISR)
		}
	})

	t.Run("DuplicateNodeProcess", func(t *testing.T) {
		cfg := c.BrokerOnlyConfig(4)
		cfg.Props = append(cfg.Props, "initial.broker.registration.timeout.ms=4000")
		out, code := runToExit(t, cfg, 60*time.Second)
		if code == 0 || !strings.Contains(out, "DUPLICATE_BROKER_REGISTRATION") || !strings.Contains(out, "give this node its own node.id") || strings.Contains(out, "broker ready") {
			t.Errorf("a second process with node.id 4 exited with %d, want non-zero after DUPLICATE_BROKER_REGISTRATION and what to do:\n%s", code, out)
		}
		if log := c.Node(c.Controller(10 * time.Second)).Log(); !refusedLine.MatchString(log) {
			t.Errorf("the active controller did not log the duplicate node.id:\n%s", log)
		}
		if strings.Contains(b4.Log(), "registering again") {
			t.Errorf("broker 4 was disturbed by its duplicate:\n%s", b4.Log())
		}
	})

	// Nothing changed.
	if got := partitionLeaders(t, adm); !maps.Equal(got, leaders) {
		t.Errorf("leaders moved: before %v, after %v", leaders, got)
	}
	if m, err := adm.BrokerMetadata(ctx); err != nil || !slices.Equal(m.Brokers.NodeIDs(), []int32{1, 2, 3, 4}) {
		t.Errorf("Metadata lists brokers %v (%v), want [1 2 3 4]", m.Brokers.NodeIDs(), err)
	}
	produce(t, c.Bootstrap(), "h", 100, 100)
	consumeAll(t, c.Bootstrap(), "h", 200)

	// A kill -9 and restart of the same node is that node, on the same log
	// dirs: registered at once, not refused as its own duplicate. Its old
	// epoch is stale from then on.
	b4.Kill()
	restarted := time.Now()
	b4.Restart()
	waitBrokers(t, adm, 4)
	t.Logf("broker 4 killed (-9) and restarted: listed again after %v", time.Since(restarted).Round(time.Millisecond))
	if strings.Contains(b4.Log(), "DUPLICATE_BROKER_REGISTRATION") {
		t.Errorf("broker 4, restarted on its own log dirs, was refused as a duplicate:\n%s", b4.Log())
	}
	if e := loggedEpoch(t, b4.Log()); e == epoch4 {
		t.Errorf("broker 4 kept epoch %d across a restart", e)
	}
	resp, err := roundTrip(c.Node(c.Controller(10*time.Second)).ControllerAddr, heartbeat(4, epoch4))
	if err != nil || resp.(*kmsg.BrokerHeartbeatResponse).ErrorCode != kerr.StaleBrokerEpoch.Code {
		t.Errorf("heartbeat with WantShutdown and broker 4's previous epoch: %+v %v; want STALE_BROKER_EPOCH", resp, err)
	}
	// A replica fetch (v15, KIP-903) from broker 4's previous incarnation
	// moves nothing; from the current one it is served.
	createAssigned(t, c, "four", [][]int32{{1, 4}})
	c.Leaders("four", 15*time.Second)
	p := partitionOf(t, c, "four", 0)
	secret := clusterSecret(t, c.Node(1).DataDir())
	for _, tc := range []struct {
		epoch int64
		want  *kerr.Error
	}{{epoch4, kerr.NotLeaderForPartition}, {loggedEpoch(t, b4.Log()), nil}} {
		r := replicaFetch{addr: c.Node(p.Leader).Addr(), version: 15, id: 4, brokerEpoch: tc.epoch, secret: secret, topicID: topicID(t, c, "four"), leaderEpoch: p.LeaderEpoch}.send(t)
		code := r.ErrorCode
		if code == 0 && len(r.Topics) == 1 && len(r.Topics[0].Partitions) == 1 {
			code = r.Topics[0].Partitions[0].ErrorCode
		}
		if want := int16(0); tc.want != nil && code != tc.want.Code || tc.want == nil && code != want {
			t.Errorf("replica fetch v15 by broker 4 with epoch %d: %v, want %v", tc.epoch, kerr.ErrorForCode(code), tc.want)
		}
	}
	time.Sleep(sessionTimeout / 2)
	waitBrokers(t, adm, 4)
	for _, n := range c.Nodes {
		if l := n.Log(); strings.Contains(l, "DATA RACE") || strings.Contains(l, "panic:") {
			t.Errorf("node %d:\n%s", n.ID, l)
		}
	}
}

// internalRequests are the APIs brokers send the active controller, from a
// client that claims to be broker id.
func internalRequests(id int32, epoch int64) []kmsg.Request {
	reg := kmsg.NewPtrBrokerRegistrationRequest()
	reg.BrokerID, reg.ClusterID = id, "x"
	l := kmsg.NewBrokerRegistrationRequestListener()
	l.Name, l.Host, l.Port = "PLAINTEXT", "127.0.0.1", 1
	reg.Listeners = append(reg.Listeners, l)
	ap := kmsg.NewPtrAlterPartitionRequest()
	ap.SetVersion(2)
	ap.BrokerID, ap.BrokerEpoch = id, epoch
	pid := kmsg.NewPtrAllocateProducerIDsRequest()
	pid.BrokerID, pid.BrokerEpoch = id, epoch
	return []kmsg.Request{reg, heartbeat(id, epoch), ap, pid}
}

func heartbeat(id int32, epoch int64) *kmsg.BrokerHeartbeatRequest {
	hb := kmsg.NewPtrBrokerHeartbeatRequest()
	hb.BrokerID, hb.BrokerEpoch, hb.WantShutdown = id, epoch, true
	return hb
}

// alterPartition shrinks the ISR of h-0 to its leader, as broker id.
func alterPartition(t *testing.T, c *testcluster.Cluster, id int32, epoch int64) *kmsg.AlterPartitionRequest {
	p := partitionOf(t, c, "h", 0)
	req := kmsg.NewPtrAlterPartitionRequest()
	req.SetVersion(2)
	req.BrokerID, req.BrokerEpoch = id, epoch
	rt := kmsg.NewAlterPartitionRequestTopic()
	rt.TopicID = topicID(t, c, "h")
	rp := kmsg.NewAlterPartitionRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.NewISR = 0, p.LeaderEpoch, []int32{id}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// roundTrip sends one request on a fresh connection, without ApiVersions.
func roundTrip(addr string, req kmsg.Request) (kmsg.Response, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := kwire.Dial(ctx, addr, "hostile")
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.RoundTrip(req, 5*time.Second)
}

// closedConn is whether a round trip ended with the server closing the
// connection, not with an answer or a timeout.
func closedConn(err error) bool {
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout()) &&
		(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "connection reset"))
}

func partitionLeaders(t *testing.T, adm *kadm.Client) map[string]int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := adm.Metadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int32{}
	for _, td := range m.Topics {
		for _, pd := range td.Partitions {
			out[fmt.Sprintf("%s-%d", td.Topic, pd.Partition)] = pd.Leader
		}
	}
	return out
}

func partitionOf(t *testing.T, c *testcluster.Cluster, topic string, p int32) kmsg.MetadataResponseTopicPartition {
	t.Helper()
	// Node 1 applies the metadata log in its own time: the leaders the
	// admin client saw may not have reached it yet.
	// A slow answer (a loaded machine) is asked again, like a missing
	// leader; the bound only detects a hang.
	deadline := time.Now().Add(30 * time.Second)
	for {
		m, err := metadataAt(c.Node(1).Addr())
		if err == nil {
			for _, mt := range m.Topics {
				if mt.Topic != nil && *mt.Topic == topic && int(p) < len(mt.Partitions) && mt.Partitions[p].Leader >= 0 {
					return mt.Partitions[p]
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no partition %s-%d with a leader in node 1's Metadata after 30 s (last error: %v)", topic, p, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func topicID(t *testing.T, c *testcluster.Cluster, topic string) [16]byte {
	t.Helper()
	m, err := metadataAt(c.Node(1).Addr())
	if err != nil {
		t.Fatal(err)
	}
	for _, mt := range m.Topics {
		if mt.Topic != nil && *mt.Topic == topic {
			return mt.TopicID
		}
	}
	t.Fatalf("no topic %s", topic)
	return [16]byte{}
}

func clusterID(t *testing.T, c *testcluster.Cluster) string {
	t.Helper()
	m, err := metadataAt(c.Node(1).Addr())
	if err != nil || m.ClusterID == nil {
		t.Fatalf("Metadata: %v", err)
	}
	return *m.ClusterID
}

var refusedLine = regexp.MustCompile(`refused the registration of a second broker with a live broker's node.id.* node_id=4 `)

var epochLine = regexp.MustCompile(`registered with the controller.*broker_epoch=(\d+)`)

// loggedEpoch is the broker epoch a broker logged last.
func loggedEpoch(t *testing.T, log string) int64 {
	t.Helper()
	ms := epochLine.FindAllStringSubmatch(log, -1)
	if len(ms) == 0 {
		t.Fatalf("no broker epoch logged:\n%s", log)
	}
	e, _ := strconv.ParseInt(ms[len(ms)-1][1], 10, 64)
	return e
}

var secretRecord = regexp.MustCompile(`"secret":\{"value":"([0-9a-f]+)"\}`)

// clusterSecret reads the inter-broker secret from a node's copy of the
// metadata log, as a broker (or someone with its disk) knows it.
func clusterSecret(t *testing.T, dir string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "__cluster_metadata", "snapshots", "*", "state.bin"))
	files = append(files, filepath.Join(dir, "__cluster_metadata", "raft.db"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if m := secretRecord.FindSubmatch(data); m != nil {
			return string(m[1])
		}
	}
	t.Fatalf("no inter-broker secret in %s", dir)
	return ""
}

// replicaFetch fetches partition 0 of a topic as replica id, with the
// inter-broker secret when it is not empty. v12 names the replica in
// ReplicaID and the topic by name; v15 (KIP-903) in ReplicaState, with its
// broker epoch, and the topic by id.
type replicaFetch struct {
	addr        string
	version     int16
	id          int32
	brokerEpoch int64 // v15
	secret      string
	topic       string   // v12
	topicID     [16]byte // v15
	leaderEpoch int32
}

func (f replicaFetch) send(t *testing.T) *kmsg.FetchResponse {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.SetVersion(f.version)
	req.MaxBytes, req.MaxWaitMillis = 1<<20, 0
	if f.version >= 15 {
		req.ReplicaID = -1
		req.ReplicaState.ID, req.ReplicaState.Epoch = f.id, f.brokerEpoch
	} else {
		req.ReplicaID = f.id
	}
	if f.secret != "" {
		req.UnknownTags.Set(replica.SecretTag, []byte(f.secret))
	}
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = f.topic, f.topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.FetchOffset, rp.PartitionMaxBytes = 0, f.leaderEpoch, 0, 1<<20
	rp.LastFetchedEpoch, rp.LogStartOffset = -1, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := roundTrip(f.addr, req)
	if err != nil {
		t.Fatalf("replica fetch v%d: %v", f.version, err)
	}
	return resp.(*kmsg.FetchResponse)
}

// appendEntries sends a Raft AppendEntries with a high term to addr, as a
// usurping leader would: an error means it was not taken.
func appendEntries(addr string, term int32) error {
	stream := &raftDialer{closed: make(chan struct{})}
	trans := raft.NewNetworkTransport(stream, 1, 3*time.Second, io.Discard)
	defer trans.Close()
	req := &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("666"), Addr: []byte("127.0.0.1:1")},
		Term:      uint64(term), Leader: []byte("127.0.0.1:1"),
	}
	var resp raft.AppendEntriesResponse
	return trans.AppendEntries("1", raft.ServerAddress(addr), req, &resp)
}

// raftDialer dials as the brokers' Raft transport does: the connection
// opens with the byte 0xFF (see broker/cluster/transport.go).
type raftDialer struct {
	closed chan struct{}
	once   sync.Once
}

func (d *raftDialer) Accept() (net.Conn, error) { <-d.closed; return nil, net.ErrClosed }
func (d *raftDialer) Close() error              { d.once.Do(func() { close(d.closed) }); return nil }
func (d *raftDialer) Addr() net.Addr            { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1} }
func (d *raftDialer) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	nc, err := net.DialTimeout("tcp", string(addr), timeout)
	if err != nil {
		return nil, err
	}
	if _, err := nc.Write([]byte{0xFF}); err != nil {
		nc.Close()
		return nil, err
	}
	return nc, nil
}

// runToExit runs a broker process as cfg says until it exits, and returns
// its log and exit status.
func runToExit(t *testing.T, cfg testbroker.Config, timeout time.Duration) (string, int) {
	t.Helper()
	args := []string{"broker", "--log-dirs", cfg.Dir, "--listeners", cfg.Listeners, "--admin-listen", "127.0.0.1:0"}
	for _, p := range cfg.Props {
		args = append(args, "--set", p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, testbroker.Binary(t), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the process did not exit within %v:\n%s", timeout, out.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), code
}
