package cluster

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/tributary-io/tributary/broker/log"
)

// QuorumDir is the directory, in the first log dir, of this node's copy of
// the replicated metadata log: raft.db (the Raft log and its term and vote,
// in bbolt) and snapshots/.
const QuorumDir = log.MetadataDir

// Voter is one member of the controller quorum.
type Voter struct {
	ID   int32
	Addr string // host:port of its controller listener
}

// ParseVoters reads controller.quorum.voters: id@host:port,...
func ParseVoters(list []string) ([]Voter, error) {
	var out []Voter
	seen := map[int32]bool{}
	for _, v := range list {
		id, addr, ok := strings.Cut(strings.TrimSpace(v), "@")
		n, err := strconv.ParseInt(id, 10, 32)
		if !ok || err != nil || n < 0 || !strings.Contains(addr, ":") {
			return nil, fmt.Errorf("controller.quorum.voters: %q is not id@host:port", v)
		}
		if seen[int32(n)] {
			return nil, fmt.Errorf("controller.quorum.voters: node %d is listed twice", n)
		}
		seen[int32(n)] = true
		out = append(out, Voter{ID: int32(n), Addr: addr})
	}
	return out, nil
}

// quorum replicates the metadata log with hashicorp/raft: the controller
// proposes records on the leader, and every voter's FSM applies them to
// its image in the same order.
type quorum struct {
	raft   *raft.Raft
	store  *stableStore
	trans  *raft.NetworkTransport
	logger *slog.Logger
}

// QuorumTiming are the Raft timeouts. Kafka's controller.quorum.* defaults
// (fetch timeout 2 s, election timeout 1 s) suit a data centre; on one
// machine's loopback, failover in well under two seconds is the target.
type QuorumTiming struct {
	Heartbeat, Election, LeaderLease time.Duration
}

// openQuorum joins the quorum as a voter, or, for a node not among the
// voters (a broker-only node), as a non-voter that the active controller
// adds when the broker registers: it receives the metadata log as the
// voters do (KRaft's observers) but takes no part in elections.
func openQuorum(dir string, self int32, conns *RaftConns, voters []Voter, timing QuorumTiming, fsm raft.FSM, logger *slog.Logger) (*quorum, error) {
	advertise := conns.Advertise
	voter := false
	var servers []raft.Server
	for _, v := range voters {
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: serverID(v.ID), Address: raft.ServerAddress(v.Addr)})
		if v.ID == self {
			advertise, voter = v.Addr, true
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	conf := raft.DefaultConfig()
	conf.LocalID = serverID(self)
	conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = timing.Heartbeat, timing.Election, timing.LeaderLease
	conf.CommitTimeout = 5 * time.Millisecond
	conf.SnapshotThreshold, conf.TrailingLogs = 4096, 4096
	conf.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, Output: raftLog{logger}, DisableTime: true})
	if err := raft.ValidateConfig(conf); err != nil {
		return nil, fmt.Errorf("cluster: raft config: %w", err)
	}
	store, err := raftboltdb.NewBoltStore(filepath.Join(dir, "raft.db"))
	if err != nil {
		return nil, fmt.Errorf("cluster: %s: %w", dir, err)
	}
	snaps, err := raft.NewFileSnapshotStore(dir, 2, io.Discard)
	if err != nil {
		store.Close()
		return nil, err
	}
	addr, err := resolveTCP(advertise)
	if err != nil {
		store.Close()
		return nil, err
	}
	trans := raft.NewNetworkTransport(raftStream{conns: conns, addr: addr}, 4, 5*time.Second, io.Discard)
	has, err := raft.HasExistingState(store, store, snaps)
	if err != nil {
		trans.Close()
		store.Close()
		return nil, err
	}
	if !has && voter {
		// Every voter bootstraps the same configuration; Raft accepts
		// identical bootstraps, and this way no node is special.
		if err := raft.BootstrapCluster(conf, store, store, snaps, trans, raft.Configuration{Servers: servers}); err != nil {
			trans.Close()
			store.Close()
			return nil, err
		}
	}
	stable := &stableStore{StableStore: store, close: store.Close}
	r, err := raft.NewRaft(conf, fsm, store, stable, snaps, trans)
	if err != nil {
		trans.Close()
		store.Close()
		return nil, err
	}
	logger.Info("controller quorum", "node_id", self, "voter", voter, "voters", len(voters), "dir", dir, "recovered", has)
	return &quorum{raft: r, store: stable, trans: trans, logger: logger}, nil
}

func serverID(id int32) raft.ServerID { return raft.ServerID(strconv.Itoa(int(id))) }

// leader is the node id of the active controller, -1 if there is none.
func (q *quorum) leader() int32 {
	_, id := q.raft.LeaderWithID()
	n, err := strconv.ParseInt(string(id), 10, 32)
	if err != nil {
		return -1
	}
	return int32(n)
}

func (q *quorum) close() error {
	if q.raft.State() == raft.Leader {
		// Hand the quorum over rather than leave it to an election: the
		// others learn at once what this node committed last (a
		// controlled shutdown's leadership moves among it), instead of
		// an election timeout later.
		if err := q.raft.LeadershipTransfer().Error(); err != nil {
			q.logger.Debug("handing over the controller quorum", "err", err)
		}
	}
	err := q.raft.Shutdown().Error()
	return errors.Join(err, q.trans.Close(), q.store.Close())
}

// QuorumState is this node's view of the controller quorum, for
// DescribeQuorum: Raft's term is KRaft's leader epoch, its commit index the
// metadata log's high watermark.
type QuorumState struct {
	Leader        int32
	Epoch         int32
	HighWatermark int64
	LogEnd        int64 // this node's
	Voters        []int32
	Observers     []int32 // broker-only nodes following the log
}

// QuorumState describes the quorum; a single node is a quorum of itself.
func (c *Controller) QuorumState() (QuorumState, error) {
	if c.q == nil {
		end := c.Image().Offset + 1
		return QuorumState{Leader: c.nodeID, Epoch: 1, HighWatermark: end, LogEnd: end, Voters: []int32{c.nodeID}}, nil
	}
	f := c.q.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return QuorumState{}, err
	}
	stats := c.q.raft.Stats()
	term, _ := strconv.ParseInt(stats["term"], 10, 32)
	commit, _ := strconv.ParseInt(stats["commit_index"], 10, 64)
	st := QuorumState{Leader: c.q.leader(), Epoch: int32(term), HighWatermark: commit, LogEnd: int64(c.q.raft.LastIndex())}
	for _, s := range f.Configuration().Servers {
		id, err := strconv.ParseInt(string(s.ID), 10, 32)
		if err != nil {
			continue
		}
		if s.Suffrage == raft.Voter {
			st.Voters = append(st.Voters, int32(id))
		} else {
			st.Observers = append(st.Observers, int32(id))
		}
	}
	slices.Sort(st.Voters)
	slices.Sort(st.Observers)
	return st, nil
}
