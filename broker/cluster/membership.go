package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"
	"github.com/twmb/franz-go/pkg/kerr"
)

// membership is the active controller's view of which brokers are alive:
// when each last heartbeated. It lives only on the active controller and
// starts afresh, with every broker given a full session, on each election.
type membership struct {
	mu       sync.Mutex
	lastSeen map[int32]time.Time
	stop     chan struct{} // closed when this node stops leading
	// refused is when a duplicate of each node id was last logged: a
	// refused node retries every second or so.
	refused map[int32]time.Time
}

// logRefusal is whether a refused duplicate of id is worth a log line now.
func (m *membership) logRefusal(id int32) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refused == nil {
		m.refused = map[int32]time.Time{}
	}
	if time.Since(m.refused[id]) < time.Minute {
		return false
	}
	m.refused[id] = time.Now()
	return true
}

func newMembership() *membership { return &membership{} }

func (m *membership) startLeading(brokers map[int32]Broker) chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stop != nil {
		close(m.stop)
	}
	m.stop = make(chan struct{})
	m.lastSeen = map[int32]time.Time{}
	now := time.Now()
	for id := range brokers {
		m.lastSeen[id] = now
	}
	return m.stop
}

func (m *membership) stopLeading() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.stop != nil {
		close(m.stop)
		m.stop = nil
	}
}

func (m *membership) seen(id int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lastSeen != nil {
		m.lastSeen[id] = time.Now()
	}
}

// inSession is whether broker id heartbeated to this controller within
// timeout. A controller that just took over gives every registered broker a
// full session (startLeading), as Kafka's does.
func (m *membership) inSession(id int32, timeout time.Duration) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.lastSeen[id]
	return ok && time.Since(t) <= timeout
}

// expired are the brokers whose session ran out.
func (m *membership) expired(timeout time.Duration) []int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []int32
	for id, t := range m.lastSeen {
		if time.Since(t) > timeout {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// openQuorum joins the controller quorum and follows its leadership. A node
// with the controller role is one of controller.quorum.voters; a
// broker-only node follows the metadata log as a non-voter.
func (c *Controller) openQuorum(dir, clusterID string, conns *RaftConns) error {
	voters, err := ParseVoters(c.cfg.List("controller.quorum.voters"))
	if err != nil {
		return err
	}
	listed := slices.ContainsFunc(voters, func(v Voter) bool { return v.ID == c.nodeID })
	controller := slices.Contains(c.cfg.List("process.roles"), "controller")
	switch {
	case controller && !listed:
		return fmt.Errorf("cluster: process.roles includes controller, but node %d is not in controller.quorum.voters", c.nodeID)
	case !controller && listed:
		return fmt.Errorf("cluster: node %d is in controller.quorum.voters, but process.roles=%s has no controller role", c.nodeID, strings.Join(c.cfg.List("process.roles"), ","))
	case !controller && conns.Advertise == "":
		return fmt.Errorf("cluster: broker-only node %d has no listener to receive the metadata log on", c.nodeID)
	}
	c.voters = voters
	img := emptyImage(clusterID)
	img.ControllerID = -1
	c.img.Store(img)
	election := time.Duration(c.cfg.Int("controller.quorum.election.timeout.ms")) * time.Millisecond
	timing := QuorumTiming{Heartbeat: election, Election: election, LeaderLease: election / 2}
	if c.q, err = openQuorum(filepath.Join(dir, QuorumDir), c.nodeID, conns, voters, timing, fsm{c}, c.logger); err != nil {
		return err
	}
	c.opened.Store(c.q)
	obs := make(chan raft.Observation, 16)
	c.q.raft.RegisterObserver(raft.NewObserver(obs, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	}))
	go c.followLeadership(obs)
	return nil
}

// VoterAddr is the controller listener of voter id.
func (c *Controller) VoterAddr(id int32) (string, bool) {
	for _, v := range c.voters {
		if v.ID == id {
			return v.Addr, true
		}
	}
	return "", false
}

// Voters are the controller quorum's members; none on a single node.
func (c *Controller) Voters() []Voter { return c.voters }

// admitObserver makes a broker-only node a non-voting member of the quorum
// at addr, so that the metadata log reaches it. A node already there at
// addr is left alone: each change of membership is a log entry.
func (c *Controller) admitObserver(id int32, addr string) error {
	if _, voter := c.VoterAddr(id); voter {
		return nil
	}
	f := c.q.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return err
	}
	for _, s := range f.Configuration().Servers {
		if s.ID == serverID(id) && string(s.Address) == addr {
			return nil
		}
	}
	if err := c.q.raft.AddNonvoter(serverID(id), raft.ServerAddress(addr), 0, 10*time.Second).Error(); err != nil {
		return errorf(kerr.NotController, "adding broker %d to the metadata quorum: %v", id, err)
	}
	c.logger.Info("broker follows the metadata log", "node_id", id, "addr", addr)
	return nil
}

