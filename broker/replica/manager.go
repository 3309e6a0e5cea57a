package replica

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/config"
	"github.com/tributary-io/tributary/broker/log"
)

// Manager holds the partitions hosted here and keeps them in step with the
// cluster metadata: Apply creates the logs of new partitions, applies config
// changes and deletes the logs of deleted topics.
type Manager struct {
	cfg    *config.Broker
	nodeID int32
	dirs   []*log.Dir
	logger *slog.Logger

	mu    sync.RWMutex
	parts map[log.TopicPartition]*Partition

	// Replication (see replication.go); transport is nil on a single node.
	transport *Transport
	fmu       sync.Mutex
	fetchers  map[int32]*fetcher   // by leader; fmu
	following map[*Partition]int32 // the leader each partition fetches from; fmu
	stop      chan struct{}        // closed by StopReplication; fmu
	// savedHW are the high watermarks of the last run (checkpoint.go).
	savedHW map[log.TopicPartition]int64

	// applyMu serializes applying metadata: Apply (the controller's
	// publishing goroutine) and the retries of failed partitions. It is
	// taken before mu and fmu.
	applyMu sync.Mutex
	latest  *cluster.Image                       // the last image applied; applyMu
	failed  map[log.TopicPartition]*ApplyFailure // partitions whose last apply failed; applyMu and failMu to write, either to read
	retry   *time.Timer                          // the next retry of the failed; applyMu
	stopped bool                                 // StopReplication was called: nothing more is applied or retried; applyMu
	failMu  sync.Mutex                           // a leaf: Failures reads failed without waiting for an apply
	offline offlineSet                           // replicas in failed log dirs (offline.go)

	// The replication quotas of this broker (throttle.go).
	leaderQuota, followerQuota quota
}

// ApplyFailure is a partition whose metadata could not be applied here (its
// log not created, its config not set, a log left over not deleted): it is
// retried with a backoff until it succeeds or the metadata moves it away,
// and shown meanwhile in /metrics and DescribeLogDirs (see doc.go).
type ApplyFailure struct {
	TP       log.TopicPartition
	Dir      int // index of the log dir the failing log is in, -1 if none
	Err      error
	Since    time.Time
	Attempts int
}

// NewManager manages partitions in the given log dirs.
func NewManager(cfg *config.Broker, dirs []*log.Dir, logger *slog.Logger) *Manager {
	m := &Manager{cfg: cfg, nodeID: int32(cfg.Int("node.id")), dirs: dirs, logger: logger, parts: map[log.TopicPartition]*Partition{},
		fetchers: map[int32]*fetcher{}, following: map[*Partition]int32{}, stop: make(chan struct{}),
		failed: map[log.TopicPartition]*ApplyFailure{}}
	m.savedHW = m.loadHighWatermarks()
	return m
}

// Get is the hosted partition, if any.
func (m *Manager) Get(topic string, partition int32) (*Partition, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	p, ok := m.parts[log.TopicPartition{Topic: topic, Partition: partition}]
	return p, ok
}

// All is every hosted partition.
func (m *Manager) All() []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Partition, 0, len(m.parts))
	for _, p := range m.parts {
		out = append(out, p)
	}
	return out
}

// Dirs are the log dirs.
func (m *Manager) Dirs() []*log.Dir { return m.dirs }

