package group

import (
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/config"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/broker/replica"
)

// OffsetsTopic is the internal topic holding groups and offsets.
const OffsetsTopic = "__consumer_offsets"

// tickInterval is how often the timers of the groups are checked: session
// timeouts are seconds long, so a tenth of a second of lateness is noise.
const tickInterval = 100 * time.Millisecond

// Coordinator is the edge of the group state machine: locking, the log,
// loading and timers. Its methods are safe for concurrent use.
//
// Lock order: mu, then a partition's append lock (AppendAsLeader). No
// request holds mu while it waits for the ISR: a write is appended under mu
// and completed later by its partition's completer (see flushLocked), as
// Kafka completes an acks=all produce from its purgatory. The controller's
// subscribers run on its publishing goroutine; onImage takes mu only
// briefly and starts goroutines, never waits for anything while holding it.
type Coordinator struct {
	bcfg           *config.Broker
	nodeID         int32
	ctrl           *cluster.Controller
	parts          *replica.Manager
	logger         *slog.Logger
	now            func() time.Time
	retentionCheck time.Duration

	// settings are the groups' own configs, parsed by the server once
	// per change of the metadata's group configs (SetGroupSettings),
	// the map it gives the share groups: a heartbeat reads its group's
	// timeouts here rather than parse them. Nil until first set.
	settings atomic.Pointer[map[string]config.GroupSettings]

	mu      sync.Mutex
	gs      *Groups        // mu
	loaded  map[int32]bool // partitions loaded and led here; mu
	loading map[int32]bool // mu
	stopped bool           // mu
	// inflight are the appended writes waiting for the ISR, per
	// __consumer_offsets partition, in log order; mu.
	inflight map[int32]*inflight
	nextID   uint64 // numbers the in-flight writes; mu
	stop     chan struct{}
	wg       sync.WaitGroup

	// view is the topics the consumer groups' assignors see, made from
	// the image viewOf (consumer_coordinator.go); mu.
	viewOf *cluster.Image
	view   map[string]TopicMeta

	// share receives the share groups' records (share_records.go); gens
	// is each partition's load generation; mu.
	share ShareSink
	gens  map[int32]uint64
}

// NewCoordinator makes the coordinator of a broker; Start starts it.
func NewCoordinator(bcfg *config.Broker, ctrl *cluster.Controller, parts *replica.Manager, logger *slog.Logger) *Coordinator {
	ms := func(name string) time.Duration { return time.Duration(bcfg.Int(name)) * time.Millisecond }
	cfg := Config{
		Partitions:            int32(bcfg.Int("offsets.topic.num.partitions")),
		MinSessionTimeout:     ms("group.min.session.timeout.ms"),
		MaxSessionTimeout:     ms("group.max.session.timeout.ms"),
		InitialRebalanceDelay: ms("group.initial.rebalance.delay.ms"),
		MaxSize:               int(bcfg.Int("group.max.size")),
		OffsetsRetention:      time.Duration(bcfg.Int("offsets.retention.minutes")) * time.Minute,
		MaxMetadataBytes:      4096,
		Consumer:              consumerConfig(bcfg),
	}
	if n := bcfg.Int("offset.metadata.max.bytes"); n > 0 {
		cfg.MaxMetadataBytes = int(n)
	}
	c := &Coordinator{bcfg: bcfg, nodeID: int32(bcfg.Int("node.id")), ctrl: ctrl, parts: parts, logger: logger,
		now: time.Now, retentionCheck: ms("offsets.retention.check.interval.ms"),
		gs: NewGroups(cfg), loaded: map[int32]bool{}, loading: map[int32]bool{}, inflight: map[int32]*inflight{}, gens: map[int32]uint64{},
		stop: make(chan struct{})}
	c.gs.Topics = c.topicsView // called by Groups with c.mu held
	c.gs.GroupTimeouts = func(group string) (time.Duration, time.Duration, bool) {
		if all := c.settings.Load(); all != nil {
			st, ok := (*all)[group]
			return st.ConsumerSessionTimeout, st.ConsumerHeartbeatInterval, ok
		}
		// Not set yet (the server sets them as it starts its share
		// groups): what they would say.
		vs := c.ctrl.Image().GroupConfigs[group]
		if vs == nil {
			return 0, 0, false
		}
		st := bcfg.GroupSettingsOf(vs)
		return st.ConsumerSessionTimeout, st.ConsumerHeartbeatInterval, true
	}
	return c
}

