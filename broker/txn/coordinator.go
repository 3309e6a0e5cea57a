// Package txn is the transaction coordinator (KIP-98, KIP-447): the state
// of each transactional id, persisted as records of the compacted internal
// topic __transaction_state with Kafka's key and value schemas, and the
// two-phase end of a transaction: a Prepare state written to the log, the
// markers written to every partition of the transaction by their leaders,
// then a Complete state.
//
// A transactional id lives in the partition abs(javaHashCode(id)) %
// transaction.state.log.num.partitions, as in Kafka; its coordinator is
// that partition's leader, which loads the partition when it becomes its
// leader and answers COORDINATOR_LOAD_IN_PROGRESS meanwhile. The
// coordinator epoch written in the markers is the partition's leader epoch.
//
// Every operation on one transactional id holds that id's lock from its
// checks to its last write, including the wait for the ISR: the requests of
// one producer are serial anyway, and those of other ids go on meanwhile.
package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/config"
	"github.com/tributary-io/tributary/broker/group"
	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/broker/replica"
)

// Topic is the internal topic of transaction states.
const Topic = "__transaction_state"

// writeTimeout is how long a state write, or a round of markers, waits
// for the ISR.
const writeTimeout = 5 * time.Second

// MarkerWriter writes the markers of a transaction to its partitions,
// through their leaders, and returns the partitions it could not write to
// (retried later).
type MarkerWriter func(ctx context.Context, producerID int64, epoch int16, commit bool, coordinatorEpoch int32, tv int8, tps []TP) []TP

// Meta is one transactional id's state.
type Meta struct {
	mu sync.Mutex // held for a whole operation, writes included

	ID         string
	ProducerID int64
	Epoch      int16
	TimeoutMs  int32
	Status     Status
	Partitions map[TP]bool
	LastUpdate int64
	Start      int64
	// Transactions v2 (KIP-890): PrevProducerID is the id before the last
	// rotation, NextProducerID the id a prepared transaction whose epoch
	// overflowed moves to once complete (-1: none), ClientTV the
	// transaction version of the client that drove the last transition.
	PrevProducerID int64
	NextProducerID int64
	ClientTV       int16
	partition      int32
	// coordEpoch is the coordinator epoch of the load this Meta belongs
	// to: an operation that began before a reload must not write.
	coordEpoch int32
	// prevEpoch is the epoch the last InitProducerId bumped from, -1 when
	// unknown (in memory only, as Kafka's lastProducerEpoch): that call
	// presenting it again is a retry whose answer was lost (KIP-360).
	prevEpoch int16
	// retry are the partitions whose markers are still to be written, in
	// a Prepare state; all of them after a load.
	retry []TP
}

func (m *Meta) value() value {
	v := value{ProducerID: m.ProducerID, Epoch: m.Epoch, TimeoutMs: m.TimeoutMs, Status: m.Status,
		LastUpdate: m.LastUpdate, Start: m.Start, PrevProducerID: m.PrevProducerID, NextProducerID: m.NextProducerID, ClientTV: m.ClientTV}
	for tp := range m.Partitions {
		v.Partitions = append(v.Partitions, tp)
	}
	SortTPs(v.Partitions)
	return v
}

// Coordinator is this broker's transaction coordinator. Its methods are
// safe for concurrent use.
type Coordinator struct {
	bcfg    *config.Broker
	nodeID  int32
	ctrl    *cluster.Controller
	parts   *replica.Manager
	logger  *slog.Logger
	now     func() time.Time
	alloc   func() (int64, error)
	markers MarkerWriter

	mu      sync.Mutex
	txns    map[string]*Meta // mu
	loaded  map[int32]int32  // partitions loaded and led here, with their coordinator epoch; mu
	loading map[int32]bool   // mu
	stopped bool             // mu
	stop    chan struct{}
	wg      sync.WaitGroup
	// retrying is set while a round of retryMarkers runs.
	retrying atomic.Bool
}

// NewCoordinator makes the coordinator of a broker; alloc gives producer
// ids, markers writes markers. Start starts it.
func NewCoordinator(bcfg *config.Broker, ctrl *cluster.Controller, parts *replica.Manager, logger *slog.Logger, alloc func() (int64, error), markers MarkerWriter) *Coordinator {
	return &Coordinator{bcfg: bcfg, nodeID: int32(bcfg.Int("node.id")), ctrl: ctrl, parts: parts, logger: logger.With("component", "txn"),
		now: time.Now, alloc: alloc, markers: markers, txns: map[string]*Meta{}, loaded: map[int32]int32{}, loading: map[int32]bool{},
		stop: make(chan struct{})}
}