// Apply brings the hosted partitions in line with next. It is called with
// each published image in order.
//
// Only what changed from prev is applied: a topic the change did not touch
// is the same *Topic in both images (Image.Apply copies what it changes),
// and within a changed topic only partitions whose state or config differs
// are visited, so that a metadata record costs the partitions it names,
// not every partition hosted. A partition that fails is recorded in the
// failures and retried (see ApplyFailure); the error returned joins this
// call's failures, for the caller's log.
func (m *Manager) Apply(prev, next *cluster.Image) error {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	if m.stopped {
		return nil
	}
	// The diff is taken from what was applied here last, not from the
	// caller's prev: the broker's first Apply (from the empty image) and
	// the first published change may come in either order, and an image
	// older than the last applied must not undo it.
	switch {
	case m.latest == nil:
		prev = cluster.EmptyImage(next.ClusterID)
	case next.Offset < m.latest.Offset:
		return nil
	default:
		prev = m.latest
	}
	m.latest = next
	// A change of this broker's dynamic configs (or the cluster's
	// defaults) may change every topic's effective config: message.max.bytes,
	// log.retention.ms... The config already holds them (the controller
	// sets them before it publishes).
	pd, pb := prev.DynamicConfigs(m.nodeID)
	nd, nb := next.DynamicConfigs(m.nodeID)
	brokerChanged := !maps.Equal(pd, nd) || !maps.Equal(pb, nb)
	var errs []error
	for name, t := range next.Topics {
		old := prev.Topics[name]
		if old == t && !brokerChanged {
			continue
		}
		if old != nil && old.ID != t.ID {
			old = nil // deleted and recreated under the same name
		}
		configChanged := old == nil || !maps.Equal(old.Configs, t.Configs) || brokerChanged
		for _, p := range t.Partitions {
			tp := log.TopicPartition{Topic: t.Name, Partition: p.Index}
			if !configChanged && int(p.Index) < len(old.Partitions) && samePartition(old.Partitions[p.Index], p) && m.failed[tp] == nil {
				continue
			}
			errs = append(errs, m.noteApply(tp, m.applyPartition(t, p, configChanged)))
		}
	}
	for name, t := range prev.Topics {
		if n, ok := next.Topics[name]; ok && (n == t || n.ID == t.ID) {
			continue
		}
		for _, p := range t.Partitions {
			tp := log.TopicPartition{Topic: t.Name, Partition: p.Index}
			if cur, ok := m.Get(tp.Topic, tp.Partition); ok && cur.TopicID == t.ID {
				errs = append(errs, m.noteApply(tp, m.remove(tp)))
			}
		}
	}
	m.scheduleRetryLocked()
	return errors.Join(errs...)
}

// applyPartition brings one partition of t in line with p: creates its log
// here, deletes it if this broker is no longer a replica, or applies its
// leadership, ISR and (when configChanged) config. applyMu must be held.
func (m *Manager) applyPartition(t *cluster.Topic, p cluster.Partition, configChanged bool) error {
	tp := log.TopicPartition{Topic: t.Name, Partition: p.Index}
	part, ok := m.Get(t.Name, p.Index)
	if !hosts(p, m.nodeID) {
		// Moved away by a reassignment: the copy here is not a replica
		// any more (KAFKA-1074).
		if ok && part.TopicID == t.ID {
			m.logger.Info("deleting a replica reassigned away", "partition", part.TP.String(), "replicas", p.Replicas)
			return m.remove(part.TP)
		}
		return nil
	}
	if !ok && m.offlineTopic(tp, t.ID) {
		return nil // its log dir failed: until a restart (offline.go)
	}
	if ok && part.TopicID != t.ID {
		// A topic of the same name was deleted and recreated.
		if err := m.remove(tp); err != nil {
			return err
		}
		ok = false
	}
	if !ok {
		return m.create(tp, t, p)
	}
	m.follow(part, part.applyMeta(p, m.minISR(t)))
	if configChanged {
		part.setThrottles(throttlesOf(t, p.Index, m.nodeID))
		return part.Log.SetConfig(m.cfg.LogConfig(t.Configs))
	}
	return nil
}

func samePartition(a, b cluster.Partition) bool {
	return a.Index == b.Index && a.Leader == b.Leader && a.LeaderEpoch == b.LeaderEpoch && a.PartitionEpoch == b.PartitionEpoch &&
		slices.Equal(a.Replicas, b.Replicas) && slices.Equal(a.ISR, b.ISR) && slices.Equal(a.ELR, b.ELR) &&
		slices.Equal(a.Adding, b.Adding) && slices.Equal(a.Removing, b.Removing)
}