// SetGroupSettings replaces the groups' configs in force (groups not in
// s use the broker's): the metadata's group configs parsed, set whenever
// they change. s is not modified afterwards.
func (c *Coordinator) SetGroupSettings(s map[string]config.GroupSettings) {
	c.settings.Store(&s)
}

// Start loads the partitions of __consumer_offsets this node leads, follows
// the metadata for later changes, and starts the timers. It returns once
// the partitions led at start are loaded, so that a broker that says it is
// ready answers for its groups at once (Kafka loads in the background and
// answers COORDINATOR_LOAD_IN_PROGRESS meanwhile, which some clients do not
// retry on FindCoordinator). Partitions led later load in the background.
func (c *Coordinator) Start() {
	c.ctrl.Subscribe(func(_, next *cluster.Image) { c.onImage(next, nil) })
	var initial sync.WaitGroup
	c.onImage(c.ctrl.Image(), &initial)
	initial.Wait()
	c.wg.Add(1)
	go c.timers()
}

// Stop stops the timers and waits for loads in progress. Call it when no
// request is being served any more, before the logs close.
func (c *Coordinator) Stop() {
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		return
	}
	c.stopped = true
	close(c.stop)
	c.mu.Unlock()
	c.wg.Wait()
}

// EnsureTopic creates __consumer_offsets if it does not exist yet, as
// Kafka does on the first FindCoordinator for a group.
func (c *Coordinator) EnsureTopic() error {
	img := c.ctrl.Image()
	if _, ok := img.Topics[OffsetsTopic]; ok {
		return nil
	}
	rf := min(c.bcfg.Int("offsets.topic.replication.factor"), int64(max(len(img.LiveBrokers()), 1)))
	spec := cluster.TopicSpec{Name: OffsetsTopic, Partitions: int32(c.bcfg.Int("offsets.topic.num.partitions")), ReplicationFactor: int16(rf),
		Configs: map[string]string{
			"cleanup.policy":   "compact",
			"segment.bytes":    strconv.FormatInt(c.bcfg.Int("offsets.topic.segment.bytes"), 10),
			"compression.type": "producer",
		}}
	_, err := c.ctrl.CreateTopic(spec, false)
	var ce *cluster.Error
	if errors.As(err, &ce) && ce.Code == kerr.TopicAlreadyExists {
		return nil
	}
	if err != nil {
		return err
	}
	c.logger.Info("created " + OffsetsTopic)
	// The new partitions are empty: their loads take no time, so wait for
	// them rather than send the first client away with
	// COORDINATOR_LOAD_IN_PROGRESS.
	for deadline := time.Now().Add(5 * time.Second); c.Loading() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	return nil
}

// onImage starts loading the partitions of __consumer_offsets this node
// newly leads and unloads those it no longer does. Each load started is
// counted in started, when given.
func (c *Coordinator) onImage(img *cluster.Image, started *sync.WaitGroup) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	t, ok := img.Topics[OffsetsTopic]
	if ok {
		c.gs.cfg.Partitions = int32(len(t.Partitions))
	}
	lead := map[int32]bool{}
	if ok {
		for _, p := range t.Partitions {
			if p.Leader == c.nodeID {
				lead[p.Index] = true
			}
		}
	}
	for p := range c.loaded {
		if !lead[p] {
			delete(c.loaded, p)
			// Writes still waiting for the ISR are answered first, while
			// their groups are still there to be told.
			c.failInflightLocked(p, kerr.NotCoordinator)
			c.gs.Unload(p)
			gen := c.bumpGen(p)
			if c.share != nil {
				c.share.UnloadShare(p, gen)
			}
		}
	}
	for p := range lead {
		if c.loaded[p] || c.loading[p] {
			continue
		}
		c.loading[p] = true
		c.wg.Add(1)
		if started != nil {
			started.Add(1)
		}
		go func() {
			c.load(p)
			if started != nil {
				started.Done()
			}
		}()
	}
}