// followLeadership publishes each change of active controller, and starts
// or stops this node's duties as the active one.
func (c *Controller) followLeadership(obs chan raft.Observation) {
	for o := range obs {
		lo := o.Data.(raft.LeaderObservation)
		id := int32(-1)
		if lo.LeaderID != "" {
			fmt.Sscan(string(lo.LeaderID), &id)
		}
		c.setControllerID(id)
		if id == c.nodeID {
			// Wait until every entry of earlier terms is applied here, so
			// that this node decides from the latest image.
			if err := c.q.raft.Barrier(10 * time.Second).Error(); err != nil {
				c.logger.Warn("new controller could not catch up", "err", err)
				continue
			}
			stop := c.members.startLeading(c.Image().Brokers)
			go c.fenceExpired(stop)
			go c.keepLeadersPreferred(stop)
			if err := c.ensureSecret(); err != nil {
				c.logger.Warn("making the inter-broker secret", "err", err)
			}
			c.logger.Info("active controller", "node_id", c.nodeID)
		} else {
			c.members.stopLeading()
		}
	}
}

func (c *Controller) sessionTimeout() time.Duration {
	return time.Duration(c.cfg.Int("broker.session.timeout.ms")) * time.Millisecond
}

// fenceExpired fences the brokers whose heartbeats stopped, while this node
// is the active controller.
func (c *Controller) fenceExpired(stop chan struct{}) {
	t := time.NewTicker(c.sessionTimeout() / 4)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		img := c.Image()
		for _, id := range c.members.expired(c.sessionTimeout()) {
			if b, ok := img.Brokers[id]; ok && !b.Fenced {
				if err := c.setFenced(id, true); err != nil {
					c.logger.Warn("fencing broker", "node_id", id, "err", err)
					continue
				}
				c.logger.Info("fenced broker: no heartbeat within broker.session.timeout.ms", "node_id", id)
			}
		}
	}
}

// Registration is a broker's BrokerRegistration.
type Registration struct {
	// Broker is the broker as registered: id, rack, the listeners it
	// advertises to clients, its incarnation and log dir ids.
	Broker Broker
	// RaftAddr is where a broker-only node receives the metadata log: its
	// listener named in controller.listener.names. Voters have theirs in
	// controller.quorum.voters.
	RaftAddr string
	// Unclean says the broker restarted after an unclean shutdown
	// (PreviousBrokerEpoch -1, KIP-966).
	Unclean bool
}

// Register records a broker's registration on the active controller,
// fenced: it is unfenced by its first heartbeat that does not ask to stay
// fenced, which it sends once its metadata has caught up to the
// registration (as KRaft brokers do). It returns the broker epoch: the
// metadata offset of the registration record. A broker-only node is first
// made a non-voting member of the quorum at its RaftAddr, so that the
// metadata reaches it. A broker back from an unclean shutdown leaves the
// ELRs (KIP-966; see leadership.go).
//
// Who is registering, as Kafka's ClusterControlManager decides it, with one
// addition so that a node killed with -9 comes back at once:
//   - the same incarnation (a retry of a registration whose answer was
//     lost): the registration is amended, its epoch and fencing kept;
//   - a node.id whose broker still has a valid session (unfenced, heard
//     from within the session timeout), from another incarnation that
//     shares none of its log dirs: a second node
//     configured with the same node.id, refused with
//     DUPLICATE_BROKER_REGISTRATION while the first one lives;
//   - anything else is a new incarnation of the node, with a new epoch:
//     one whose session ran out, or one restarted on the same log dirs
//     (Kafka makes that one wait out its old session).
func (c *Controller) Register(r Registration) (int64, error) {
	if !c.IsActive() {
		return -1, errNotController(c.activeID())
	}
	b := r.Broker
	if len(b.Listeners) == 0 {
		return -1, errorf(kerr.InvalidRegistration, "broker %d registered no listener", b.ID)
	}
	_, voter := c.VoterAddr(b.ID)
	if c.q != nil && !voter && r.RaftAddr == "" {
		return -1, errorf(kerr.InvalidRegistration, "broker-only node %d registered no listener named in controller.listener.names to receive the metadata log on", b.ID)
	}
	if old, ok := c.Image().Brokers[b.ID]; ok {
		if err := c.duplicate(old, b); err != nil {
			return -1, err
		}
	}
	if c.q != nil && !voter {
		if err := c.admitObserver(b.ID, r.RaftAddr); err != nil {
			return -1, err
		}
	}
	var epoch int64
	err := c.change(func(img *Image) ([]Record, error) {
		old, registered := img.Brokers[b.ID]
		if registered {
			if err := c.duplicate(old, b); err != nil {
				return nil, err
			}
		}
		b := b
		if registered && b.Incarnation != "" && old.Incarnation == b.Incarnation {
			b.Epoch, b.Fenced = old.Epoch, old.Fenced
			epoch = b.Epoch
			return []Record{{RegisterBroker: &b}}, nil
		}
		// The registration is the next record of the log: its offset. An
		// image ahead of the log (changes in flight) has not moved its
		// offset yet, so a second registration in flight would get the same
		// number: an epoch also always exceeds the broker's last one, or the
		// old incarnation's heartbeats would pass as the new one's.
		b.Epoch, b.Fenced = img.Offset+1, true
		if registered && b.Epoch <= old.Epoch {
			b.Epoch = old.Epoch + 1
		}
		epoch = b.Epoch
		rs := []Record{{RegisterBroker: &b}}
		next, err := img.Apply(rs[0])
		if err != nil {
			return nil, err
		}
		if registered && !old.Fenced {
			// Registering again while live means it restarted within its
			// session: its replicas start over, so it leaves the ISRs and
			// its leaderships, and rejoins as a follower once unfenced.
			fenced := c.fenceRecords(next, b.ID)
			if next, err = next.applyAll(fenced); err != nil {
				return nil, err
			}
			rs = append(rs, fenced...)
		}
		if r.Unclean {
			rs = append(rs, c.uncleanRestartRecords(next, b.ID)...)
		}
		return rs, nil
	})
	if err != nil {
		return -1, err
	}
	c.members.seen(b.ID)
	return epoch, nil
}