// Start loads the partitions of __transaction_state led here, follows the
// metadata, and starts the timer that aborts expired transactions and
// retries unwritten markers.
func (c *Coordinator) Start() {
	c.ctrl.Subscribe(func(_, next *cluster.Image) { c.onImage(next, nil) })
	var initial sync.WaitGroup
	c.onImage(c.ctrl.Image(), &initial)
	initial.Wait()
	c.wg.Add(1)
	go c.timers()
}

// Stop stops the timers and waits for loads and background work.
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

// numPartitions is transaction.state.log.num.partitions, or the topic's
// partition count once it exists.
func (c *Coordinator) numPartitions() int32 {
	if t, ok := c.ctrl.Image().Topics[Topic]; ok && len(t.Partitions) > 0 {
		return int32(len(t.Partitions))
	}
	return int32(c.bcfg.Int("transaction.state.log.num.partitions"))
}

// PartitionFor is the __transaction_state partition of a transactional id.
func (c *Coordinator) PartitionFor(id string) int32 { return group.PartitionFor(id, c.numPartitions()) }

// EnsureTopic creates __transaction_state if it does not exist yet, as
// Kafka does on the first FindCoordinator for a transactional id.
func (c *Coordinator) EnsureTopic() error {
	img := c.ctrl.Image()
	if _, ok := img.Topics[Topic]; ok {
		return nil
	}
	rf := min(c.bcfg.Int("transaction.state.log.replication.factor"), int64(max(len(img.LiveBrokers()), 1)))
	spec := cluster.TopicSpec{Name: Topic, Partitions: int32(c.bcfg.Int("transaction.state.log.num.partitions")), ReplicationFactor: int16(rf),
		Configs: map[string]string{
			"cleanup.policy":      "compact",
			"segment.bytes":       strconv.FormatInt(c.bcfg.Int("transaction.state.log.segment.bytes"), 10),
			"compression.type":    "uncompressed",
			"min.insync.replicas": strconv.FormatInt(min(c.bcfg.Int("transaction.state.log.min.isr"), rf), 10),
		}}
	_, err := c.ctrl.CreateTopic(spec, false)
	var ce *cluster.Error
	if errors.As(err, &ce) && ce.Code == kerr.TopicAlreadyExists {
		return nil
	}
	if err != nil {
		return err
	}
	c.logger.Info("created " + Topic)
	for deadline := time.Now().Add(5 * time.Second); c.Loading() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	return nil
}

// Loading says whether a partition is loading.
func (c *Coordinator) Loading() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.loading) > 0
}

func (c *Coordinator) onImage(img *cluster.Image, started *sync.WaitGroup) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	t, ok := img.Topics[Topic]
	lead := map[int32]int32{}
	if ok {
		for _, p := range t.Partitions {
			if p.Leader == c.nodeID {
				lead[p.Index] = p.LeaderEpoch
			}
		}
	}
	for p, epoch := range c.loaded {
		if e, ok := lead[p]; !ok || e != epoch {
			delete(c.loaded, p)
			for id, m := range c.txns {
				if m.partition == p {
					delete(c.txns, id)
				}
			}
		}
	}
	for p, epoch := range lead {
		if _, ok := c.loaded[p]; ok || c.loading[p] {
			continue
		}
		c.loading[p] = true
		c.wg.Add(1)
		if started != nil {
			started.Add(1)
		}
		go func() {
			c.load(p, epoch)
			if started != nil {
				started.Done()
			}
		}()
	}
}

