package replica

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

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
}

// NewManager manages partitions in the given log dirs.
func NewManager(cfg *config.Broker, dirs []*log.Dir, logger *slog.Logger) *Manager {
	m := &Manager{cfg: cfg, nodeID: int32(cfg.Int("node.id")), dirs: dirs, logger: logger, parts: map[log.TopicPartition]*Partition{},
		fetchers: map[int32]*fetcher{}, following: map[*Partition]int32{}, stop: make(chan struct{})}
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
func (m *Manager) Apply(prev, next *cluster.Image) error {
	var errs []error
	for _, t := range next.Topics {
		old := prev.Topics[t.Name]
		configChanged := old == nil || old.ID != t.ID || !maps.Equal(old.Configs, t.Configs)
		for _, p := range t.Partitions {
			if !hosts(p, m.nodeID) {
				// Moved away by a reassignment: the copy here is not a
				// replica any more (KAFKA-1074).
				if part, ok := m.Get(t.Name, p.Index); ok && part.TopicID == t.ID {
					m.logger.Info("deleting a replica reassigned away", "partition", part.TP.String(), "replicas", p.Replicas)
					errs = append(errs, m.remove(part.TP))
				}
				continue
			}
			tp := log.TopicPartition{Topic: t.Name, Partition: p.Index}
			part, ok := m.Get(t.Name, p.Index)
			if ok && part.TopicID != t.ID {
				// A topic of the same name was deleted and recreated.
				errs = append(errs, m.remove(tp))
				ok = false
			}
			if !ok {
				errs = append(errs, m.create(tp, t, p))
				continue
			}
			m.follow(part, part.applyMeta(p, m.minISR(t)))
			if configChanged {
				errs = append(errs, part.Log.SetConfig(m.cfg.LogConfig(t.Configs)))
			}
		}
	}
	for _, t := range prev.Topics {
		if n, ok := next.Topics[t.Name]; ok && n.ID == t.ID {
			continue
		}
		for _, p := range t.Partitions {
			tp := log.TopicPartition{Topic: t.Name, Partition: p.Index}
			if cur, ok := m.Get(tp.Topic, tp.Partition); ok && cur.TopicID == t.ID {
				errs = append(errs, m.remove(tp))
			}
		}
	}
	return errors.Join(errs...)
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
		dir := m.dirs[0]
		for _, d := range m.dirs[1:] {
			if len(d.Logs()) < len(dir.Logs()) {
				dir = d
			}
		}
		var err error
		if l, err = dir.Create(tp, cfg); err != nil {
			return fmt.Errorf("broker/replica: create %s: %w", tp, err)
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