// noteApply records the outcome of applying tp: a failure is kept (and
// counted as another attempt), a success forgets an earlier failure.
// applyMu must be held.
func (m *Manager) noteApply(tp log.TopicPartition, err error) error {
	m.failMu.Lock()
	defer m.failMu.Unlock()
	f := m.failed[tp]
	if err == nil {
		if f != nil {
			delete(m.failed, tp)
			m.logger.Info("partition applied after failing", "partition", tp.String(), "attempts", f.Attempts)
		}
		return nil
	}
	if f == nil {
		f = &ApplyFailure{TP: tp, Since: time.Now()}
		m.failed[tp] = f
	}
	f.Err, f.Attempts, f.Dir = err, f.Attempts+1, m.dirOf(tp)
	if de := (*dirError)(nil); errors.As(err, &de) {
		f.Dir = de.dir
	}
	m.logger.Error("applying metadata to a partition failed; retrying", "partition", tp.String(), "attempt", f.Attempts, "err", err)
	return fmt.Errorf("%s: %w", tp, err)
}

// dirError is a failure of the log dir of that index.
type dirError struct {
	dir int
	err error
}

func (e *dirError) Error() string { return e.err.Error() }
func (e *dirError) Unwrap() error { return e.err }

// dirOf is the index of the log dir holding tp, or -1.
func (m *Manager) dirOf(tp log.TopicPartition) int {
	for i, d := range m.dirs {
		if _, ok := d.Log(tp); ok {
			return i
		}
	}
	return -1
}

// Failures are the partitions whose metadata could not be applied here.
func (m *Manager) Failures() []ApplyFailure {
	m.failMu.Lock()
	defer m.failMu.Unlock()
	out := make([]ApplyFailure, 0, len(m.failed))
	for _, f := range m.failed {
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b ApplyFailure) int { return strings.Compare(a.TP.String(), b.TP.String()) })
	return out
}

// Retry backoff of failed partitions: doubling from the first to the last.
const (
	retryFirst = time.Second
	retryMax   = 30 * time.Second
)

// scheduleRetryLocked arms the retry of the failed partitions, if there are
// any and none is armed. applyMu must be held.
func (m *Manager) scheduleRetryLocked() {
	if len(m.failed) == 0 || m.retry != nil {
		return
	}
	attempts := 0
	for _, f := range m.failed {
		attempts = max(attempts, f.Attempts)
	}
	wait := retryFirst << min(attempts-1, 5)
	m.retry = time.AfterFunc(min(wait, retryMax), m.retryFailed)
}

// retryFailed applies the failed partitions again, from the last image.
func (m *Manager) retryFailed() {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	m.retry = nil
	if m.stopped || m.latest == nil {
		return
	}
	for tp := range m.failed {
		var err error
		if t, ok := m.latest.Topics[tp.Topic]; ok && int(tp.Partition) < len(t.Partitions) {
			err = m.applyPartition(t, t.Partitions[tp.Partition], true)
		} else if _, ok := m.Get(tp.Topic, tp.Partition); ok || m.dirOf(tp) >= 0 {
			err = m.remove(tp) // its topic is gone: what is left here goes too
		}
		m.noteApply(tp, err)
	}
	m.scheduleRetryLocked()
}

// minISR is the topic's min.insync.replicas: its override, else the
// broker's.
func (m *Manager) minISR(t *cluster.Topic) int {
	if v, ok := t.Configs["min.insync.replicas"]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return int(m.cfg.Int("min.insync.replicas"))
}

func hosts(p cluster.Partition, node int32) bool {
	for _, r := range p.Replicas {
		if r == node {
			return true
		}
	}
	return false
}

