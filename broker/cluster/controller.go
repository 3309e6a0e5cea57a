package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/config"
)

// Error is a refused metadata change, with the Kafka error code the broker
// answers with and a message for the client.
type Error struct {
	Code    *kerr.Error
	Message string
}

func (e *Error) Error() string { return "broker/cluster: " + e.Message }
func (e *Error) Unwrap() error { return e.Code }

func errorf(code *kerr.Error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Controller is the single-node controller: it validates metadata changes,
// appends them to the metadata log in the first log dir, and publishes the
// new image to subscribers in order. The Raft quorum of a cluster replaces
// the log underneath; the image and the change validation stay.
//
// Safe for concurrent use: changes are decided one at a time under mu,
// replicated and applied without it (see change and doc.go); readers take
// Image() without locks.
type Controller struct {
	cfg    *config.Broker
	nodeID int32
	logger *slog.Logger

	// mu serializes the decisions: validation against the newest image
	// (the committed one with every change in flight), then the handing of
	// the records to the log, in that order: the append (single node) or
	// the Raft proposal's enqueueing (quorum). It is never held while
	// records replicate or while they are applied and published.
	mu  sync.Mutex
	log *metaLog // single node
	q   *quorum  // quorum; nil on a single node
	// opened is q, stored once openQuorum has set it, for the FSM's
	// goroutine (see activeID).
	opened atomic.Pointer[quorum]
	// ahead is the image with every change handed to the log, while some
	// are in flight (not yet applied here); nil when none are. mu
	ahead *Image
	// inflight counts the changes handed to the log and not yet applied
	// here (or failed); mu.
	inflight int
	// broken is set when a change in flight failed: the changes decided
	// after it may have been built on it, so the next decision waits until
	// none are in flight and starts from the committed image. mu
	broken bool
	// settled is signalled, on mu, when inflight drops to zero.
	settled *sync.Cond
	// unpublished are, on a single node, the changes appended to the log
	// and not yet published, in log order (mu); pubOrder serializes their
	// publication so that it keeps that order.
	unpublished []*appended
	pubOrder    sync.Mutex

	// pubMu serializes publication: the image store and the subscribers,
	// called from commit (single node) or the Raft FSM (quorum).
	pubMu sync.Mutex
	subs  []func(prev, next *Image)

	img atomic.Pointer[Image]

	members *membership // the active controller's view of broker liveness
	voters  []Voter     // controller.quorum.voters

	// forward sends a request to the active controller, for the changes a
	// broker of a quorum makes on its own behalf (topics it needs,
	// producer ids) while it is not the active controller.
	forward func(kmsg.Request) (kmsg.Response, error)
}

// SetForwarder sets how requests reach the active controller.
func (c *Controller) SetForwarder(f func(kmsg.Request) (kmsg.Response, error)) { c.forward = f }

// OpenController opens the metadata of this node. With
// controller.quorum.voters set, the metadata log is replicated by the Raft
// quorum of those voters and the broker registers through the active
// controller (see Register); otherwise it is the single-node log in dir, and
// this node registers itself here with its advertised listeners.
//
// raftConns carries the quorum's traffic on this node's listeners; it is
// unused on a single node.
func OpenController(dir string, cfg *config.Broker, clusterID string, advertised []config.Listener, raftConns *RaftConns, logger *slog.Logger) (*Controller, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.Default()
	}
	c := &Controller{cfg: cfg, nodeID: int32(cfg.Int("node.id")), logger: logger, members: newMembership()}
	c.settled = sync.NewCond(&c.mu)
	if cfg.IsSet("controller.quorum.voters") {
		return c, c.openQuorum(dir, clusterID, raftConns)
	}
	ml, img, err := openMetaLog(filepath.Join(dir, MetadataLogFile), emptyImage(clusterID))
	if err != nil {
		return nil, err
	}
	c.log = ml
	img.ControllerID = c.nodeID
	c.cfg.SetDynamic(img.DynamicConfigs(c.nodeID))
	c.img.Store(img)
	// Registration is recorded so that a restart with other listeners is
	// visible in the log, as a KRaft broker re-registers.
	reg := Broker{ID: c.nodeID, Rack: cfg.String("broker.rack"), Listeners: advertised}
	var rs []Record
	if len(img.Brokers) == 0 {
		// A new metadata log: a new cluster, formatted here.
		rs = bootstrapFeatures(img)
	}
	if old, ok := img.Brokers[c.nodeID]; !ok || !sameBroker(old, reg) {
		rs = append(rs, Record{RegisterBroker: &reg})
	}
	if len(rs) > 0 {
		if err := c.commit(rs); err != nil {
			ml.close()
			return nil, err
		}
	}
	return c, nil
}