// load reads a partition's states from its log start to its end (a new
// leader's log is the partition's truth) and opens it to requests.
// Transactions found in a Prepare state get their markers written again by
// the timer.
func (c *Coordinator) load(p int32, epoch int32) {
	defer c.wg.Done()
	states, err := c.readPartition(p)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.loading, p)
	if c.stopped {
		return
	}
	if err != nil {
		c.logger.Error("loading transactions", "partition", p, "err", err)
		return
	}
	for id, v := range states {
		m := &Meta{ID: id, ProducerID: v.ProducerID, Epoch: v.Epoch, TimeoutMs: v.TimeoutMs, Status: v.Status,
			Partitions: map[TP]bool{}, LastUpdate: v.LastUpdate, Start: v.Start, partition: p, coordEpoch: epoch, prevEpoch: -1,
			PrevProducerID: v.PrevProducerID, NextProducerID: v.NextProducerID, ClientTV: v.ClientTV}
		for _, tp := range v.Partitions {
			m.Partitions[tp] = true
		}
		if m.Status == PrepareCommit || m.Status == PrepareAbort {
			m.retry = v.Partitions
		}
		c.txns[id] = m
	}
	c.loaded[p] = epoch
	if len(states) > 0 {
		c.logger.Info("loaded transactions", "partition", p, "transactional_ids", len(states))
	}
}

func (c *Coordinator) readPartition(p int32) (map[string]value, error) {
	part, ok := c.parts.Get(Topic, p)
	if !ok {
		return nil, fmt.Errorf("broker/txn: %s-%d is not hosted here", Topic, p)
	}
	out := map[string]value{}
	off, end := part.Log.LogStartOffset(), part.Log.LogEndOffset()
	for off < end {
		select {
		case <-c.stop:
			return nil, errors.New("broker/txn: stopping")
		default:
		}
		slice, err := part.Log.Read(off, log.ReadOptions{MaxBytes: 1 << 20, MinOneBatch: true, UpTo: end})
		if err != nil {
			return nil, err
		}
		buf, err := slice.ReadAll()
		slice.Release()
		if err != nil {
			return nil, err
		}
		if len(buf) == 0 {
			break
		}
		next := off
		for b, rest, ok := record.Split(buf); ok; b, rest, ok = record.Split(rest) {
			next = b.LastOffset() + 1
			if b.Control() {
				continue
			}
			rs, err := b.DecodeRecords()
			if err != nil {
				return nil, err
			}
			for _, r := range rs {
				if b.RecordOffset(&r) < off {
					continue
				}
				id, err := decodeKey(r.Key)
				if err != nil {
					c.logger.Warn("skipping record of "+Topic, "partition", p, "err", err)
					continue
				}
				if r.Value == nil {
					delete(out, id)
					continue
				}
				v, err := decodeValue(r.Value)
				if err != nil {
					c.logger.Warn("skipping record of "+Topic, "partition", p, "id", id, "err", err)
					continue
				}
				out[id] = v
			}
		}
		if next <= off {
			return nil, fmt.Errorf("broker/txn: reading %s-%d made no progress at offset %d", Topic, p, off)
		}
		off = next
	}
	return out, nil
}

// Status is FindCoordinator's view of a transactional id: nil when this
// node is its coordinator.
func (c *Coordinator) Status(id string) *kerr.Error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, code := c.statusLocked(id)
	return code
}

func (c *Coordinator) statusLocked(id string) (int32, *kerr.Error) {
	if id == "" {
		return 0, kerr.InvalidRequest
	}
	p := c.PartitionFor(id)
	switch {
	case c.stopped:
		return p, kerr.CoordinatorNotAvailable
	case c.loading[p]:
		return p, kerr.CoordinatorLoadInProgress
	}
	if _, ok := c.loaded[p]; !ok {
		return p, kerr.NotCoordinator
	}
	return p, nil
}

// lookup is the locked Meta of a transactional id (nil, nil when unknown
// and create is false). The caller unlocks it.
func (c *Coordinator) lookup(id string, create bool) (*Meta, *kerr.Error) {
	c.mu.Lock()
	p, code := c.statusLocked(id)
	if code != nil {
		c.mu.Unlock()
		return nil, code
	}
	m, ok := c.txns[id]
	if !ok {
		if !create {
			c.mu.Unlock()
			return nil, nil
		}
		m = &Meta{ID: id, ProducerID: -1, Epoch: -1, Status: Empty, Partitions: map[TP]bool{}, partition: p, coordEpoch: c.loaded[p], prevEpoch: -1,
			PrevProducerID: -1, NextProducerID: -1}
		c.txns[id] = m
	}
	c.mu.Unlock()
	m.mu.Lock()
	// The partition may have moved while we waited for the lock.
	c.mu.Lock()
	cur, still := c.txns[id]
	c.mu.Unlock()
	if !still || cur != m {
		m.mu.Unlock()
		return nil, kerr.NotCoordinator
	}
	return m, nil
}