// create opens the partition's log, reusing one already on disk (a restart)
// or creating it in the log dir with the fewest partitions.
func (m *Manager) create(tp log.TopicPartition, t *cluster.Topic, p cluster.Partition) error {
	cfg := m.cfg.LogConfig(t.Configs)
	var l *log.Log
	for _, d := range m.dirs {
		if d.Offline() != nil {
			continue
		}
		if existing, ok := d.Log(tp); ok {
			if id, ok := readPartitionMetadata(existing.Dir()); ok && id != t.ID {
				// Left by a deleted topic of the same name while we were
				// down: its data is not this topic's.
				m.logger.Warn("deleting log of an earlier topic with the same name", "partition", tp.String(), "old_topic_id", id.String())
				if err := d.Delete(tp); err != nil {
					return err
				}
				continue
			}
			l = existing
			if err := l.SetConfig(cfg); err != nil {
				return err
			}
			break
		}
	}
	if l == nil {
		healthy := m.healthyDirs()
		if len(healthy) == 0 {
			return fmt.Errorf("broker/replica: create %s: %w", tp, log.ErrLogDirOffline)
		}
		di := healthy[0]
		for _, i := range healthy[1:] {
			if len(m.dirs[i].Logs()) < len(m.dirs[di].Logs()) {
				di = i
			}
		}
		var err error
		if l, err = m.dirs[di].Create(tp, cfg); err != nil {
			return &dirError{dir: di, err: fmt.Errorf("broker/replica: create %s: %w", tp, err)}
		}
	}
	if err := writePartitionMetadata(l.Dir(), t.ID); err != nil {
		return err
	}
	saved, ok := m.savedHW[tp]
	if !ok {
		saved = -1
	}
	part, err := newPartition(tp, t.ID, l, m.nodeID, p, saved, m.logger)
	if err != nil {
		return err
	}
	part.setThrottles(throttlesOf(t, p.Index, m.nodeID))
	rc := part.applyMeta(p, m.minISR(t))
	m.mu.Lock()
	m.parts[tp] = part
	m.mu.Unlock()
	m.follow(part, rc)
	m.logger.Info("partition online", "partition", tp.String(), "topic_id", t.ID.String(), "log_end_offset", l.LogEndOffset())
	return nil
}

func (m *Manager) remove(tp log.TopicPartition) error {
	m.mu.Lock()
	part := m.parts[tp]
	delete(m.parts, tp)
	m.mu.Unlock()
	if part != nil {
		m.unfollow(part)
		part.stopLeading()
	}
	var errs []error
	for _, d := range m.dirs {
		errs = append(errs, d.Delete(tp))
	}
	m.logger.Info("partition deleted", "partition", tp.String())
	return errors.Join(errs...)
}

// DeleteOrphans removes logs on disk whose topic no longer exists, after a
// restart that missed the deletion.
func (m *Manager) DeleteOrphans() error {
	var errs []error
	for _, d := range m.dirs {
		for _, l := range d.Logs() {
			tp := l.TopicPartition()
			if _, hosted := m.Get(tp.Topic, tp.Partition); !hosted {
				m.logger.Warn("deleting log of a topic that no longer exists", "partition", tp.String())
				errs = append(errs, d.Delete(tp))
			}
		}
	}
	return errors.Join(errs...)
}

// PartitionMetadataFile records a partition directory's topic id, in
// Kafka's format ("version: 0", "topic_id: <base64>"), so that a directory
// left behind by a deleted topic is never mistaken for a new topic of the
// same name.
const PartitionMetadataFile = "partition.metadata"

func writePartitionMetadata(dir string, id cluster.TopicID) error {
	path := filepath.Join(dir, PartitionMetadataFile)
	want := fmt.Sprintf("version: 0\ntopic_id: %s\n", id)
	if got, err := os.ReadFile(path); err == nil && string(got) == want {
		return nil
	}
	return os.WriteFile(path, []byte(want), 0o644)
}

func readPartitionMetadata(dir string) (cluster.TopicID, bool) {
	data, err := os.ReadFile(filepath.Join(dir, PartitionMetadataFile))
	if err != nil {
		return cluster.TopicID{}, false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "topic_id: "); ok {
			var id cluster.TopicID
			if id.UnmarshalText([]byte(strings.TrimSpace(v))) == nil {
				return id, true
			}
		}
	}
	return cluster.TopicID{}, false
}
