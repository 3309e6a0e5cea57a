package server

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/broker/replica"
	"github.com/tributary-io/tributary/broker/share"
)

// shareStateTopic keeps share-partition state, as Kafka's share
// coordinator keeps it: one compacted record per share partition, in the
// partition hash("group:topicId:partition") of the topic.
//
// Who reads and writes: the leader of a topic partition serves its share
// fetches and holds its share partitions in memory (broker/share); it
// loads a share partition's state from, and writes every change to, the
// leader of the state partition the key hashes to. When that is this
// broker the record is appended here; otherwise it goes to that broker in
// an internal ReadShareGroupState / WriteShareGroupState /
// DeleteShareGroupState request (Kafka's persister RPCs, which Kafka's
// share-partition leader sends to its share coordinator). The state
// partition's leader keeps the latest state of each of its keys in memory,
// loaded from the log when it becomes leader, and fences a write whose
// leader epoch is older than the stored one (FENCED_LEADER_EPOCH): a
// deposed partition leader cannot overwrite its successor's state.
// A write returns once the ISR has the record (acks=all), before the
// client whose request changed the state is answered.
const shareStateTopic = "__share_group_state"

// shareStateTimeout bounds a state write's wait for the ISR and a remote
// call, as Kafka's share.coordinator.write.timeout.ms does.
const shareStateTimeout = 5 * time.Second

// shareCreateTag is the tagged field of a WriteShareGroupState partition
// between Tributary's brokers that carries share.Snapshot's Create; on an
// InitializeShareGroupState partition it asks for a create-only
// initialization (writeCreateOnly), the group coordinator's.
const shareCreateTag = 0x7473

// writeMode is who writes a share partition's state (writeLocal).
type writeMode int8

const (
	writeLeader     writeMode = iota // a partition leader's write: the state must exist (or s.Create)
	writeReset                       // an administrator's InitializeShareGroupState: replaces the state
	writeCreateOnly                  // the group coordinator's initialization: creates the state if it has none, else leaves it
)

type shareState struct {
	s *Server
	// previousVersion makes this share coordinator answer as the version
	// before create-only initialization did (tests of a mixed cluster).
	previousVersion bool

	mu      sync.Mutex
	loaded  map[int32]map[share.Key]share.Snapshot // state partitions led and loaded here
	loading map[int32]bool
	stopped bool
	stop    chan struct{}
	wg      sync.WaitGroup

	// uncommitted, set by tests, makes local writes append and then
	// fail as if the ISR never caught up (NOT_ENOUGH_REPLICAS): the
	// record is in the log but the writer is told it failed.
	uncommitted atomic.Bool
}

func newShareState(s *Server) *shareState {
	return &shareState{s: s, loaded: map[int32]map[share.Key]share.Snapshot{}, loading: map[int32]bool{}, stop: make(chan struct{})}
}

// start loads the state partitions led here (waiting for them, as the
// group coordinator does) and follows leadership changes.
func (st *shareState) start() {
	st.s.ctrl.Subscribe(func(_, next *cluster.Image) { st.onImage(next, nil) })
	var initial sync.WaitGroup
	st.onImage(st.s.ctrl.Image(), &initial)
	initial.Wait()
}

func (st *shareState) close() {
	st.mu.Lock()
	if !st.stopped {
		st.stopped = true
		close(st.stop)
	}
	st.mu.Unlock()
	st.wg.Wait()
}

func (st *shareState) onImage(img *cluster.Image, started *sync.WaitGroup) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.stopped {
		return
	}
	lead := map[int32]bool{}
	if t, ok := img.Topics[shareStateTopic]; ok {
		for _, p := range t.Partitions {
			if p.Leader == st.s.nodeID {
				lead[p.Index] = true
			}
		}
	}
	for p := range st.loaded {
		if !lead[p] {
			delete(st.loaded, p)
		}
	}
	for p := range lead {
		if st.loaded[p] != nil || st.loading[p] {
			continue
		}
		st.loading[p] = true
		st.wg.Add(1)
		if started != nil {
			started.Add(1)
		}
		go func() {
			defer st.wg.Done()
			st.load(p)
			if started != nil {
				started.Done()
			}
		}()
	}
}

