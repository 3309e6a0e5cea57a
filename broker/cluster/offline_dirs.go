package cluster

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Offline log dirs (KIP-858's outcome, without its directory assignment).
//
// A broker whose log dir fails keeps running on its other dirs and reports
// the failure in every heartbeat: BrokerHeartbeat v1's OfflineLogDirs (the
// directory.id it registered) and, because the controller does not know
// which replicas live in which dir, the replicas that lived in the failed
// dirs (ReplicaRef, in a tagged field of the heartbeat; see broker/server).
// The controller records both in the broker's registration, in the same
// metadata change as the partitions it moves: it takes the broker's
// replicas that were in the failed dirs out of their ISR and ELR, and
// elects another leader from the rest of the ISR where the broker led, as
// fencing the broker would, but for those replicas only. The broker stays
// unfenced and keeps its other replicas.
//
// Kafka's KRaft (3.7+) instead records each replica's directory in the
// PartitionRecord (AssignReplicasToDirs), so that the heartbeat's dir ids
// alone say which replicas went offline. Reporting the replicas costs one
// list per failure and keeps the partition records as they are; the list is
// the broker's own, made from the logs it found in the dir.
//
// The registration keeps the report until the broker registers again,
// which it does when it restarts: with the dir repaired its replicas open
// from disk, follow their leaders and rejoin the ISR once caught up, like
// any follower. A heartbeat repeating a report already recorded changes
// nothing; one with more (a second dir failed) adds to it.

// ReplicaRef is one replica of a broker: a partition of a topic, by id.
type ReplicaRef struct {
	TopicID   TopicID `json:"topic_id"`
	Partition int32   `json:"partition"`
}

func compareRefs(a, b ReplicaRef) int {
	if c := slices.Compare(a.TopicID[:], b.TopicID[:]); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// ReportOfflineDirs records that broker id (in its registration of that
// epoch) lost the log dirs dirs, holding replicas, and moves those
// replicas out of their ISR and leadership.
func (c *Controller) ReportOfflineDirs(id int32, epoch int64, dirs []string, replicas []ReplicaRef) error {
	if len(dirs) == 0 && len(replicas) == 0 {
		return nil
	}
	if !c.IsActive() {
		return errNotController(c.activeID())
	}
	if err := c.CheckBrokerEpoch(id, epoch); err != nil {
		return err
	}
	return c.change(func(img *Image) ([]Record, error) {
		b, ok := img.Brokers[id]
		if !ok || b.Epoch != epoch {
			return nil, errorf(kerr.StaleBrokerEpoch, "broker %d: expected broker epoch %d, but got %d", id, b.Epoch, epoch)
		}
		nd := mergeSorted(b.OfflineLogDirs, dirs, func(a, b string) int { return cmp.Compare(a, b) })
		nr := mergeSorted(b.OfflineReplicas, replicas, compareRefs)
		if slices.Equal(nd, b.OfflineLogDirs) && slices.Equal(nr, b.OfflineReplicas) {
			return nil, nil
		}
		b.OfflineLogDirs, b.OfflineReplicas = nd, nr
		reg := Record{RegisterBroker: &b}
		next, err := img.Apply(reg)
		if err != nil {
			return nil, err
		}
		rs := append([]Record{reg}, c.offlineReplicaRecords(next, id, nr)...)
		c.logger.Warn("broker reported failed log dirs: moving the replicas in them out of the ISR and their leadership elsewhere",
			"node_id", id, "offline_log_dirs", nd, "offline_replicas", len(nr), "partitions_changed", len(rs)-1)
		return rs, nil
	})
}

// mergeSorted is the sorted union of a and b, without duplicates.
func mergeSorted[T comparable](a, b []T, compare func(T, T) int) []T {
	out := append(slices.Clone(a), b...)
	slices.SortFunc(out, compare)
	return slices.Compact(out)
}

// offlineReplicaRecords take broker id's replicas in offline out of their
// ISR and ELR, electing another leader where id led: fenceRecords for
// those replicas only.
func (c *Controller) offlineReplicaRecords(img *Image, id int32, offline []ReplicaRef) []Record {
	return partitionRecords(img, func(t *Topic, p Partition) Partition {
		if _, found := slices.BinarySearchFunc(offline, ReplicaRef{t.ID, p.Index}, compareRefs); !found {
			return p
		}
		if p.Leader != id && !slices.Contains(p.ISR, id) && !slices.Contains(p.ELR, id) {
			return p
		}
		isr := slices.DeleteFunc(slices.Clone(p.ISR), func(r int32) bool { return r == id })
		leader := p.Leader
		if leader == id || leader < 0 {
			leader = electFrom(img, p, isr)
		}
		np, _ := c.transition(t, p, leader, isr)
		// Its log is unreachable: it holds nothing a leader could use.
		elr := slices.DeleteFunc(slices.Clone(np.ELR), func(r int32) bool { return r == id })
		if len(elr) != len(np.ELR) {
			np.ELR = elr
			if np.PartitionEpoch == p.PartitionEpoch {
				np.PartitionEpoch++
			}
		}
		if np.Leader < 0 {
			np = c.electOffline(img, t, np, false)
		}
		return np
	})
}
