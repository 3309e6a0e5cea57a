package cluster

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sort"

	"github.com/hashicorp/raft"
)

// fsm applies the replicated metadata log to the controller's image. Raft
// calls it from one goroutine, in log order, on every voter.
type fsm struct{ c *Controller }

func (f fsm) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	var rs []Record
	if err := json.Unmarshal(l.Data, &rs); err != nil {
		return fmt.Errorf("cluster: metadata log entry %d: %w", l.Index, err)
	}
	return f.c.publish(rs, nil)
}

// Snapshot captures the image as the records that rebuild it, and its
// offset: the image a snapshot restores must have the offset of the one it
// was taken from, since broker epochs are offsets that every node compares.
func (f fsm) Snapshot() (raft.FSMSnapshot, error) {
	img := f.c.Image()
	return snapshot{Offset: img.Offset, Records: img.records()}, nil
}

// Restore replaces the image by a snapshot's.
func (f fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var s snapshot
	if err := json.NewDecoder(rc).Decode(&s); err != nil {
		return fmt.Errorf("cluster: metadata snapshot: %w", err)
	}
	base := emptyImage(f.c.Image().ClusterID)
	// Each record applied advances the offset by one.
	base.Offset = s.Offset - int64(len(s.Records))
	return f.c.publish(s.Records, base)
}

type snapshot struct {
	Offset  int64    `json:"offset"`
	Records []Record `json:"records"`
}

func (s snapshot) Persist(sink raft.SnapshotSink) error {
	if err := json.NewEncoder(sink).Encode(s); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (snapshot) Release() {}

// records are the metadata records that rebuild the image from empty.
func (img *Image) records() []Record {
	var rs []Record
	ids := make([]int32, 0, len(img.Brokers))
	for id := range img.Brokers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		b := img.Brokers[id]
		rs = append(rs, Record{RegisterBroker: &b})
	}
	for _, name := range img.TopicNames() {
		t := img.Topics[name]
		rs = append(rs, topicRecords(t)...)
	}
	if img.Secret != "" {
		rs = append(rs, Record{Secret: &SecretRecord{Value: img.Secret}})
	}
	if img.NextProducerID > 0 {
		rs = append(rs, Record{ProducerIDs: &ProducerIDsRecord{Next: img.NextProducerID}})
	}
	resources := make([]string, 0, len(img.BrokerConfigs))
	for r := range img.BrokerConfigs {
		resources = append(resources, r)
	}
	sort.Strings(resources)
	for _, r := range resources {
		names := make([]string, 0, len(img.BrokerConfigs[r]))
		for k := range img.BrokerConfigs[r] {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			v := img.BrokerConfigs[r][k]
			rs = append(rs, Record{BrokerConfig: &BrokerConfigRecord{Broker: r, Name: k, Value: &v}})
		}
	}
	rs = append(rs, img.scramRecords()...)
	rs = append(rs, img.clientQuotaRecords()...)
	rs = append(rs, img.aclRecords()...)
	rs = append(rs, img.featureRecords()...)
	rs = append(rs, img.groupConfigRecords()...)
	return rs
}

// resolveTCP checks a voter address.
func resolveTCP(addr string) (*net.TCPAddr, error) {
	a, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("cluster: controller address %q: %w", addr, err)
	}
	return a, nil
}