// load replays a state partition: the last snapshot of a key, with the
// updates after it merged in, is its state; a tombstone deletes it.
func (st *shareState) load(p int32) {
	states := map[share.Key]share.Snapshot{}
	err := st.read(p, states)
	st.mu.Lock()
	defer st.mu.Unlock()
	delete(st.loading, p)
	if err != nil {
		st.s.logger.Error("loading share-group state", "partition", p, "err", err)
		return
	}
	if st.stopped {
		return
	}
	// Still the leader? A load that raced a move is dropped; the next
	// image starts another.
	if t, ok := st.s.ctrl.Image().Topics[shareStateTopic]; !ok || int(p) >= len(t.Partitions) || t.Partitions[p].Leader != st.s.nodeID {
		return
	}
	st.loaded[p] = states
	if len(states) > 0 {
		st.s.logger.Info("loaded share-group state", "partition", p, "share_partitions", len(states))
	}
}

func (st *shareState) read(p int32, states map[share.Key]share.Snapshot) error {
	part, ok := st.s.parts.Get(shareStateTopic, p)
	if !ok {
		return fmt.Errorf("%s-%d is not hosted here", shareStateTopic, p)
	}
	off, end := part.Log.LogStartOffset(), part.Log.LogEndOffset()
	for off < end {
		select {
		case <-st.stop:
			return errors.New("stopping")
		default:
		}
		sl, err := part.Log.Read(off, log.ReadOptions{MaxBytes: 1 << 20, MinOneBatch: true, UpTo: end})
		if err != nil {
			return err
		}
		buf, err := sl.ReadAll()
		sl.Release()
		if err != nil {
			return err
		}
		next := off
		for b, rest, ok := record.Split(buf); ok; b, rest, ok = record.Split(rest) {
			next = b.LastOffset() + 1
			if b.Control() {
				continue
			}
			rs, err := b.DecodeRecords()
			if err != nil {
				return err
			}
			for _, r := range rs {
				if b.RecordOffset(&r) < off {
					continue
				}
				replayShareState(states, r.Key, r.Value, st.s.logger.Warn)
			}
		}
		if next <= off {
			return fmt.Errorf("reading %s-%d made no progress at offset %d", shareStateTopic, p, off)
		}
		off = next
	}
	return nil
}

func replayShareState(states map[share.Key]share.Snapshot, key, value []byte, warn func(string, ...any)) {
	k, update, err := share.ParseStateKey(key)
	if err != nil {
		warn("skipping record of "+shareStateTopic, "err", err)
		return
	}
	switch {
	case value == nil:
		delete(states, k)
	case update:
		s, ok := states[k]
		if !ok {
			return // an update without its snapshot: compacted away with it
		}
		if err := share.ApplyUpdate(&s, value); err != nil {
			warn("skipping record of "+shareStateTopic, "err", err)
			return
		}
		states[k] = s
	default:
		s, err := share.ParseSnapshot(value)
		if err != nil {
			warn("skipping record of "+shareStateTopic, "err", err)
			return
		}
		states[k] = s
	}
}

// partitionFor is Kafka's ShareCoordinatorService.partitionFor: the
// Java hashCode of "group:topicId:partition", topicId in Kafka's base64.
func partitionFor(k share.Key, n int32) int32 {
	s := k.Group + ":" + base64.RawURLEncoding.EncodeToString(k.Topic[:]) + ":" + strconv.Itoa(int(k.Partition))
	var h int32
	for _, u := range utf16Units(s) {
		h = 31*h + int32(u)
	}
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % n
}

func utf16Units(s string) []uint16 {
	out := make([]uint16, 0, len(s))
	for _, r := range s {
		if r >= 0x10000 {
			r -= 0x10000
			out = append(out, uint16(0xD800+(r>>10)), uint16(0xDC00+(r&0x3FF)))
			continue
		}
		out = append(out, uint16(r))
	}
	return out
}

// ensureTopic creates __share_group_state when missing, as Kafka does on
// the first share-coordinator lookup, and returns its partition count.
func (st *shareState) ensureTopic() (int32, error) {
	img := st.s.ctrl.Image()
	if t, ok := img.Topics[shareStateTopic]; ok {
		return int32(len(t.Partitions)), nil
	}
	cfg := st.s.cfg
	rf := min(cfg.Int("share.coordinator.state.topic.replication.factor"), int64(max(len(img.LiveBrokers()), 1)))
	minISR := min(cfg.Int("share.coordinator.state.topic.min.isr"), rf)
	spec := cluster.TopicSpec{Name: shareStateTopic, Partitions: int32(cfg.Int("share.coordinator.state.topic.num.partitions")), ReplicationFactor: int16(rf),
		Configs: map[string]string{
			"cleanup.policy":      "compact",
			"segment.bytes":       strconv.FormatInt(cfg.Int("share.coordinator.state.topic.segment.bytes"), 10),
			"min.insync.replicas": strconv.FormatInt(minISR, 10),
			"compression.type":    "producer",
		}}
	_, err := st.s.ctrl.CreateTopic(spec, false)
	var ce *cluster.Error
	if err != nil && !(errors.As(err, &ce) && ce.Code == kerr.TopicAlreadyExists) {
		return 0, err
	}
	// Wait for the metadata to show it, and for its empty partitions led
	// here to load, rather than fail the first share fetch.
	for deadline := time.Now().Add(shareStateTimeout); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if t, ok := st.s.ctrl.Image().Topics[shareStateTopic]; ok {
			st.mu.Lock()
			busy := len(st.loading) > 0
			st.mu.Unlock()
			if !busy {
				return int32(len(t.Partitions)), nil
			}
		}
	}
	return 0, kerr.CoordinatorNotAvailable
}