func sameBroker(a, b Broker) bool {
	if a.ID != b.ID || a.Rack != b.Rack || a.Fenced != b.Fenced || len(a.Listeners) != len(b.Listeners) {
		return false
	}
	for i := range a.Listeners {
		if a.Listeners[i] != b.Listeners[i] {
			return false
		}
	}
	return true
}

// Image is the current metadata.
func (c *Controller) Image() *Image { return c.img.Load() }

// Subscribe calls fn after every published change, in order, from the
// goroutine that publishes: fn must not call back into the controller.
func (c *Controller) Subscribe(fn func(prev, next *Image)) {
	c.pubMu.Lock()
	defer c.pubMu.Unlock()
	c.subs = append(c.subs, fn)
}

// Close closes the metadata log, or leaves the quorum.
func (c *Controller) Close() error {
	c.members.stopLeading()
	if c.q != nil {
		return c.q.close()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.log.close()
}

// commit validates rs against the current image, makes them durable
// (appended and fsynced, or committed by the quorum) and publishes the
// result. In a quorum only the active controller commits; others get
// NOT_CONTROLLER naming it.
func (c *Controller) commit(rs []Record) error {
	return c.change(func(*Image) ([]Record, error) { return rs, nil })
}

// change commits the records build computes from the newest image, with
// changes serialized: a change decided from an image is never applied over
// another made meanwhile. No records is no change.
//
// As Kafka's QuorumController, the decision (build and validation) is made
// under mu against the image that includes every change already handed to
// the log but not yet applied (ahead), and the records are handed to the log
// before mu is released; replication, the FSM and the subscribers' side
// effects (logs created and deleted on disk) then run without mu, while
// the next change is decided. Two changes to one partition never start
// from the same state: the second is built on the first's result. If a
// change in flight fails (a lost leadership, a failed append), the changes
// decided after it are suspect, so the next decision waits until none are
// in flight and starts again from the committed image.
func (c *Controller) change(build func(img *Image) ([]Record, error)) error {
	c.mu.Lock()
	for c.broken && c.inflight > 0 {
		c.settled.Wait()
	}
	if c.inflight == 0 {
		c.ahead, c.broken = nil, false
	}
	if c.q != nil {
		if leader := c.q.leader(); leader != c.nodeID {
			c.mu.Unlock()
			return errNotController(leader)
		}
	}
	img := c.ahead
	if img == nil {
		img = c.img.Load()
	}
	rs, err := build(img)
	if err != nil || len(rs) == 0 {
		c.mu.Unlock()
		return err
	}
	next, err := img.applyAll(rs)
	if err != nil {
		c.mu.Unlock()
		return err
	}
	var wait func() error
	if c.q != nil {
		data, err := json.Marshal(rs)
		if err != nil {
			c.mu.Unlock()
			return err
		}
		// Enqueued in decision order; Raft appends in enqueue order.
		f := c.q.raft.Apply(data, 10*time.Second)
		wait = func() error { return c.q.applied(f) }
	} else {
		if err := c.log.append(rs); err != nil {
			c.mu.Unlock()
			return err
		}
		e := &appended{rs: rs, done: make(chan error, 1)}
		c.unpublished = append(c.unpublished, e)
		wait = func() error {
			c.drain()
			return <-e.done
		}
	}
	c.ahead = next
	c.inflight++
	c.mu.Unlock()

	err = wait()

	c.mu.Lock()
	c.inflight--
	if err != nil {
		c.broken = true
	}
	if c.inflight == 0 {
		c.ahead, c.broken = nil, false
		c.settled.Broadcast()
	}
	c.mu.Unlock()
	return err
}

// appended is a change appended to the single-node log, waiting to be
// published; done gets the publication's result.
type appended struct {
	rs   []Record
	done chan error
}

// drain publishes the appended changes in log order, on a single node.
// Whoever drains publishes every change appended so far, its own included
// (or a drainer before it did). Lock order: pubOrder, then mu or pubMu,
// never both.
func (c *Controller) drain() {
	c.pubOrder.Lock()
	defer c.pubOrder.Unlock()
	for {
		c.mu.Lock()
		if len(c.unpublished) == 0 {
			c.mu.Unlock()
			return
		}
		e := c.unpublished[0]
		c.unpublished = c.unpublished[1:]
		c.mu.Unlock()
		e.done <- c.publish(e.rs, nil)
	}
}

// applied waits until a proposal is committed and applied by this node's
// FSM, and returns the FSM's result.
func (q *quorum) applied(f raft.ApplyFuture) error {
	if err := f.Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return errNotController(q.leader())
		}
		return fmt.Errorf("cluster: replicating metadata: %w", err)
	}
	if err, ok := f.Response().(error); ok && err != nil {
		return err
	}
	return nil
}