// duplicate refuses b's registration when the broker registered as old is
// another live node with the same node.id (see Register).
func (c *Controller) duplicate(old, b Broker) error {
	// A fenced broker has no valid session (Kafka's hasValidSession): it is
	// dead, stopping, or still catching up, and anyone may take the id.
	if old.Fenced || old.Incarnation == "" || old.Incarnation == b.Incarnation || sharesLogDir(old, b) ||
		!c.members.inSession(b.ID, c.sessionTimeout()) {
		return nil
	}
	if c.members.logRefusal(b.ID) {
		c.logger.Error("refused the registration of a second broker with a live broker's node.id (DUPLICATE_BROKER_REGISTRATION); two nodes are configured with this node.id",
			"node_id", b.ID, "registered_incarnation", old.Incarnation, "registered_log_dirs", old.LogDirs,
			"refused_incarnation", b.Incarnation, "refused_log_dirs", b.LogDirs, "refused_listeners", b.Listeners)
	}
	return errorf(kerr.DuplicateBrokerRegistration, "broker %d is registered and live with other log dirs (incarnation %s); two nodes have node.id %d", b.ID, old.Incarnation, b.ID)
}

func sharesLogDir(a, b Broker) bool {
	for _, d := range b.LogDirs {
		if slices.Contains(a.LogDirs, d) {
			return true
		}
	}
	return false
}

// CheckBrokerEpoch refuses a request from broker id that does not carry the
// epoch of its current registration (Kafka's checkBrokerEpoch): a broker
// that is not registered, a previous incarnation, or a forged request.
func (c *Controller) CheckBrokerEpoch(id int32, epoch int64) error {
	b, ok := c.Image().Brokers[id]
	if !ok {
		return errorf(kerr.StaleBrokerEpoch, "no broker registration found for broker %d", id)
	}
	if b.Epoch != epoch {
		return errorf(kerr.StaleBrokerEpoch, "broker %d: expected broker epoch %d, but got %d", id, b.Epoch, epoch)
	}
	return nil
}

// Heartbeat notes that a registered broker is alive; a fenced one that no
// longer asks to stay fenced (wantFence: its metadata is behind) is
// unfenced. A heartbeat without the broker's current epoch changes nothing
// and gets STALE_BROKER_EPOCH, which tells a broker to register again.
//
// A broker that wants to shut down (on SIGTERM) is fenced instead, which
// moves its leaderships to other ISR members first (controlled shutdown);
// shutDown tells it that it may stop.
func (c *Controller) Heartbeat(id int32, epoch int64, wantFence, wantShutdown bool) (shutDown bool, err error) {
	if !c.IsActive() {
		return false, errNotController(c.activeID())
	}
	if err := c.CheckBrokerEpoch(id, epoch); err != nil {
		return false, err
	}
	b := c.Image().Brokers[id]
	c.members.seen(id)
	if wantShutdown {
		return true, c.setFenced(id, true)
	}
	if b.Fenced && !wantFence {
		return false, c.setFenced(id, false)
	}
	return false, nil
}