// load reads a partition from its log start and replays its records, then
// opens it to requests.
func (c *Coordinator) load(p int32) {
	defer c.wg.Done()
	start := c.now()
	var recs []Record
	open := map[int64][]Record{}
	end, err := c.readPartition(p, -1, &recs, open)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.loading, p)
	if c.stopped {
		return
	}
	if err == nil {
		// The rest, written while the load read, under mu: a marker
		// written meanwhile had its CompleteTxn run before the pending
		// offsets it ends were loaded, and would never end them; one
		// written from now on finds them loaded.
		_, err = c.readPartition(p, end, &recs, open)
	}
	if err != nil {
		c.logger.Error("loading groups", "partition", p, "err", err)
		return
	}
	now := c.now()
	var shares []Record
	for _, r := range recs {
		if IsShareRecord(r.Key) {
			shares = append(shares, r)
			continue
		}
		if err := c.gs.Replay(r.Key, r.Value, now); err != nil {
			c.logger.Warn("skipping record of "+OffsetsTopic, "partition", p, "err", err)
		}
	}
	for pid, rs := range open {
		c.gs.loadPending(pid, rs)
	}
	gen := c.bumpGen(p)
	if c.share != nil {
		c.share.LoadShare(p, gen, shares)
	}
	c.loaded[p] = true
	if len(recs) > 0 {
		c.logger.Info("loaded groups", "partition", p, "records", len(recs), "took", time.Since(start))
	}
}

// readPartition reads a partition's records in log order into out. The
// records of a transactional batch wait in open, by producer, for their
// transaction's marker: a commit moves them to out, an abort drops them,
// and those of a transaction still open at the end stay in open. It reads
// from offset from (the log start when negative) and returns the offset it
// read to.
func (c *Coordinator) readPartition(p int32, from int64, out *[]Record, open map[int64][]Record) (int64, error) {
	part, ok := c.parts.Get(OffsetsTopic, p)
	if !ok {
		return 0, fmt.Errorf("broker/group: %s-%d is not hosted here", OffsetsTopic, p)
	}
	// To the log end, as Kafka: a new leader's log is the partition's
	// truth, and its high watermark may still lag its predecessor's.
	off, hw := part.Log.LogStartOffset(), part.Log.LogEndOffset()
	if from > off {
		off = from
	}
	for off < hw {
		select {
		case <-c.stop:
			return off, errors.New("broker/group: stopping")
		default:
		}
		slice, err := part.Log.Read(off, log.ReadOptions{MaxBytes: 1 << 20, MinOneBatch: true, UpTo: hw})
		if err != nil {
			return off, err
		}
		buf, err := slice.ReadAll()
		slice.Release()
		if err != nil {
			return off, err
		}
		if len(buf) == 0 {
			break
		}
		next := off
		for b, rest, ok := record.Split(buf); ok; b, rest, ok = record.Split(rest) {
			next = b.LastOffset() + 1
			if b.Control() {
				if typ, ok := b.ControlType(); ok && typ == record.ControlCommit {
					*out = append(*out, open[b.ProducerID()]...)
				}
				delete(open, b.ProducerID())
				continue
			}
			rs, err := b.DecodeRecords()
			if err != nil {
				return off, err
			}
			for _, r := range rs {
				if b.RecordOffset(&r) < off {
					continue
				}
				if b.Transactional() {
					open[b.ProducerID()] = append(open[b.ProducerID()], Record{Key: r.Key, Value: r.Value})
					continue
				}
				*out = append(*out, Record{Key: r.Key, Value: r.Value})
			}
		}
		if next <= off {
			return off, fmt.Errorf("broker/group: reading %s-%d made no progress at offset %d", OffsetsTopic, p, off)
		}
		off = next
	}
	return off, nil
}