// publish applies committed records to the image (to base instead, when
// restoring a snapshot) and hands the result to the subscribers.
func (c *Controller) publish(rs []Record, base *Image) error {
	c.pubMu.Lock()
	defer c.pubMu.Unlock()
	prev := c.img.Load()
	if base == nil {
		base = prev
	}
	next, err := base.applyAll(rs)
	if err != nil {
		// The records were validated before they were logged, and every
		// node applies them in the same order: this is a bug.
		c.logger.Error("applying committed metadata", "err", err)
		return err
	}
	if next == prev {
		return nil
	}
	next.ControllerID = c.activeID()
	// The dynamic broker configs take effect before anyone sees the image
	// that holds them: the subscribers apply them to the logs.
	c.cfg.SetDynamic(next.DynamicConfigs(c.nodeID))
	c.img.Store(next)
	for _, fn := range c.subs {
		fn(prev, next)
	}
	return nil
}

// setControllerID publishes a change of active controller.
func (c *Controller) setControllerID(id int32) {
	c.pubMu.Lock()
	defer c.pubMu.Unlock()
	prev := c.img.Load()
	if prev.ControllerID == id {
		return
	}
	next := prev.clone()
	next.ControllerID = id
	c.img.Store(next)
	for _, fn := range c.subs {
		fn(prev, next)
	}
}

// activeID is the node id of the active controller, -1 during an election.
// Raft replays the log through the FSM, which publishes and so asks this,
// before openQuorum has set c.q: the FSM's goroutine reads the quorum from
// opened, which openQuorum stores once c.q is whole, and answers -1 until
// then (c.voters is set before Raft starts).
func (c *Controller) activeID() int32 {
	if q := c.opened.Load(); q != nil {
		return q.leader()
	}
	if c.voters != nil {
		return -1
	}
	return c.nodeID
}

// IsActive is whether this node is the active controller.
func (c *Controller) IsActive() bool { return c.activeID() == c.nodeID }

// Quorum is whether the metadata is replicated by a controller quorum.
func (c *Controller) Quorum() bool { return c.q != nil }

func errNotController(leader int32) *Error {
	if leader < 0 {
		return errorf(kerr.NotController, "no controller is active yet (an election is under way)")
	}
	return errorf(kerr.NotController, "this node is not the active controller; node %d is", leader)
}

// TopicSpec is a topic to create. Zero or negative counts take the broker
// defaults (num.partitions, default.replication.factor).
type TopicSpec struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16
	// Assignment, when given, is the replicas of each partition, in order.
	Assignment [][]int32
	Configs    map[string]string
}

var legalTopic = regexp.MustCompile(`^[a-zA-Z0-9._-]+$`)

// ValidateTopicName applies Kafka's rules for topic names.
func ValidateTopicName(name string) *Error {
	switch {
	case name == "":
		return errorf(kerr.InvalidTopicException, "topic name is empty")
	case name == "." || name == "..":
		return errorf(kerr.InvalidTopicException, "topic name cannot be %q", name)
	case len(name) > 249:
		return errorf(kerr.InvalidTopicException, "topic name is %d characters long, the limit is 249", len(name))
	case !legalTopic.MatchString(name):
		return errorf(kerr.InvalidTopicException, "topic name %q contains characters other than ASCII alphanumerics, '.', '_' and '-'", name)
	}
	return nil
}