// route is the state partition of k and its leader.
func (st *shareState) route(k share.Key) (int32, int32, error) {
	n, err := st.ensureTopic()
	if err != nil {
		return 0, 0, err
	}
	p := partitionFor(k, n)
	t := st.s.ctrl.Image().Topics[shareStateTopic]
	if int(p) >= len(t.Partitions) || t.Partitions[p].Leader < 0 {
		return 0, 0, kerr.CoordinatorNotAvailable
	}
	return p, t.Partitions[p].Leader, nil
}

// Read implements share.Store.
func (st *shareState) Read(k share.Key) (share.Snapshot, bool, error) {
	p, leader, err := st.route(k)
	if err != nil {
		return share.Snapshot{}, false, err
	}
	if leader == st.s.nodeID {
		return st.readLocal(p, k)
	}
	return st.readRemote(leader, k)
}

// Write implements share.Store: nil deletes k's state.
func (st *shareState) Write(k share.Key, s *share.Snapshot) error {
	p, leader, err := st.route(k)
	if err != nil {
		return err
	}
	if leader == st.s.nodeID {
		if e := st.writeLocal(p, k, s, writeLeader); e != nil {
			return e
		}
		return nil
	}
	return st.writeRemote(leader, k, s)
}

func (st *shareState) status(p int32) *kerr.Error {
	switch {
	case st.stopped:
		return kerr.CoordinatorNotAvailable
	case st.loading[p]:
		return kerr.CoordinatorLoadInProgress
	case st.loaded[p] == nil:
		return kerr.NotCoordinator
	}
	return nil
}

func (st *shareState) readLocal(p int32, k share.Key) (share.Snapshot, bool, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if e := st.status(p); e != nil {
		return share.Snapshot{}, false, e
	}
	s, ok := st.loaded[p][k]
	if ok && deleted(s) {
		// Deleted: no state, but the epoch a new one must start at.
		return share.Snapshot{StateEpoch: s.StateEpoch, LeaderEpoch: s.LeaderEpoch}, false, nil
	}
	return s, ok, nil
}

// deleted says s is the marker a delete leaves (see writeLocal); a state
// initialized but never read (share.StartUnset) is not one.
func deleted(s share.Snapshot) bool { return s.StartOffset == -1 }

// errUninitialized refuses a write to a key without state (Kafka's
// WRITE_UNINITIALIZED_SHARE_PARTITION, sent as INVALID_REQUEST).
var errUninitialized = kerr.InvalidRequest