func (c *Coordinator) timers() {
	defer c.wg.Done()
	tick := time.NewTicker(tickInterval)
	defer tick.Stop()
	expire := time.NewTicker(c.retentionCheck)
	defer expire.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
			c.mu.Lock()
			c.gs.Tick(c.now())
			c.flushLocked()
			c.mu.Unlock()
		case <-expire.C:
			c.mu.Lock()
			c.gs.ExpireOffsets(c.now())
			c.flushLocked()
			c.mu.Unlock()
		}
	}
}

// flushLocked appends the writes the state machine queued, in order, and
// returns without waiting for the ISR: each appended write joins its
// partition's in-flight queue, and the partition's completer runs its Done
// once the high watermark covers it (see complete). A write that cannot be
// appended is done at once with the error. The Done of every write of a
// partition runs in log order, under mu, so the state machine sees the
// writes of a group complete in the order it queued them. mu must be held.
func (c *Coordinator) flushLocked() {
	for {
		ws := c.gs.TakeWrites()
		if len(ws) == 0 {
			return
		}
		for _, w := range ws {
			part, last, err := c.append(w)
			if err != nil {
				w.Done(err)
				continue
			}
			q := c.inflight[w.Partition]
			if q == nil {
				q = &inflight{}
				c.inflight[w.Partition] = q
			}
			c.nextID++
			q.writes = append(q.writes, pendingWrite{id: c.nextID, part: part, epoch: part.LeaderEpoch(), last: last,
				deadline: time.Now().Add(offsetCommitTimeout), done: w.Done})
			if !q.running {
				q.running = true
				c.wg.Add(1)
				go c.complete(q)
			}
		}
	}
}

// inflight is the queue of one partition's appended writes that wait for
// the ISR, in log order, and whether its completer runs.
type inflight struct {
	writes  []pendingWrite
	running bool
}

// pendingWrite is an appended write: done runs once its last offset is
// below the high watermark of the leader epoch it was appended in.
type pendingWrite struct {
	id       uint64
	part     *replica.Partition
	epoch    int32
	last     int64
	deadline time.Time
	done     func(error)
}

// complete is the completer of one partition: while writes are in flight it
// waits, without mu, for the high watermark to cover the oldest, then runs
// the Done of every write the high watermark covers (or of the oldest, with
// its error) under mu, and appends what those queued in turn. The high
// watermark only grows, so the oldest write is always the next to finish.
func (c *Coordinator) complete(q *inflight) {
	defer c.wg.Done()
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(q.writes) > 0 {
		head := q.writes[0]
		c.mu.Unlock()
		err := c.waitCommitted(head)
		c.mu.Lock()
		if len(q.writes) == 0 || q.writes[0].id != head.id {
			continue // failed meanwhile (the partition was unloaded)
		}
		if err != nil {
			q.writes = q.writes[1:]
			head.done(err)
		} else {
			hw := head.part.HighWatermark()
			n := 0
			for n < len(q.writes) && q.writes[n].part == head.part && q.writes[n].epoch == head.epoch && q.writes[n].last < hw {
				n++
			}
			done := q.writes[:n]
			q.writes = q.writes[n:]
			for _, w := range done {
				w.done(nil)
			}
		}
		c.flushLocked()
	}
	q.running = false
}

// waitCommitted waits until w is committed, with Kafka's mapping of the
// failures for a coordinator: a lost leadership is NOT_COORDINATOR, a
// timeout or too small an ISR COORDINATOR_NOT_AVAILABLE (so that the
// client retries), as Kafka's GroupMetadataManager and
// TransactionStateManager answer.
func (c *Coordinator) waitCommitted(w pendingWrite) error {
	if w.part.LeaderEpoch() != w.epoch {
		return kerr.NotCoordinator
	}
	switch w.part.WaitCommitted(w.last, 1, w.deadline, c.stop) {
	case nil:
		return nil
	case kerr.NotLeaderForPartition:
		return kerr.NotCoordinator
	default:
		return kerr.CoordinatorNotAvailable
	}
}

// failInflightLocked answers every write of partition p still waiting for
// the ISR with err. mu must be held.
func (c *Coordinator) failInflightLocked(p int32, err error) {
	q := c.inflight[p]
	if q == nil {
		return
	}
	ws := q.writes
	q.writes = nil
	for _, w := range ws {
		w.done(err)
	}
}