// write persists m's state as next and, once the ISR has it, makes it m's.
// m.mu must be held.
func (c *Coordinator) write(m *Meta, next *Meta) *kerr.Error {
	next.LastUpdate = c.now().UnixMilli()
	if code := c.append(m, encodeValue(next.value()), next.LastUpdate); code != nil {
		return code
	}
	m.ProducerID, m.Epoch, m.TimeoutMs, m.Status = next.ProducerID, next.Epoch, next.TimeoutMs, next.Status
	m.Partitions, m.LastUpdate, m.Start = next.Partitions, next.LastUpdate, next.Start
	m.PrevProducerID, m.NextProducerID, m.ClientTV = next.PrevProducerID, next.NextProducerID, next.ClientTV
	return nil
}

// append writes one record of m's id (value nil: a tombstone) and waits
// for the ISR. m.mu must be held.
func (c *Coordinator) append(m *Meta, value []byte, now int64) *kerr.Error {
	part, ok := c.parts.Get(Topic, m.partition)
	if !ok {
		return kerr.NotCoordinator
	}
	c.mu.Lock()
	epoch, led := c.loaded[m.partition]
	c.mu.Unlock()
	// m of an earlier load (an operation that outlived a reload): its
	// state may be stale, the reloaded Meta is the id's truth.
	if !led || part.LeaderEpoch() != epoch || m.coordEpoch != epoch {
		return kerr.NotCoordinator
	}
	opts := record.DefaultBuildOptions()
	opts.BaseTimestamp = now
	b, err := record.Build(opts, record.NewRecords(record.KV{Key: encodeKey(m.ID), Value: value}))
	if err != nil {
		return kerr.UnknownServerError
	}
	res, err := part.AppendAsLeader(b)
	if err != nil {
		c.logger.Warn("writing transaction state", "id", m.ID, "err", err)
		return kerr.CoordinatorNotAvailable
	}
	switch part.WaitCommitted(res.LastOffset, 1, time.Now().Add(writeTimeout), c.stop) {
	case nil:
	case kerr.NotLeaderForPartition:
		return kerr.NotCoordinator
	default:
		return kerr.CoordinatorNotAvailable
	}
	return nil
}

func (m *Meta) copy() *Meta {
	n := &Meta{ID: m.ID, ProducerID: m.ProducerID, Epoch: m.Epoch, TimeoutMs: m.TimeoutMs, Status: m.Status,
		Partitions: make(map[TP]bool, len(m.Partitions)), LastUpdate: m.LastUpdate, Start: m.Start, partition: m.partition, coordEpoch: m.coordEpoch,
		PrevProducerID: m.PrevProducerID, NextProducerID: m.NextProducerID, ClientTV: m.ClientTV}
	for tp := range m.Partitions {
		n.Partitions[tp] = true
	}
	return n
}

// coordinatorEpoch is the leader epoch of m's partition.
func (c *Coordinator) coordinatorEpoch(m *Meta) int32 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loaded[m.partition]
}