// CreateTopic creates a topic, or with validateOnly only checks that it
// could. It returns the topic as created (or as it would be).
func (c *Controller) CreateTopic(spec TopicSpec, validateOnly bool) (*Topic, error) {
	if !validateOnly && c.remote() {
		return c.createTopicRemote(spec)
	}
	img := c.Image()
	if err := ValidateTopicName(spec.Name); err != nil {
		return nil, err
	}
	if _, ok := img.Topics[spec.Name]; ok {
		return nil, errorf(kerr.TopicAlreadyExists, "Topic '%s' already exists.", spec.Name)
	}
	// '.' and '_' collide in metric names, so Kafka refuses topics that
	// differ only by them.
	norm := strings.ReplaceAll(spec.Name, ".", "_")
	for _, other := range img.TopicNames() {
		if strings.ReplaceAll(other, ".", "_") == norm {
			return nil, errorf(kerr.InvalidTopicException, "topic %q collides with existing topic %q: '.' and '_' are the same in metric names", spec.Name, other)
		}
	}
	if err := config.ValidateTopicOverrides(spec.Configs); err != nil {
		return nil, errorf(kerr.InvalidConfig, "%s", strings.TrimPrefix(err.Error(), config.ErrInvalid.Error()+": "))
	}
	assignment, err := c.assign(img, spec)
	if err != nil {
		return nil, err
	}
	t := &Topic{Name: spec.Name, ID: NewTopicID(), Configs: map[string]string{}}
	for k, v := range spec.Configs {
		t.Configs[k] = v
	}
	for i, replicas := range assignment {
		t.Partitions = append(t.Partitions, Partition{Index: int32(i), Leader: replicas[0], Replicas: replicas, ISR: replicas})
	}
	if validateOnly {
		return t, nil
	}
	if err := c.commit(topicRecords(t)); err != nil {
		return nil, err
	}
	return c.Image().Topics[t.Name], nil
}

func topicRecords(t *Topic) []Record {
	rs := []Record{{Topic: &TopicRecord{Name: t.Name, ID: t.ID}}}
	names := make([]string, 0, len(t.Configs))
	for k := range t.Configs {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		v := t.Configs[k]
		rs = append(rs, Record{Config: &ConfigRecord{Topic: t.Name, Name: k, Value: &v}})
	}
	for _, p := range t.Partitions {
		rs = append(rs, Record{Partition: &PartitionRecord{TopicID: t.ID, Partition: p}})
	}
	return rs
}

// assign picks the replicas of each partition: the given assignment after
// checking it, or round robin over the live brokers, starting each
// partition's list one broker later so that leaders spread.
func (c *Controller) assign(img *Image, spec TopicSpec) ([][]int32, error) {
	live := img.LiveBrokers()
	if len(spec.Assignment) > 0 {
		if spec.Partitions > 0 || spec.ReplicationFactor > 0 {
			return nil, errorf(kerr.InvalidRequest, "both a replica assignment and partition count or replication factor were given")
		}
		return checkAssignment(img, spec.Assignment, 0)
	}
	n, rf := spec.Partitions, int32(spec.ReplicationFactor)
	if n <= 0 {
		if n != -1 && n != 0 {
			return nil, errorf(kerr.InvalidPartitions, "number of partitions must be larger than 0 (or -1 for the default), got %d", n)
		}
		n = int32(c.cfg.Int("num.partitions"))
	}
	if rf <= 0 {
		if rf != -1 && rf != 0 {
			return nil, errorf(kerr.InvalidReplicationFactor, "replication factor must be larger than 0 (or -1 for the default), got %d", rf)
		}
		rf = int32(c.cfg.Int("default.replication.factor"))
	}
	if int(rf) > len(live) {
		return nil, errorf(kerr.InvalidReplicationFactor, "unable to replicate the partition %d time(s): the target replication factor of %d cannot be reached because only %d broker(s) are registered", rf, rf, len(live))
	}
	return roundRobin(live, n, rf, 0), nil
}

func roundRobin(live []Broker, partitions, rf int32, first int32) [][]int32 {
	live = rackAlternated(live)
	out := make([][]int32, partitions)
	for p := range partitions {
		replicas := make([]int32, rf)
		for r := range rf {
			replicas[r] = live[(int(first+p)+int(r))%len(live)].ID
		}
		out[p] = replicas
	}
	return out
}

// rackAlternated orders the brokers so that neighbours are on different
// racks (broker.rack) where possible: the first broker of each rack, then
// the second of each, and so on, as Kafka's rack-aware assignment does. The
// consecutive replicas roundRobin picks then span as many racks as there
// are. Without racks the order is unchanged.
func rackAlternated(brokers []Broker) []Broker {
	byRack := map[string][]Broker{}
	var racks []string
	for _, b := range brokers {
		if _, ok := byRack[b.Rack]; !ok {
			racks = append(racks, b.Rack)
		}
		byRack[b.Rack] = append(byRack[b.Rack], b)
	}
	if len(racks) <= 1 {
		return brokers
	}
	sort.Strings(racks)
	out := make([]Broker, 0, len(brokers))
	for i := 0; len(out) < len(brokers); i++ {
		for _, r := range racks {
			if i < len(byRack[r]) {
				out = append(out, byRack[r][i])
			}
		}
	}
	return out
}