// append appends w to its partition as the leader (an append to the local
// log, not a wait for the replicas) and returns the partition and the last
// offset written. mu must be held.
func (c *Coordinator) append(w Write) (*replica.Partition, int64, error) {
	if c.stopped {
		return nil, 0, kerr.CoordinatorNotAvailable
	}
	part, ok := c.parts.Get(OffsetsTopic, w.Partition)
	if !ok {
		return nil, 0, kerr.NotCoordinator
	}
	recs := make([]kmsg.Record, len(w.Records))
	for i, r := range w.Records {
		recs[i] = kmsg.Record{OffsetDelta: int32(i), Key: r.Key, Value: r.Value}
	}
	opts := record.DefaultBuildOptions()
	opts.BaseTimestamp = c.now().UnixMilli()
	if w.Txn != nil {
		opts.ProducerID, opts.ProducerEpoch, opts.Transactional = w.Txn.ID, w.Txn.Epoch, true
	}
	b, err := record.Build(opts, recs)
	if err != nil {
		return nil, 0, err
	}
	if w.Txn != nil {
		last, err := part.AppendFromBroker(b)
		return part, last, err
	}
	res, err := part.AppendAsLeader(b)
	if err != nil {
		return nil, 0, err
	}
	return part, res.LastOffset, nil
}

// offsetCommitTimeout is Kafka's offsets.commit.timeout.ms default: how long
// a group write waits for the ISR.
const offsetCommitTimeout = 5 * time.Second

// status is whether this node serves the group now. mu must be held.
func (c *Coordinator) status(group string) *kerr.Error {
	if group == "" || len(group) > MaxGroupIDLength {
		return kerr.InvalidGroupID
	}
	p := c.gs.Partition(group)
	switch {
	case c.stopped:
		return kerr.CoordinatorNotAvailable
	case c.loading[p]:
		return kerr.CoordinatorLoadInProgress
	case !c.loaded[p]:
		return kerr.NotCoordinator
	}
	return nil
}

// Status is FindCoordinator's view of a group: nil when this node serves
// it, COORDINATOR_LOAD_IN_PROGRESS while its partition loads.
func (c *Coordinator) Status(group string) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status(group)
}

// Join serves a JoinGroup, waiting until the join phase completes or stop
// is closed.
func (c *Coordinator) Join(req JoinRequest, stop <-chan struct{}) *kmsg.JoinGroupResponse {
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	c.mu.Lock()
	if code := c.status(req.Group); code != nil {
		c.mu.Unlock()
		return joinError(req.Version, code, req.MemberID)
	}
	c.gs.Join(req, c.now(), func(r *kmsg.JoinGroupResponse) { offer(ch, r) })
	c.flushLocked()
	c.mu.Unlock()
	select {
	case r := <-ch:
		return r
	case <-stop:
		return joinError(req.Version, kerr.CoordinatorNotAvailable, req.MemberID)
	}
}

// offer sends without blocking: each reply channel gets one answer.
func offer[T any](ch chan T, v T) {
	select {
	case ch <- v:
	default:
	}
}

// Sync serves a SyncGroup, waiting for the leader's assignment.
func (c *Coordinator) Sync(req *kmsg.SyncGroupRequest, stop <-chan struct{}) *kmsg.SyncGroupResponse {
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	c.mu.Lock()
	if code := c.status(req.Group); code != nil {
		c.mu.Unlock()
		return &kmsg.SyncGroupResponse{Version: req.Version, ErrorCode: code.Code}
	}
	c.gs.Sync(req, c.now(), func(r *kmsg.SyncGroupResponse) { offer(ch, r) })
	c.flushLocked()
	c.mu.Unlock()
	select {
	case r := <-ch:
		return r
	case <-stop:
		return &kmsg.SyncGroupResponse{Version: req.Version, ErrorCode: kerr.CoordinatorNotAvailable.Code}
	}
}

// Heartbeat serves a Heartbeat.
func (c *Coordinator) Heartbeat(req *kmsg.HeartbeatRequest) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if code := c.status(req.Group); code != nil {
		return code
	}
	code := c.gs.Heartbeat(req, c.now())
	c.flushLocked()
	return code
}