// ensureSecret makes the cluster's inter-broker secret if it has none: a
// new cluster, whose features it also finalizes at their defaults (the
// first active controller's first change, as Kafka's format writes its
// bootstrap metadata). A cluster that has a secret and no feature levels
// was made before features existed: it stays at level 0.
func (c *Controller) ensureSecret() error {
	return c.change(func(img *Image) ([]Record, error) {
		if img.Secret != "" {
			return nil, nil
		}
		var b [24]byte
		rand.Read(b[:])
		return append(bootstrapFeatures(img), Record{Secret: &SecretRecord{Value: hex.EncodeToString(b[:])}}), nil
	})
}

// keepLeadersPreferred moves leadership back to preferred replicas every
// leader.imbalance.check.interval.seconds, while this node is the active
// controller and auto.leader.rebalance.enable is on.
func (c *Controller) keepLeadersPreferred(stop chan struct{}) {
	if !c.cfg.Bool("auto.leader.rebalance.enable") {
		return
	}
	t := time.NewTicker(time.Duration(c.cfg.Int("leader.imbalance.check.interval.seconds")) * time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		if err := c.rebalanceLeaders(); err != nil {
			c.logger.Warn("moving leaders back to preferred replicas", "err", err)
		}
	}
}

// setFenced fences or unfences a broker, moving the leadership of its
// partitions and its ISR memberships with it.
func (c *Controller) setFenced(id int32, fenced bool) error {
	return c.change(func(img *Image) ([]Record, error) {
		b, ok := img.Brokers[id]
		if !ok || b.Fenced == fenced {
			return nil, nil
		}
		b.Fenced = fenced
		reg := Record{RegisterBroker: &b}
		next, err := img.Apply(reg)
		if err != nil {
			return nil, err
		}
		if fenced {
			return append([]Record{reg}, c.fenceRecords(next, id)...), nil
		}
		return append([]Record{reg}, c.unfenceRecords(next, id)...), nil
	})
}

// WaitCaughtUp waits until a controller is active and this voter applied
// the metadata log as far as it had it then, so that a restarted node
// starts from the metadata it left rather than from nothing. A broker-only
// node learns of a controller only once registered; see WaitApplied.
func (c *Controller) WaitCaughtUp(timeout time.Duration) error {
	if c.q == nil {
		return nil
	}
	deadline := time.Now().Add(timeout)
	for c.q.leader() < 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster: no controller elected after %v (is a majority of the voters up?)", timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	target := c.q.raft.LastIndex()
	for c.q.raft.AppliedIndex() < target {
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster: metadata applied to %d of %d after %v", c.q.raft.AppliedIndex(), target, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// WaitApplied waits until this node's image includes the metadata up to
// offset, such as a broker's own registration.
func (c *Controller) WaitApplied(offset int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for c.Image().Offset < offset {
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster: metadata applied to %d of %d after %v", c.Image().Offset, offset, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// Unregister removes a broker that is gone for good (Kafka's
// UnregisterBroker, kafka-cluster unregister): it is fenced first, so its
// leaderships and ISR memberships move, then its registration is removed,
// and a broker-only node leaves the Raft configuration, so that the leader
// stops replicating the metadata log to it. Its replicas stay in their
// partitions' replica lists, offline, until they are reassigned. A broker
// still running registers again; a voter cannot be removed this way.
func (c *Controller) Unregister(id int32) error {
	if !c.IsActive() {
		return errNotController(c.activeID())
	}
	if _, voter := c.VoterAddr(id); voter {
		return errorf(kerr.InvalidRequest, "node %d is a voter of controller.quorum.voters; the quorum is fixed", id)
	}
	err := c.change(func(img *Image) ([]Record, error) {
		b, ok := img.Brokers[id]
		if !ok {
			return nil, errorf(kerr.BrokerIDNotRegistered, "broker %d is not registered", id)
		}
		var rs []Record
		next := img
		if !b.Fenced {
			b.Fenced = true
			rs = append(rs, Record{RegisterBroker: &b})
			var err error
			if next, err = img.Apply(rs[0]); err != nil {
				return nil, err
			}
			rs = append(rs, c.fenceRecords(next, id)...)
		}
		return append(rs, Record{UnregisterBroker: &id}), nil
	})
	if err != nil || c.q == nil {
		return err
	}
	if err := c.q.raft.RemoveServer(serverID(id), 0, 10*time.Second).Error(); err != nil {
		return errorf(kerr.UnknownServerError, "broker %d unregistered, but it is still in the metadata quorum's configuration: %v", id, err)
	}
	c.logger.Info("broker unregistered", "node_id", id)
	return nil
}