// writeLocal appends k's new state to state partition p led here and
// waits for the ISR. s nil deletes k's state; mode says who writes. The fences are checked here,
// under mu, so that two writers cannot both pass them (review M3).
//
// Only an initialization, or a partition leader's write flagged Create
// (its share partition began at share.auto.offset.reset, with nothing in
// the store), may give a key without state one: any other write to it is
// refused with INVALID_REQUEST, as Kafka's share coordinator refuses a
// write to an uninitialized share partition (review M1). A delete leaves a
// marker (start offset -1) holding the next state epoch, never a
// tombstone, so that a state epoch is never used twice for a key: a
// leader's copy from before the delete stays fenced (review M2).
//
// A create-only initialization is checked here too, under the same lock
// as every other write: two of them, or one racing a leader's writes,
// never replace a state that exists (it would wipe what was
// acknowledged). Past a delete it creates the state at the marker's
// next state epoch.
func (st *shareState) writeLocal(p int32, k share.Key, s *share.Snapshot, mode writeMode) *kerr.Error {
	part, e := st.s.leaderPartition(shareStateTopic, p)
	if e != nil {
		return kerr.NotCoordinator
	}
	st.mu.Lock()
	if e := st.status(p); e != nil {
		st.mu.Unlock()
		return e
	}
	states := st.loaded[p]
	cur, had := states[k]
	gone := had && deleted(cur)
	var value []byte
	now := time.Now().UnixMilli()
	if mode == writeCreateOnly {
		if had && !gone {
			st.mu.Unlock()
			return nil // initialized already: left as it is
		}
		c := *s
		c.StateEpoch = max(c.StateEpoch, cur.StateEpoch)
		s = &c
	}
	init := mode != writeLeader
	if s != nil {
		if had && s.LeaderEpoch >= 0 && s.LeaderEpoch < cur.LeaderEpoch {
			st.mu.Unlock()
			return kerr.FencedLeaderEpoch
		}
		if (!had || gone) && !init && !s.Create {
			st.mu.Unlock()
			return errUninitialized
		}
		// An administrator's reset (InitializeShareGroupState) moved the
		// state epoch on: a leader still holding the state from before
		// is fenced, as Kafka's ShareCoordinatorShard fences it. An
		// equal epoch is a retry of the same reset, or the same leader.
		if had && s.StateEpoch < cur.StateEpoch {
			st.mu.Unlock()
			return kerr.FencedStateEpoch
		}
		if had && s.LeaderEpoch < 0 {
			s.LeaderEpoch = cur.LeaderEpoch
		}
		s.SnapshotEpoch, s.Created, s.Written = 0, now, now
		if had && !gone {
			s.SnapshotEpoch, s.Created = cur.SnapshotEpoch+1, cur.Created
		}
		value = share.SnapshotValue(*s)
	} else if !had || gone {
		st.mu.Unlock()
		return nil
	} else {
		s = &share.Snapshot{SnapshotEpoch: cur.SnapshotEpoch + 1, StateEpoch: cur.StateEpoch + 1, LeaderEpoch: cur.LeaderEpoch, StartOffset: -1, Created: now, Written: now}
		value = share.SnapshotValue(*s)
	}
	opts := record.DefaultBuildOptions()
	opts.BaseTimestamp = now
	b, err := record.Build(opts, []kmsg.Record{{Key: share.StateKey(k), Value: value}})
	if err != nil {
		st.mu.Unlock()
		return kerr.UnknownServerError
	}
	// Appended under mu, so that the log's order of a key's records is
	// the order of the map's changes.
	res, err := part.AppendAsLeader(b)
	if err != nil {
		st.mu.Unlock()
		var ke *kerr.Error
		if errors.As(err, &ke) && ke == kerr.NotLeaderForPartition {
			return kerr.NotCoordinator
		}
		return kerr.CoordinatorNotAvailable
	}
	stored := *s
	stored.Create = false
	states[k] = stored
	st.mu.Unlock()
	if st.uncommitted.Load() {
		return kerr.CoordinatorNotAvailable
	}
	minISR := 1
	if t, ok := st.s.ctrl.Image().Topics[shareStateTopic]; ok && int(p) < len(t.Partitions) {
		minISR = int(min(st.s.cfg.Int("share.coordinator.state.topic.min.isr"), int64(len(t.Partitions[p].Replicas))))
	}
	switch part.WaitCommitted(res.LastOffset, minISR, time.Now().Add(shareStateTimeout), st.stop) {
	case nil:
		return nil
	case kerr.NotLeaderForPartition:
		return kerr.NotCoordinator
	default:
		return kerr.CoordinatorNotAvailable
	}
}