// Leave serves a LeaveGroup: a top-level error or one per member.
func (c *Coordinator) Leave(group string, members []kmsg.LeaveGroupRequestMember) (*kerr.Error, []*kerr.Error) {
	c.mu.Lock()
	if code := c.status(group); code != nil {
		c.mu.Unlock()
		return code, nil
	}
	top, codes := c.gs.Leave(group, members, c.now())
	// The answer waits until the removal is committed, as Kafka's: a
	// member told it left before that would be loaded again, owning its
	// partitions, by a coordinator that took over meanwhile. Every other
	// call flushes before it unlocks, so the queued writes are this
	// leave's.
	saved := make(chan error, len(c.gs.writes))
	for i := range c.gs.writes {
		done := c.gs.writes[i].Done
		c.gs.writes[i].Done = func(err error) {
			if done != nil {
				done(err)
			}
			saved <- err
		}
	}
	n := cap(saved)
	c.flushLocked()
	c.mu.Unlock()
	for range n {
		if err := <-saved; err != nil && top == nil {
			top = kerr.ErrorForCode(commitErrorCode(err)).(*kerr.Error)
		}
	}
	return top, codes
}

// CommitOffsets serves an OffsetCommit. known says whether a partition
// exists; commits to others are UNKNOWN_TOPIC_OR_PARTITION.
func (c *Coordinator) CommitOffsets(req *kmsg.OffsetCommitRequest, known func(topic string, partition int32) bool) *kmsg.OffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
	codes := make([][]int16, len(req.Topics))
	for i, t := range req.Topics {
		codes[i] = make([]int16, len(t.Partitions))
	}
	c.mu.Lock()
	now := c.now()
	top := c.status(req.Group)
	if top == nil {
		top = c.gs.CheckCommit(Commit{Version: req.Version, Group: req.Group, Generation: req.Generation, MemberID: req.MemberID, InstanceID: req.InstanceID})
	}
	var offsets []OffsetAt
	var idx [][2]int
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			meta := ""
			if p.Metadata != nil {
				meta = *p.Metadata
			}
			switch {
			case !known(t.Topic, p.Partition):
				codes[i][j] = kerr.UnknownTopicOrPartition.Code
			case top != nil:
				codes[i][j] = top.Code
			case c.staleConsumerCommit(req.Group, req.MemberID, req.Generation, t.Topic, p.Partition):
				codes[i][j] = kerr.StaleMemberEpoch.Code
			case len(meta) > c.gs.cfg.MaxMetadataBytes:
				codes[i][j] = kerr.OffsetMetadataTooLarge.Code
			default:
				o := Offset{Offset: p.Offset, LeaderEpoch: p.LeaderEpoch, Metadata: meta, CommitTimestamp: now.UnixMilli(), ExpireTimestamp: -1}
				if req.Version < 6 {
					o.LeaderEpoch = -1
				}
				if req.Version >= 2 && req.Version <= 4 && req.RetentionTimeMillis > 0 {
					o.ExpireTimestamp = o.CommitTimestamp + req.RetentionTimeMillis
				}
				offsets = append(offsets, OffsetAt{TopicPartition{t.Topic, p.Partition}, o})
				idx = append(idx, [2]int{i, j})
			}
		}
	}
	var written chan struct{}
	if len(offsets) > 0 {
		written = make(chan struct{})
		c.gs.Commit(Commit{Group: req.Group, Generation: req.Generation, MemberID: req.MemberID, InstanceID: req.InstanceID}, offsets, now, func(err error) {
			defer close(written)
			if err == nil {
				return
			}
			code := commitErrorCode(err)
			for _, ij := range idx {
				codes[ij[0]][ij[1]] = code
			}
		})
		c.flushLocked()
	}
	c.mu.Unlock()
	if written != nil {
		// The answer waits for the ISR, other requests do not.
		<-written
	}
	for i, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for j, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, codes[i][j]
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// commitErrorCode is Kafka's mapping of an append failure for a commit.
func commitErrorCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		switch ke {
		case kerr.NotCoordinator, kerr.NotLeaderForPartition:
			return kerr.NotCoordinator.Code
		case kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidFetchSize:
			return kerr.InvalidCommitOffsetSize.Code
		}
	}
	return kerr.CoordinatorNotAvailable.Code
}