// InitProducerID serves InitProducerId for a transactional id: a first
// producer gets a new id; a later one bumps the epoch, which fences the
// older instance (its requests get PRODUCER_FENCED or
// INVALID_PRODUCER_EPOCH), after the older instance's open transaction is
// aborted. producerID/epoch are the caller's current ones (KIP-360, -1
// when it has none); a mismatch is PRODUCER_FENCED.
func (c *Coordinator) InitProducerID(id string, timeoutMs int32, producerID int64, epoch int16) (int64, int16, *kerr.Error) {
	if timeoutMs <= 0 || int64(timeoutMs) > c.bcfg.Int("transaction.max.timeout.ms") {
		return -1, -1, kerr.InvalidTransactionTimeout
	}
	m, code := c.lookup(id, true)
	if code != nil {
		return -1, -1, code
	}
	defer m.mu.Unlock()
	if producerID >= 0 && producerID == m.ProducerID && epoch == m.prevEpoch && epoch != m.Epoch && m.Status == Empty {
		// Its retry: bumping again would fence the very producer that
		// asked, which holds the answer it never received.
		return m.ProducerID, m.Epoch, nil
	}
	if producerID >= 0 && m.ProducerID >= 0 && (producerID != m.ProducerID || epoch != m.Epoch) {
		return -1, -1, kerr.ProducerFenced
	}
	prev := int16(-1)
	if producerID >= 0 {
		prev = epoch
	}
	switch m.Status {
	case PrepareCommit, PrepareAbort:
		if code := c.completeLocked(m); code != nil {
			return -1, -1, kerr.ConcurrentTransactions
		}
	case Ongoing:
		// A zombie's transaction: abort it with a bumped epoch, so that
		// the zombie's late writes are refused.
		if code := c.endLocked(m, false, true); code != nil {
			return -1, -1, code
		}
		if m.Status != CompleteAbort {
			return -1, -1, kerr.ConcurrentTransactions
		}
	}
	next := m.copy()
	next.TimeoutMs, next.Status, next.Partitions, next.Start = timeoutMs, Empty, map[TP]bool{}, -1
	if m.ProducerID < 0 || m.Epoch >= math.MaxInt16-1 {
		pid, err := c.alloc()
		if err != nil {
			return -1, -1, kerr.CoordinatorNotAvailable
		}
		next.ProducerID, next.Epoch = pid, firstEpoch
	} else {
		next.Epoch = m.Epoch + 1
	}
	if code := c.write(m, next); code != nil {
		return -1, -1, code
	}
	if next.ProducerID != producerID {
		prev = -1 // a new producer id: the old one's epoch is no retry of it
	}
	m.prevEpoch = prev
	return m.ProducerID, m.Epoch, nil
}

// checkProducer is the common check of a transactional request.
func checkProducer(m *Meta, producerID int64, epoch int16) *kerr.Error {
	switch {
	case m == nil || m.ProducerID != producerID:
		return kerr.InvalidProducerIDMapping
	case epoch != m.Epoch:
		return kerr.ProducerFenced
	case m.Status == PrepareCommit || m.Status == PrepareAbort:
		return kerr.ConcurrentTransactions
	}
	return nil
}

// AddPartitions serves AddPartitionsToTxn and AddOffsetsToTxn (with the
// group's __consumer_offsets partition): the partitions join the
// transaction, which becomes Ongoing.
//
// v2 is a transactions v2 add (KIP-890): a partition leader adding the
// partition of a Produce v12 or a TxnOffsetCommit v5 for the client; the
// transaction then ends with an epoch bump whatever EndTxn version ends it.
func (c *Coordinator) AddPartitions(id string, producerID int64, epoch int16, tps []TP, v2 bool) *kerr.Error {
	m, code := c.lookup(id, false)
	if code != nil {
		return code
	}
	if m == nil {
		return kerr.InvalidProducerIDMapping
	}
	defer m.mu.Unlock()
	if code := checkProducer(m, producerID, epoch); code != nil {
		return code
	}
	if m.Status == Ongoing && !slices.ContainsFunc(tps, func(tp TP) bool { return !m.Partitions[tp] }) {
		return nil
	}
	next := m.copy()
	if m.Status != Ongoing {
		next.Partitions, next.Start = map[TP]bool{}, c.now().UnixMilli()
	}
	next.Status = Ongoing
	if v2 {
		next.ClientTV = 2
	} else if m.Status != Ongoing {
		next.ClientTV = 0
	}
	for _, tp := range tps {
		next.Partitions[tp] = true
	}
	return c.write(m, next)
}

// Verify says whether a transactional produce to tp belongs to the
// producer's ongoing transaction (nil), as Kafka's leaders verify with
// AddPartitionsToTxn v4 (KIP-890 part 1).
func (c *Coordinator) Verify(id string, producerID int64, epoch int16, tp TP) *kerr.Error {
	m, code := c.lookup(id, false)
	if code != nil {
		return code
	}
	if m == nil {
		return kerr.InvalidProducerIDMapping
	}
	defer m.mu.Unlock()
	switch {
	case m.ProducerID != producerID:
		return kerr.InvalidProducerIDMapping
	case epoch != m.Epoch:
		// A newer epoch than the coordinator's is no transaction of its
		// either: let through, it would open one whose markers (of the
		// current epoch) the partition then refuses.
		return kerr.InvalidProducerEpoch
	case m.Status != Ongoing || !m.Partitions[tp]:
		return kerr.InvalidTxnState
	}
	return nil
}