// remote sends one persister request to the state partition's leader, on
// the inter-broker listener with the cluster secret, as transaction
// markers are sent.
func (st *shareState) remote(leader int32, req kmsg.Request) (kmsg.Response, error) {
	b, ok := st.s.ctrl.Image().Brokers[leader]
	if !ok {
		return nil, kerr.CoordinatorNotAvailable
	}
	addr, err := st.s.interBrokerAddr(b)
	if err != nil {
		return nil, kerr.CoordinatorNotAvailable
	}
	ctx, cancel := context.WithTimeout(context.Background(), shareStateTimeout+time.Second)
	defer cancel()
	conn, err := st.s.dialReplica(ctx, addr, fmt.Sprintf("tributary-share-%d", st.s.nodeID))
	if err != nil {
		return nil, kerr.CoordinatorNotAvailable
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	resp, err := conn.RoundTrip(req, time.Until(deadline))
	if err != nil {
		return nil, kerr.CoordinatorNotAvailable
	}
	return resp, nil
}

func (st *shareState) secret(tags *kmsg.Tags) {
	tags.Set(replica.SecretTag, []byte(st.s.ctrl.Image().Secret))
}

func codeErr(code int16) error {
	if code == 0 {
		return nil
	}
	return kerr.ErrorForCode(code)
}

func (st *shareState) readRemote(leader int32, k share.Key) (share.Snapshot, bool, error) {
	req := kmsg.NewPtrReadShareGroupStateRequest()
	req.SetVersion(0)
	st.secret(&req.UnknownTags)
	req.GroupID = k.Group
	rt := kmsg.NewReadShareGroupStateRequestTopic()
	rt.TopicID = k.Topic
	rp := kmsg.NewReadShareGroupStateRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch = k.Partition, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r, err := st.remote(leader, req)
	if err != nil {
		return share.Snapshot{}, false, err
	}
	resp := r.(*kmsg.ReadShareGroupStateResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return share.Snapshot{}, false, kerr.CoordinatorNotAvailable
	}
	sp := resp.Topics[0].Partitions[0]
	if err := codeErr(sp.ErrorCode); err != nil {
		return share.Snapshot{}, false, err
	}
	if sp.StartOffset == -1 {
		// No state (share.StartUnset is an initialized one), Tributary's convention between its brokers; the state
		// epoch is the one a new state must start at (see writeLocal).
		return share.Snapshot{StateEpoch: max(sp.StateEpoch, 0)}, false, nil
	}
	s := share.Snapshot{StateEpoch: sp.StateEpoch, StartOffset: sp.StartOffset}
	for _, b := range sp.StateBatches {
		s.Batches = append(s.Batches, share.Batch{First: b.FirstOffset, Last: b.LastOffset, State: share.State(b.DeliveryState), Count: b.DeliveryCount})
	}
	return s, true, nil
}

func (st *shareState) writeRemote(leader int32, k share.Key, s *share.Snapshot) error {
	if s == nil {
		req := kmsg.NewPtrDeleteShareGroupStateRequest()
		req.SetVersion(0)
		st.secret(&req.UnknownTags)
		req.GroupID = k.Group
		rt := kmsg.NewDeleteShareGroupStateRequestTopic()
		rt.TopicID = k.Topic
		rp := kmsg.NewDeleteShareGroupStateRequestTopicPartition()
		rp.Partition = k.Partition
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		r, err := st.remote(leader, req)
		if err != nil {
			return err
		}
		resp := r.(*kmsg.DeleteShareGroupStateResponse)
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return kerr.CoordinatorNotAvailable
		}
		return codeErr(resp.Topics[0].Partitions[0].ErrorCode)
	}
	req := kmsg.NewPtrWriteShareGroupStateRequest()
	req.SetVersion(0)
	st.secret(&req.UnknownTags)
	req.GroupID = k.Group
	rt := kmsg.NewWriteShareGroupStateRequestTopic()
	rt.TopicID = k.Topic
	rp := kmsg.NewWriteShareGroupStateRequestTopicPartition()
	rp.Partition, rp.StateEpoch, rp.LeaderEpoch, rp.StartOffset = k.Partition, s.StateEpoch, s.LeaderEpoch, s.StartOffset
	if s.Create {
		rp.UnknownTags.Set(shareCreateTag, []byte{1})
	}
	for _, b := range s.Batches {
		sb := kmsg.NewWriteShareGroupStateRequestTopicPartitionStateBatch()
		sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.First, b.Last, int8(b.State), b.Count
		rp.StateBatches = append(rp.StateBatches, sb)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	r, err := st.remote(leader, req)
	if err != nil {
		return err
	}
	resp := r.(*kmsg.WriteShareGroupStateResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return kerr.CoordinatorNotAvailable
	}
	return codeErr(resp.Topics[0].Partitions[0].ErrorCode)
}

// localPartition is the state partition of k when this broker leads it,
// for the persister requests other brokers send.
func (st *shareState) localPartition(k share.Key) (int32, *kerr.Error) {
	t, ok := st.s.ctrl.Image().Topics[shareStateTopic]
	if !ok {
		return 0, kerr.NotCoordinator
	}
	p := partitionFor(k, int32(len(t.Partitions)))
	if t.Partitions[p].Leader != st.s.nodeID {
		return 0, kerr.NotCoordinator
	}
	return p, nil
}

// gate is the check every persister RPC makes per key before touching it,
// so the three handlers refuse a stranger and a misrouted key the same way:
// the caller must be a broker or hold ClusterAction, and this broker must
// lead the key's state partition. code is 0 when both hold.
func (st *shareState) gate(allowed bool, k share.Key) (int32, int16) {
	if !allowed {
		return 0, kerr.ClusterAuthorizationFailed.Code
	}
	p, e := st.localPartition(k)
	if e != nil {
		return 0, e.Code
	}
	return p, 0
}

// handleReadShareGroupState serves another broker's state read.
func (s *Server) handleReadShareGroupState(c *conn, req *kmsg.ReadShareGroupStateRequest) (*kmsg.ReadShareGroupStateResponse, error) {
	resp := req.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
	allowed := s.fromBroker(req.UnknownTags) || c.allowedCluster(opClusterAction)
	for _, t := range req.Topics {
		rt := kmsg.NewReadShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewReadShareGroupStateResponseTopicPartition()
			rp.Partition, rp.StartOffset = p.Partition, -1
			k := share.Key{Group: req.GroupID, Topic: t.TopicID, Partition: p.Partition}
			switch sp, code := s.shareState.gate(allowed, k); {
			case code != 0:
				rp.ErrorCode = code
			default:
				snap, found, err := s.shareState.readLocal(sp, k)
				if err != nil {
					rp.ErrorCode = kerr.CoordinatorNotAvailable.Code
					var ke *kerr.Error
					if errors.As(err, &ke) {
						rp.ErrorCode = ke.Code
					}
				} else if !found {
					rp.StateEpoch = snap.StateEpoch
				} else {
					rp.StateEpoch, rp.StartOffset = snap.StateEpoch, snap.StartOffset
					for _, b := range snap.Batches {
						sb := kmsg.NewReadShareGroupStateResponseTopicPartitionStateBatch()
						sb.FirstOffset, sb.LastOffset, sb.DeliveryState, sb.DeliveryCount = b.First, b.Last, int8(b.State), b.Count
						rp.StateBatches = append(rp.StateBatches, sb)
					}
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// handleWriteShareGroupState serves another broker's state write.
func (s *Server) handleWriteShareGroupState(c *conn, req *kmsg.WriteShareGroupStateRequest) (*kmsg.WriteShareGroupStateResponse, error) {
	resp := req.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
	allowed := s.fromBroker(req.UnknownTags) || c.allowedCluster(opClusterAction)
	for _, t := range req.Topics {
		rt := kmsg.NewWriteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewWriteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			k := share.Key{Group: req.GroupID, Topic: t.TopicID, Partition: p.Partition}
			switch sp, code := s.shareState.gate(allowed, k); {
			case code != 0:
				rp.ErrorCode = code
			case len(p.StateBatches) > s.shares.Cfg().MaxRecordLocks:
				rp.ErrorCode = kerr.InvalidRequest.Code
			default:
				snap := share.Snapshot{StateEpoch: p.StateEpoch, LeaderEpoch: p.LeaderEpoch, StartOffset: p.StartOffset}
				for _, b := range p.StateBatches {
					snap.Batches = append(snap.Batches, share.Batch{First: b.FirstOffset, Last: b.LastOffset, State: share.State(b.DeliveryState), Count: b.DeliveryCount})
				}
				p.UnknownTags.Each(func(key uint32, _ []byte) {
					if key == shareCreateTag {
						snap.Create = true
					}
				})
				if e := s.shareState.writeLocal(sp, k, &snap, writeLeader); e != nil {
					rp.ErrorCode = e.Code
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}

// handleDeleteShareGroupState serves another broker's state deletion.
func (s *Server) handleDeleteShareGroupState(c *conn, req *kmsg.DeleteShareGroupStateRequest) (*kmsg.DeleteShareGroupStateResponse, error) {
	resp := req.ResponseKind().(*kmsg.DeleteShareGroupStateResponse)
	allowed := s.fromBroker(req.UnknownTags) || c.allowedCluster(opClusterAction)
	for _, t := range req.Topics {
		rt := kmsg.NewDeleteShareGroupStateResponseTopic()
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewDeleteShareGroupStateResponseTopicPartition()
			rp.Partition = p.Partition
			k := share.Key{Group: req.GroupID, Topic: t.TopicID, Partition: p.Partition}
			switch sp, code := s.shareState.gate(allowed, k); {
			case code != 0:
				rp.ErrorCode = code
			default:
				if e := s.shareState.writeLocal(sp, k, nil, writeLeader); e != nil {
					rp.ErrorCode = e.Code
				}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