// Committed is a copy of a group's committed offsets (empty for an unknown
// group), or the error that keeps this node from answering.
func (c *Coordinator) Committed(group string) (map[TopicPartition]Offset, *kerr.Error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if code := c.status(group); code != nil {
		return nil, code
	}
	out := map[TopicPartition]Offset{}
	for tp, o := range c.gs.Offsets(group) {
		out[tp] = o
	}
	return out, nil
}

// DeleteOffsets serves an OffsetDelete.
func (c *Coordinator) DeleteOffsets(group string, tps []TopicPartition) (*kerr.Error, []*kerr.Error) {
	c.mu.Lock()
	if code := c.status(group); code != nil {
		c.mu.Unlock()
		return code, nil
	}
	res := make(chan error, 1)
	top, codes := c.gs.DeleteOffsets(group, tps, c.now(), func(err error) { res <- err })
	c.flushLocked()
	c.mu.Unlock()
	if top != nil {
		return top, nil
	}
	if err := <-res; err != nil {
		return kerr.ErrorForCode(commitErrorCode(err)).(*kerr.Error), nil
	}
	return nil, codes
}

// DeleteGroup serves one group of a DeleteGroups.
func (c *Coordinator) DeleteGroup(group string) *kerr.Error {
	c.mu.Lock()
	if code := c.status(group); code != nil {
		c.mu.Unlock()
		return code
	}
	res := make(chan error, 1)
	if code := c.gs.DeleteGroup(group, c.now(), func(err error) { res <- err }); code != nil {
		c.mu.Unlock()
		return code
	}
	c.flushLocked()
	c.mu.Unlock()
	if err := <-res; err != nil {
		return kerr.ErrorForCode(commitErrorCode(err)).(*kerr.Error)
	}
	return nil
}

// Describe serves one group of a DescribeGroups.
func (c *Coordinator) Describe(group string) kmsg.DescribeGroupsResponseGroup {
	d := kmsg.NewDescribeGroupsResponseGroup()
	d.Group = group
	c.mu.Lock()
	defer c.mu.Unlock()
	if code := c.status(group); code != nil {
		d.ErrorCode = code.Code
		return d
	}
	g, ok := c.gs.Group(group)
	if !ok || g.consumer != nil { // DescribeGroups is for classic groups, as in Kafka
		d.State = Dead.String()
		return d
	}
	d.State, d.ProtocolType = g.State.String(), g.ProtocolType
	if g.State == Stable {
		d.Protocol = g.Protocol
	}
	for _, m := range g.Members() {
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.ClientID, dm.ClientHost = m.ID, m.InstanceID, m.ClientID, m.ClientHost
		if g.State == Stable {
			dm.ProtocolMetadata, dm.MemberAssignment = m.metadata(g.Protocol), m.Assignment
		}
		d.Members = append(d.Members, dm)
	}
	return d
}

// Listed is one group of ListGroups.
type Listed struct {
	ID, ProtocolType string
	State            State
	// Type is "classic" or "consumer"; StateName the state as Kafka
	// names it for that type.
	Type, StateName string
}

// List is every group of the loaded partitions.
func (c *Coordinator) List() []Listed {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Listed
	for _, g := range c.gs.All() {
		if c.loaded[c.gs.Partition(g.ID)] {
			out = append(out, listed(g))
		}
	}
	return out
}

// Stats are counts for the broker's metrics.
type Stats struct {
	// Groups counts the live groups of the loaded partitions by state.
	Groups     map[State]int
	Rebalances int64
}

// Stats counts the groups and the rebalances so far.
func (c *Coordinator) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Stats{Groups: map[State]int{}, Rebalances: c.gs.Rebalances}
	for _, g := range c.gs.All() {
		if c.loaded[c.gs.Partition(g.ID)] {
			st.Groups[g.State]++
		}
	}
	return st
}

// Loading reports whether some partition is still loading.
func (c *Coordinator) Loading() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.loading) > 0
}