// EndTxn serves EndTxn: commit or abort the ongoing transaction.
func (c *Coordinator) EndTxn(id string, producerID int64, epoch int16, commit bool) *kerr.Error {
	m, code := c.lookup(id, false)
	if code != nil {
		return code
	}
	if m == nil {
		return kerr.InvalidProducerIDMapping
	}
	defer m.mu.Unlock()
	switch {
	case m.ProducerID != producerID:
		return kerr.InvalidProducerIDMapping
	case epoch != m.Epoch:
		return kerr.ProducerFenced
	}
	switch m.Status {
	case Ongoing:
		return c.endLocked(m, commit, false)
	case CompleteCommit:
		if commit {
			return nil // a retry
		}
	case CompleteAbort:
		if !commit {
			return nil
		}
	case PrepareCommit, PrepareAbort:
		if (m.Status == PrepareCommit) == commit {
			c.completeLocked(m)
			return nil
		}
		return kerr.InvalidTxnState
	}
	// Empty (nothing begun), or the other end of a finished transaction:
	// Kafka's INVALID_TXN_STATE.
	return kerr.InvalidTxnState
}

// endLocked writes the Prepare state, the markers and the Complete state.
// fence bumps the epoch first (an abort by the coordinator: a timeout or a
// new instance), so that the markers fence the old producer. A marker that
// cannot be written leaves the transaction prepared: the client is
// answered, and the timer writes the rest. m.mu must be held.
func (c *Coordinator) endLocked(m *Meta, commit, fence bool) *kerr.Error {
	next := m.copy()
	next.Status = PrepareAbort
	if commit {
		next.Status = PrepareCommit
	}
	if fence {
		// With transaction.version 2 Kafka bumps twice (its epoch fence,
		// then the v2 end's own bump): a zombie of a v2 transaction that
		// retries EndTxn at its epoch must not look like the retry of an
		// EndTxn that bumped once (PRODUCER_FENCED, not NONE).
		bump := int16(1)
		next.ClientTV = 0
		if c.TransactionVersion() >= 2 {
			bump, next.ClientTV = 2, 2
		}
		bumped := int32(m.Epoch) + int32(bump)
		if bumped >= math.MaxInt16 {
			// Exhausted: the markers carry the last epoch and the
			// transaction completes onto a new producer id, as a v2
			// end does, so that no producer id is left at 32767 with a
			// bump still to come (it would wrap). No PrevProducerID:
			// the fenced producer's EndTxn is no retry of this one.
			pid, err := c.alloc()
			if err != nil {
				return kerr.CoordinatorNotAvailable
			}
			next.NextProducerID, next.PrevProducerID, bumped = pid, -1, math.MaxInt16
		}
		next.Epoch = int16(bumped)
	}
	if code := c.write(m, next); code != nil {
		return code
	}
	m.retry = m.value().Partitions
	c.completeLocked(m)
	return nil
}

// completeLocked writes the markers still to be written for a prepared
// transaction, then its Complete state. m.mu must be held.
func (c *Coordinator) completeLocked(m *Meta) *kerr.Error {
	commit := m.Status == PrepareCommit
	if len(m.retry) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
		m.retry = c.markers(ctx, m.ProducerID, m.Epoch, commit, c.coordinatorEpoch(m), int8(m.ClientTV), m.retry)
		cancel()
		if len(m.retry) > 0 {
			return kerr.ConcurrentTransactions
		}
	}
	next := m.copy()
	next.Status, next.Partitions = CompleteAbort, map[TP]bool{}
	if commit {
		next.Status = CompleteCommit
	}
	if m.NextProducerID >= 0 {
		// A v2 end whose bump exhausted the epochs: the markers carried
		// the old id at the last epoch, the client goes on with the new
		// id at epoch 0 (Kafka's prepareComplete).
		// PrevProducerID was set by the Prepare: the old id for the
		// client's own end (its retry is recognised), -1 for a fence.
		next.ProducerID, next.Epoch, next.NextProducerID = m.NextProducerID, 0, -1
	}
	return c.write(m, next)
}

