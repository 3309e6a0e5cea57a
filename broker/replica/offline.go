package replica

import (
	"slices"
	"sync"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/log"
)

// Replicas in a failed log dir (see broker/log's offline.go): DirFailed
// takes them out of the hosted partitions, so that nothing here leads,
// follows, snapshots or checkpoints them any more, and keeps them in the
// offline set, so that their clients get KAFKA_STORAGE_ERROR (Offline) and
// metadata changes leave them alone until the broker restarts. The
// controller learns of them from the heartbeats (OfflineReplicas) and
// moves their leadership and ISR membership away.

// offlineSet is the replicas of the failed dirs: by partition, the topic id
// they had. mu is a leaf.
type offlineSet struct {
	mu    sync.Mutex
	parts map[log.TopicPartition]cluster.TopicID
}

func (m *Manager) offlineSet() *offlineSet {
	s := &m.offline
	s.mu.Lock()
	if s.parts == nil {
		s.parts = map[log.TopicPartition]cluster.TopicID{}
	}
	s.mu.Unlock()
	return s
}

// DirFailed takes offline the partitions whose logs are in log dir i, which
// failed. It gives up their leadership here at once (a produce waiting for
// acknowledgement is answered with an error and retried by its client at
// the new leader) and stops their fetchers.
func (m *Manager) DirFailed(i int) []cluster.ReplicaRef {
	m.applyMu.Lock()
	defer m.applyMu.Unlock()
	d := m.dirs[i]
	set := m.offlineSet()
	var gone []*Partition
	m.mu.Lock()
	for tp, p := range m.parts {
		if l, ok := d.Log(tp); ok && l == p.Log {
			delete(m.parts, tp)
			gone = append(gone, p)
		}
	}
	m.mu.Unlock()
	set.mu.Lock()
	for _, p := range gone {
		set.parts[p.TP] = p.TopicID
	}
	set.mu.Unlock()
	for _, p := range gone {
		m.unfollow(p)
		p.stopLeading()
	}
	m.logger.Error("partitions offline: their log dir failed", "log_dir", d.Path(), "partitions", len(gone))
	return m.OfflineReplicas()
}

// Offline is whether the partition is hosted here in a failed log dir.
func (m *Manager) Offline(topic string, partition int32) bool {
	set := m.offlineSet()
	set.mu.Lock()
	defer set.mu.Unlock()
	_, ok := set.parts[log.TopicPartition{Topic: topic, Partition: partition}]
	return ok
}

// offlineTopic is whether tp of topic id is offline here: a later topic of
// the same name is not.
func (m *Manager) offlineTopic(tp log.TopicPartition, id cluster.TopicID) bool {
	set := m.offlineSet()
	set.mu.Lock()
	defer set.mu.Unlock()
	old, ok := set.parts[tp]
	return ok && old == id
}

// OfflineReplicas are the replicas in failed log dirs, for the controller.
func (m *Manager) OfflineReplicas() []cluster.ReplicaRef {
	set := m.offlineSet()
	set.mu.Lock()
	defer set.mu.Unlock()
	out := make([]cluster.ReplicaRef, 0, len(set.parts))
	for tp, id := range set.parts {
		out = append(out, cluster.ReplicaRef{TopicID: id, Partition: tp.Partition})
	}
	slices.SortFunc(out, func(a, b cluster.ReplicaRef) int {
		if c := slices.Compare(a.TopicID[:], b.TopicID[:]); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

// healthyDirs are the indexes of the log dirs that have not failed.
func (m *Manager) healthyDirs() []int {
	var out []int
	for i, d := range m.dirs {
		if d.Offline() == nil {
			out = append(out, i)
		}
	}
	return out
}
