package kafkacli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/protocol/metadata"
)

// DefaultBootstrap is where the commands look for a cluster unless told.
const DefaultBootstrap = "localhost:9092"

// ClientID is the client.id every connection sends: brokers log it, and
// quotas and metrics are keyed by it.
const ClientID = "tributary"

// ErrUnknownTopic is wrapped by every "topic does not exist" error.
var ErrUnknownTopic = errors.New("does not exist")

// Cluster is a connection to a Kafka cluster: a kafka-go Transport (pooled
// connections, one per broker, and a cached copy of the cluster metadata
// taken when it connects) and a Client for the admin requests.
type Cluster struct {
	// Brokers are the bootstrap addresses, host:port.
	Brokers   []string
	Transport *kafka.Transport
	Client    *kafka.Client
}

// ParseBootstrap splits a comma-separated list of host[:port] into
// host:port addresses; the port defaults to Kafka's 9092.
func ParseBootstrap(s string) ([]string, error) {
	var out []string
	for _, a := range strings.Split(s, ",") {
		a = strings.TrimSpace(a)
		if a == "" {
			continue
		}
		host, port, err := net.SplitHostPort(a)
		if err != nil {
			if strings.Contains(err.Error(), "missing port") {
				host, port = strings.Trim(a, "[]"), "9092"
			} else {
				return nil, fmt.Errorf("--bootstrap %q: %q is not host:port", s, a)
			}
		}
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			return nil, fmt.Errorf("--bootstrap %q: bad port %q in %q", s, port, a)
		}
		if host == "" {
			return nil, fmt.Errorf("--bootstrap %q: no host in %q", s, a)
		}
		out = append(out, net.JoinHostPort(host, port))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--bootstrap %q: no broker address", s)
	}
	return out, nil
}

// Connect opens a connection to the cluster at bootstrap (a comma-separated
// list of host:port) and fetches its metadata, so that an unreachable
// cluster is reported here, naming the addresses tried.
func Connect(ctx context.Context, bootstrap string) (*Cluster, error) {
	brokers, err := ParseBootstrap(bootstrap)
	if err != nil {
		return nil, err
	}
	tr := &kafka.Transport{
		ClientID:    ClientID,
		DialTimeout: 10 * time.Second,
	}
	if err := SecureTransport(tr); err != nil {
		return nil, err
	}
	c := &Cluster{
		Brokers:   brokers,
		Transport: tr,
		Client:    &kafka.Client{Addr: kafka.TCP(brokers...), Transport: tr, Timeout: 30 * time.Second},
	}
	if _, err := c.metadata(ctx); err != nil {
		c.Close()
		return nil, fmt.Errorf("cannot reach a broker at %s: %w", strings.Join(brokers, ","), unwrapClient(err))
	}
	return c, nil
}

// Close closes the connections.
func (c *Cluster) Close() { c.Transport.CloseIdleConnections() }

// unwrapClient drops kafka-go's "kafka.(*Client).Method: " prefix, which
// says nothing to the user of a command.
func unwrapClient(err error) error {
	if err == nil {
		return nil
	}
	if strings.HasPrefix(err.Error(), "kafka.(*Client).") {
		if inner := errors.Unwrap(err); inner != nil {
			return inner
		}
	}
	return err
}

// metadata is the cluster's metadata as kafka-go's Transport last saw it
// (it is fetched when the Transport connects, then every few seconds).
// The raw response keeps what kafka.Client.Metadata drops: leader -1 when
// there is no leader, leader epochs and offline replicas.
func (c *Cluster) metadata(ctx context.Context) (*metadata.Response, error) {
	r, err := c.Transport.RoundTrip(ctx, c.Client.Addr, &metadata.Request{})
	if err != nil {
		return nil, err
	}
	return r.(*metadata.Response), nil
}

// TopicInfo is what Metadata says about a topic.
type TopicInfo struct {
	Name       string
	ID         [16]byte // zero unless filled by TopicIDs
	Internal   bool
	Partitions []PartitionInfo // by index
	Err        error           // the topic's error code, if any
}

// PartitionInfo is one partition of a topic.
type PartitionInfo struct {
	Index           int
	Leader          int32 // -1: no leader
	LeaderEpoch     int32 // -1: not reported (Metadata < v7)
	Replicas, ISR   []int32
	OfflineReplicas []int32
	Err             error
}

// ReplicationFactor is the number of replicas of the first partition.
func (t *TopicInfo) ReplicationFactor() int {
	if len(t.Partitions) == 0 {
		return 0
	}
	return len(t.Partitions[0].Replicas)
}