func (c *Coordinator) timers() {
	defer c.wg.Done()
	tick := time.NewTicker(time.Duration(c.bcfg.Int("transaction.abort.timed.out.transaction.cleanup.interval.ms")) * time.Millisecond)
	defer tick.Stop()
	retry := time.NewTicker(time.Second)
	defer retry.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
			c.abortExpired()
			c.expireIDs()
		case <-retry.C:
			// Off this loop, so that leaders slow to take markers never
			// delay the timeouts' aborts; one round at a time.
			if c.retrying.CompareAndSwap(false, true) {
				c.wg.Add(1)
				go func() {
					defer c.wg.Done()
					defer c.retrying.Store(false)
					c.retryMarkers()
				}()
			}
		}
	}
}

func (c *Coordinator) snapshot() []*Meta {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*Meta, 0, len(c.txns))
	for _, m := range c.txns {
		out = append(out, m)
	}
	return out
}

// abortExpired aborts, with a bumped epoch, the transactions open for
// longer than their timeout.
func (c *Coordinator) abortExpired() {
	now := c.now().UnixMilli()
	for _, m := range c.snapshot() {
		m.mu.Lock()
		if m.Status == Ongoing && m.Start >= 0 && now-m.Start > int64(m.TimeoutMs) {
			c.logger.Info("aborting an expired transaction", "id", m.ID, "producer_id", m.ProducerID, "epoch", m.Epoch)
			if code := c.endLocked(m, false, true); code != nil {
				c.logger.Warn("aborting an expired transaction", "id", m.ID, "err", code)
			}
		}
		m.mu.Unlock()
	}
}

// expireIDs forgets the transactional ids idle (no transaction open) for
// longer than transactional.id.expiration.ms, with a tombstone, as Kafka
// does; the next InitProducerId of such an id starts it afresh.
func (c *Coordinator) expireIDs() {
	cutoff := c.now().UnixMilli() - c.bcfg.Int("transactional.id.expiration.ms")
	for _, m := range c.snapshot() {
		if !m.mu.TryLock() {
			continue // busy: not idle
		}
		idle := m.Status == Empty || m.Status == CompleteCommit || m.Status == CompleteAbort
		if idle && m.ProducerID >= 0 && m.LastUpdate < cutoff {
			if code := c.append(m, nil, c.now().UnixMilli()); code == nil {
				c.mu.Lock()
				if c.txns[m.ID] == m {
					delete(c.txns, m.ID)
				}
				c.mu.Unlock()
				c.logger.Info("expired a transactional id", "id", m.ID, "producer_id", m.ProducerID)
			}
		}
		m.mu.Unlock()
	}
}

// retryMarkers completes prepared transactions whose markers could not all
// be written, or that a load found prepared.
// The transactions are retried at once, so a round takes one marker
// timeout, not one per transaction.
func (c *Coordinator) retryMarkers() {
	var wg sync.WaitGroup
	for _, m := range c.snapshot() {
		if !m.mu.TryLock() {
			continue // an operation is on it: it completes it itself
		}
		if m.Status != PrepareCommit && m.Status != PrepareAbort {
			m.mu.Unlock()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer m.mu.Unlock()
			c.completeLocked(m)
		}()
	}
	wg.Wait()
}

// Describe is a transactional id's state for DescribeTransactions.
func (c *Coordinator) Describe(id string) (Meta, *kerr.Error) {
	m, code := c.lookup(id, false)
	if code != nil {
		return Meta{}, code
	}
	if m == nil {
		return Meta{}, kerr.TransactionalIDNotFound
	}
	defer m.mu.Unlock()
	return Meta{ID: m.ID, ProducerID: m.ProducerID, Epoch: m.Epoch, TimeoutMs: m.TimeoutMs, Status: m.Status,
		Partitions: m.copy().Partitions, LastUpdate: m.LastUpdate, Start: m.Start}, nil
}

// Listed is one transaction of ListTransactions.
type Listed struct {
	ID         string
	ProducerID int64
	Status     Status
	Start      int64
}

// List is every transactional id this node coordinates. The states of ids
// busy in an operation are read without waiting for it.
func (c *Coordinator) List() []Listed {
	var out []Listed
	for _, m := range c.snapshot() {
		if !m.mu.TryLock() {
			continue
		}
		if m.ProducerID >= 0 {
			out = append(out, Listed{m.ID, m.ProducerID, m.Status, m.Start})
		}
		m.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b Listed) int {
		if a.ID < b.ID {
			return -1
		}
		if a.ID > b.ID {
			return 1
		}
		return 0
	})
	return out
}