func checkAssignment(img *Image, a [][]int32, first int) ([][]int32, error) {
	rf := -1
	for i, replicas := range a {
		if len(replicas) == 0 {
			return nil, errorf(kerr.InvalidReplicaAssignment, "partition %d has no replicas", first+i)
		}
		if rf >= 0 && len(replicas) != rf {
			return nil, errorf(kerr.InvalidReplicaAssignment, "partition %d has %d replicas, others have %d", first+i, len(replicas), rf)
		}
		rf = len(replicas)
		seen := map[int32]bool{}
		for _, id := range replicas {
			if b, ok := img.Brokers[id]; !ok || b.Fenced {
				return nil, errorf(kerr.InvalidReplicaAssignment, "partition %d: broker %d is not a live broker", first+i, id)
			}
			if seen[id] {
				return nil, errorf(kerr.InvalidReplicaAssignment, "partition %d lists broker %d twice", first+i, id)
			}
			seen[id] = true
		}
	}
	return a, nil
}

// DeleteTopic removes a topic by name.
func (c *Controller) DeleteTopic(name string) (*Topic, error) {
	if !c.cfg.Bool("delete.topic.enable") {
		return nil, errorf(kerr.TopicDeletionDisabled, "topic deletion is disabled (delete.topic.enable=false)")
	}
	t, ok := c.Image().Topics[name]
	if !ok {
		return nil, errorf(kerr.UnknownTopicOrPartition, "topic %q does not exist", name)
	}
	return t, c.commit([]Record{{RemoveTopic: &RemoveTopicRecord{ID: t.ID}}})
}

// CreatePartitions grows a topic to count partitions (KAFKA-347).
func (c *Controller) CreatePartitions(name string, count int32, assignment [][]int32, validateOnly bool) error {
	img := c.Image()
	t, ok := img.Topics[name]
	if !ok {
		return errorf(kerr.UnknownTopicOrPartition, "topic %q does not exist", name)
	}
	have := int32(len(t.Partitions))
	if count <= have {
		return errorf(kerr.InvalidPartitions, "topic %s has %d partitions; the new count %d must be larger", name, have, count)
	}
	var newReplicas [][]int32
	if len(assignment) > 0 {
		if int32(len(assignment)) != count-have {
			return errorf(kerr.InvalidReplicaAssignment, "%d partitions are added but %d assignments were given", count-have, len(assignment))
		}
		var err error
		if newReplicas, err = checkAssignment(img, assignment, int(have)); err != nil {
			return err
		}
	} else {
		live := img.LiveBrokers()
		rf := int32(len(t.Partitions[0].Replicas))
		if int(rf) > len(live) {
			return errorf(kerr.InvalidReplicationFactor, "topic %s has replication factor %d but only %d broker(s) are live", name, rf, len(live))
		}
		newReplicas = roundRobin(live, count-have, rf, have)
	}
	if validateOnly {
		return nil
	}
	var rs []Record
	for i, replicas := range newReplicas {
		p := Partition{Index: have + int32(i), Leader: replicas[0], Replicas: replicas, ISR: replicas}
		rs = append(rs, Record{Partition: &PartitionRecord{TopicID: t.ID, Partition: p}})
	}
	return c.commit(rs)
}

// ConfigChange sets (Value non-nil) or removes (nil) one topic override.
type ConfigChange struct {
	Name  string
	Value *string
}