// Topics lists every topic in the cluster, sorted by name.
func (c *Cluster) Topics(ctx context.Context) ([]TopicInfo, error) {
	md, err := c.metadata(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]TopicInfo, 0, len(md.Topics))
	for _, t := range md.Topics {
		ti := TopicInfo{Name: t.Name, Internal: t.IsInternal}
		if t.ErrorCode != 0 {
			ti.Err = kafka.Error(t.ErrorCode)
		}
		for _, p := range t.Partitions {
			pi := PartitionInfo{
				Index:           int(p.PartitionIndex),
				Leader:          p.LeaderID,
				LeaderEpoch:     p.LeaderEpoch,
				Replicas:        p.ReplicaNodes,
				ISR:             p.IsrNodes,
				OfflineReplicas: p.OfflineReplicas,
			}
			if p.ErrorCode != 0 {
				pi.Err = kafka.Error(p.ErrorCode)
			}
			ti.Partitions = append(ti.Partitions, pi)
		}
		sort.Slice(ti.Partitions, func(i, j int) bool { return ti.Partitions[i].Index < ti.Partitions[j].Index })
		out = append(out, ti)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Topic looks one topic up; an error wrapping ErrUnknownTopic names it if
// the cluster has no such topic.
func (c *Cluster) Topic(ctx context.Context, name string) (*TopicInfo, error) {
	all, err := c.Topics(ctx)
	if err != nil {
		return nil, err
	}
	for i := range all {
		if all[i].Name == name {
			return &all[i], nil
		}
	}
	return nil, fmt.Errorf("topic %q %w (tributary topic list shows the topics)", name, ErrUnknownTopic)
}

// CheckPartition says whether p is a partition of t, naming both if not.
func (t *TopicInfo) CheckPartition(p int) error {
	n := len(t.Partitions)
	if p >= 0 && p < n {
		return nil
	}
	if n == 1 {
		return fmt.Errorf("--partition %d: topic %q has 1 partition, 0", p, t.Name)
	}
	return fmt.Errorf("--partition %d: topic %q has %d partitions, 0 to %d", p, t.Name, n, n-1)
}

// PartitionIndexes is 0..n-1 for a topic of n partitions.
func (t *TopicInfo) PartitionIndexes() []int {
	out := make([]int, len(t.Partitions))
	for i := range out {
		out[i] = t.Partitions[i].Index
	}
	return out
}

// OffsetRange is a partition's log start offset and high watermark.
type OffsetRange struct {
	Start, End int64
	Err        error
}

// Offsets lists the log start offset and high watermark of partitions of a
// topic (ListOffsets to each leader).
func (c *Cluster) Offsets(ctx context.Context, topic string, partitions []int) (map[int]OffsetRange, error) {
	return c.offsets(ctx, topic, partitions, kafka.ReadUncommitted)
}

// StableOffsets is Offsets whose ends are the last stable offsets
// (read_committed): below them every transaction is decided.
func (c *Cluster) StableOffsets(ctx context.Context, topic string, partitions []int) (map[int]OffsetRange, error) {
	return c.offsets(ctx, topic, partitions, kafka.ReadCommitted)
}

func (c *Cluster) offsets(ctx context.Context, topic string, partitions []int, iso kafka.IsolationLevel) (map[int]OffsetRange, error) {
	reqs := make([]kafka.OffsetRequest, 0, 2*len(partitions))
	for _, p := range partitions {
		reqs = append(reqs, kafka.FirstOffsetOf(p), kafka.LastOffsetOf(p))
	}
	resp, err := c.Client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}, IsolationLevel: iso})
	if err != nil {
		return nil, fmt.Errorf("listing offsets of %q: %w", topic, unwrapClient(err))
	}
	out := make(map[int]OffsetRange, len(partitions))
	for _, po := range resp.Topics[topic] {
		out[po.Partition] = OffsetRange{Start: po.FirstOffset, End: po.LastOffset, Err: po.Error}
	}
	for _, p := range partitions {
		if _, ok := out[p]; !ok {
			out[p] = OffsetRange{Start: -1, End: -1, Err: fmt.Errorf("no answer for partition %d", p)}
		}
	}
	return out, nil
}

// OffsetsForTime is, for each partition, the first offset whose timestamp
// is at or after t, or -1 when no record is that recent.
func (c *Cluster) OffsetsForTime(ctx context.Context, topic string, partitions []int, t time.Time) (map[int]int64, error) {
	reqs := make([]kafka.OffsetRequest, 0, len(partitions))
	for _, p := range partitions {
		reqs = append(reqs, kafka.OffsetRequest{Partition: p, Timestamp: t.UnixMilli()})
	}
	resp, err := c.Client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, fmt.Errorf("listing offsets of %q at %s: %w", topic, t.Format(time.RFC3339Nano), unwrapClient(err))
	}
	out := make(map[int]int64, len(partitions))
	for _, po := range resp.Topics[topic] {
		if po.Error != nil {
			return nil, fmt.Errorf("offset of %q partition %d at %s: %w", topic, po.Partition, t.Format(time.RFC3339Nano), po.Error)
		}
		out[po.Partition] = -1
		for off := range po.Offsets {
			out[po.Partition] = off
		}
	}
	return out, nil
}
