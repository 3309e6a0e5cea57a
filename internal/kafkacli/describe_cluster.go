package kafkacli

import (
	"context"
	"sort"
)

// BrokerInfo is one broker as Metadata lists it, with what it leads.
type BrokerInfo struct {
	ID               int32
	Host             string
	Port             int32
	Rack             string
	Leads, Replicas  int // partitions it leads, and holds a replica of
	OfflineReplicaOf int // partitions whose replica here is offline
}

// ClusterInfo is the cluster as one Metadata answer describes it.
type ClusterInfo struct {
	ID           string
	ControllerID int32
	Brokers      []BrokerInfo // sorted by id
	Topics       int
	Partitions   int
	Offline      int // partitions without a leader
	// UnderReplicated are the partitions whose ISR is smaller than their
	// replica set; NotPreferred those led by another than their first
	// replica (what elect-leaders would move).
	UnderReplicated, NotPreferred int
}

// Describe summarises the cluster: its brokers, the active controller, and
// how the partitions' leadership is spread.
func (c *Cluster) Describe(ctx context.Context) (*ClusterInfo, error) {
	md, err := c.metadata(ctx)
	if err != nil {
		return nil, err
	}
	info := &ClusterInfo{ID: md.ClusterID, ControllerID: md.ControllerID, Topics: len(md.Topics)}
	byID := map[int32]*BrokerInfo{}
	for _, b := range md.Brokers {
		bi := BrokerInfo{ID: b.NodeID, Host: b.Host, Port: b.Port, Rack: b.Rack}
		info.Brokers = append(info.Brokers, bi)
	}
	sort.Slice(info.Brokers, func(i, j int) bool { return info.Brokers[i].ID < info.Brokers[j].ID })
	for i := range info.Brokers {
		byID[info.Brokers[i].ID] = &info.Brokers[i]
	}
	for _, t := range md.Topics {
		for _, p := range t.Partitions {
			info.Partitions++
			if p.LeaderID < 0 {
				info.Offline++
			} else if b, ok := byID[p.LeaderID]; ok {
				b.Leads++
			}
			if len(p.IsrNodes) < len(p.ReplicaNodes) {
				info.UnderReplicated++
			}
			if len(p.ReplicaNodes) > 0 && p.LeaderID >= 0 && p.LeaderID != p.ReplicaNodes[0] {
				info.NotPreferred++
			}
			for _, r := range p.ReplicaNodes {
				if b, ok := byID[r]; ok {
					b.Replicas++
				}
			}
			for _, r := range p.OfflineReplicas {
				if b, ok := byID[r]; ok {
					b.OfflineReplicaOf++
				}
			}
		}
	}
	return info, nil
}