// AlterTopicConfigs applies changes to a topic's overrides. With replace,
// overrides not named in changes are removed (AlterConfigs); otherwise they
// stay (IncrementalAlterConfigs).
func (c *Controller) AlterTopicConfigs(name string, changes []ConfigChange, replace, validateOnly bool) error {
	// Decided inside change, from the newest image: a replace or a delete
	// computed from a stale one would miss what a concurrent alter set.
	return c.decide(validateOnly, func(img *Image) ([]Record, error) {
		t, ok := img.Topics[name]
		if !ok {
			return nil, errorf(kerr.UnknownTopicOrPartition, "topic %q does not exist", name)
		}
		next := map[string]string{}
		if !replace {
			maps.Copy(next, t.Configs)
		}
		for _, ch := range changes {
			if ch.Value == nil {
				if _, known := config.TopicDefs[ch.Name]; !known {
					return nil, errorf(kerr.InvalidConfig, "unknown topic property %s", ch.Name)
				}
				delete(next, ch.Name)
			} else {
				next[ch.Name] = *ch.Value
			}
		}
		if err := config.ValidateTopicOverrides(next); err != nil {
			return nil, errorf(kerr.InvalidConfig, "%s", strings.TrimPrefix(err.Error(), config.ErrInvalid.Error()+": "))
		}
		var rs []Record
		for k := range t.Configs {
			if _, keep := next[k]; !keep {
				rs = append(rs, Record{Config: &ConfigRecord{Topic: name, Name: k}})
			}
		}
		for k, v := range next {
			if old, had := t.Configs[k]; !had || old != v {
				rs = append(rs, Record{Config: &ConfigRecord{Topic: name, Name: k, Value: &v}})
			}
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i].Config.Name < rs[j].Config.Name })
		return rs, nil
	})
}

// decide runs build as change does, or, for a validate-only request, on the
// newest image without committing (and without asking for leadership, as
// before: a validate-only request changes nothing).
func (c *Controller) decide(validateOnly bool, build func(img *Image) ([]Record, error)) error {
	if validateOnly {
		_, err := build(c.Image())
		return err
	}
	return c.change(build)
}

// AlterBrokerConfigs applies changes to the dynamic configs of a broker
// resource: a node id, or "" for the cluster-wide defaults. With replace,
// dynamic configs not named are removed (AlterConfigs). Removing a config
// that is not set, or that this version does not know, does nothing, so
// that kafka-reassign-partitions --verify can clear the throttles of any
// broker.
//
// The node id is checked only for its form, as Kafka's controller does:
// the broker that received the request checked that it named itself,
// and a config stored for a node that is not (yet) registered waits for it.
func (c *Controller) AlterBrokerConfigs(resource string, changes []ConfigChange, replace, validateOnly bool) error {
	if resource != "" {
		id, err := strconv.ParseInt(resource, 10, 32)
		if err != nil {
			return errorf(kerr.InvalidRequest, "Unable to parse broker name as a base 10 number.")
		}
		if id < 0 {
			return errorf(kerr.InvalidRequest, "Invalid negative broker ID.")
		}
	}
	// Decided inside change, from the newest image: a replace or a delete
	// computed from a stale one would miss what a concurrent alter set.
	return c.decide(validateOnly, func(img *Image) ([]Record, error) {
		cur := img.BrokerConfigs[resource]
		next := map[string]string{}
		if !replace {
			maps.Copy(next, cur)
		}
		for _, ch := range changes {
			if ch.Value == nil {
				delete(next, ch.Name)
			} else {
				next[ch.Name] = *ch.Value
			}
		}
		if err := config.ValidateDynamic(next); err != nil {
			// INVALID_REQUEST rather than INVALID_CONFIG, as Kafka answers
			// (KAFKA-13609).
			return nil, errorf(kerr.InvalidRequest, "%s", err.Error())
		}
		var rs []Record
		for k := range cur {
			if _, keep := next[k]; !keep {
				rs = append(rs, Record{BrokerConfig: &BrokerConfigRecord{Broker: resource, Name: k}})
			}
		}
		for k, v := range next {
			if old, had := cur[k]; !had || old != v {
				rs = append(rs, Record{BrokerConfig: &BrokerConfigRecord{Broker: resource, Name: k, Value: &v}})
			}
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i].BrokerConfig.Name < rs[j].BrokerConfig.Name })
		return rs, nil
	})
}

// IsError reports whether err is a refused change and returns it.
func IsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// ProducerIDBlockSize is how many producer ids a broker takes at once, as
// Kafka's AllocateProducerIds does.
const ProducerIDBlockSize = 1000

// AllocateProducerIDs reserves n producer ids durably and returns the first.
func (c *Controller) AllocateProducerIDs(n int64) (int64, error) {
	if c.remote() && n == ProducerIDBlockSize {
		return c.allocateRemote()
	}
	// Decided from the newest image, so that allocations in flight
	// never hand out the same block.
	var first int64
	err := c.change(func(img *Image) ([]Record, error) {
		first = img.NextProducerID
		return []Record{{ProducerIDs: &ProducerIDsRecord{Next: first + n}}}, nil
	})
	if err != nil {
		return 0, err
	}
	return first, nil
}
