package cluster

import (
	"github.com/tributary-io/tributary/broker/acl"

	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"sort"
	"strconv"
	"strings"

	"github.com/tributary-io/tributary/broker/auth"
	"github.com/tributary-io/tributary/broker/config"
	"github.com/tributary-io/tributary/broker/quota"
)

// TopicID is a topic's UUID, as Kafka's Metadata and Fetch v13+ carry it.
type TopicID [16]byte

// NewTopicID returns a random version-4 UUID that is not the zero or
// sentinel id Kafka reserves and, like Kafka's Uuid.randomUuid, whose string
// does not start with '-', which command-line parsers take for a flag.
func NewTopicID() TopicID {
	for {
		var id TopicID
		rand.Read(id[:])
		id[6] = id[6]&0x0f | 0x40
		id[8] = id[8]&0x3f | 0x80
		if id != (TopicID{}) && id != (TopicID{15: 1}) && id.String()[0] != '-' {
			return id
		}
	}
}

// String is the URL-safe base64 form Kafka's tools print.
func (id TopicID) String() string { return base64.RawURLEncoding.EncodeToString(id[:]) }

// Hex is the dashed hex form, for logs.
func (id TopicID) Hex() string {
	h := hex.EncodeToString(id[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// Broker is a registered broker.
type Broker struct {
	ID        int32
	Rack      string
	Listeners []config.Listener // advertised
	Fenced    bool
	// Epoch is the broker epoch (KIP-380): the metadata offset of the
	// registration that started this incarnation. Heartbeats and
	// AlterPartition carry it; another is STALE_BROKER_EPOCH.
	Epoch int64 `json:",omitempty"`
	// Incarnation is the random id the broker process chose at its start,
	// and LogDirs the directory.id of its log dirs: together they tell a
	// restart of this node from a second node with its node.id (see
	// Register).
	Incarnation string   `json:",omitempty"`
	LogDirs     []string `json:",omitempty"`
	// OfflineLogDirs are the directory.id of its log dirs that failed, and
	// OfflineReplicas the replicas that lived in them, as its heartbeats
	// reported them (see offline_dirs.go). A new registration clears them.
	OfflineLogDirs  []string     `json:",omitempty"`
	OfflineReplicas []ReplicaRef `json:",omitempty"`
}

// Partition is one partition's replica assignment and leadership.
type Partition struct {
	Index          int32
	Leader         int32
	LeaderEpoch    int32
	PartitionEpoch int32
	Replicas       []int32
	ISR            []int32
	// ELR are the eligible leader replicas (KIP-966): out of the ISR, but
	// holding every committed record; see leadership.go.
	ELR []int32 `json:",omitempty"`
	// A reassignment in progress (KAFKA-1074): Replicas is the target
	// followed by the replicas being removed; Adding are the target's new
	// replicas, catching up; when they are all in the ISR the controller
	// drops Removing.
	Adding   []int32 `json:",omitempty"`
	Removing []int32 `json:",omitempty"`
}

// OfflineReplicas are p's replicas on brokers that are fenced or gone.
func (img *Image) OfflineReplicas(p Partition) []int32 {
	out := []int32{}
	for _, r := range p.Replicas {
		if b, ok := img.Brokers[r]; !ok || b.Fenced {
			out = append(out, r)
		}
	}
	return out
}

// Reassigning is whether a reassignment of the partition is in progress.
func (p Partition) Reassigning() bool { return len(p.Adding) > 0 || len(p.Removing) > 0 }

// Topic is a topic and its partitions.
type Topic struct {
	Name       string
	ID         TopicID
	Partitions []Partition
	// Configs are the topic's overrides only; broker defaults fill the rest.
	Configs map[string]string
}

// Internal reports whether the topic is one the brokers own
// (__consumer_offsets, __transaction_state).
func (t *Topic) Internal() bool { return strings.HasPrefix(t.Name, "__") }

// Image is the cluster metadata at one point of the metadata log.
type Image struct {
	ClusterID    string
	ControllerID int32
	Offset       int64 // of the last record applied
	Brokers      map[int32]Broker
	Topics       map[string]*Topic
	ByID         map[TopicID]*Topic
	// NextProducerID is the first producer id not yet handed out.
	NextProducerID int64
	// Secret proves that a request comes from a broker of this cluster:
	// replica fetches carry it (see broker/replica), clients never see it.
	// The first active controller makes it.
	Secret string
	// BrokerConfigs are the dynamic broker configs (KIP-226), by broker
	// resource name: a node id, or "" for the cluster-wide defaults.
	// Never modified in place: a change replaces the maps it touches.
	BrokerConfigs map[string]map[string]string `json:",omitempty"`
	// Scram are the SCRAM credentials, by user and mechanism (scram.go);
	// shared between images, copied when changed.
	Scram map[string]map[string]auth.ScramCredential
	// ScramBootstrapped is set once the bootstrap SCRAM users have been
	// applied: a user deleted afterwards stays deleted across restarts.
	ScramBootstrapped bool `json:",omitempty"`
	// ClientQuotas are the client quotas (quotas.go); immutable, replaced
	// on change.
	ClientQuotas *quota.Table `json:"-"`
	// Acls are the ACL bindings (acls.go); immutable, replaced on change.
	Acls *acl.Set `json:"-"`
	// Features are the finalized feature levels set by records (a feature
	// not here is at its default, features.go); replaced on change.
	Features map[string]int16 `json:",omitempty"`
	// GroupConfigs are the group configs (KIP-848, KIP-932) by group id
	// (group_configs.go); never modified in place.
	GroupConfigs map[string]map[string]string `json:",omitempty"`
}

// DynamicConfigs are the cluster-wide and the per-broker dynamic configs
// of broker id.
func (img *Image) DynamicConfigs(id int32) (clusterDefault, perBroker map[string]string) {
	return img.BrokerConfigs[""], img.BrokerConfigs[strconv.Itoa(int(id))]
}

func emptyImage(clusterID string) *Image {
	return &Image{ClusterID: clusterID, ControllerID: -1, Offset: -1,
		Brokers: map[int32]Broker{}, Topics: map[string]*Topic{}, ByID: map[TopicID]*Topic{}}
}

// TopicNames is every topic name, sorted.
func (img *Image) TopicNames() []string {
	names := make([]string, 0, len(img.Topics))
	for n := range img.Topics {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LiveBrokers is every unfenced broker, by id.
func (img *Image) LiveBrokers() []Broker {
	out := make([]Broker, 0, len(img.Brokers))
	for _, b := range img.Brokers {
		if !b.Fenced {
			out = append(out, b)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// clone copies the maps so a change can be applied without touching the
// published image. Topics are copied on write by the apply functions.
func (img *Image) clone() *Image {
	n := *img
	n.Brokers = make(map[int32]Broker, len(img.Brokers))
	for k, v := range img.Brokers {
		n.Brokers[k] = v
	}
	n.Topics = make(map[string]*Topic, len(img.Topics))
	for k, v := range img.Topics {
		n.Topics[k] = v
	}
	n.ByID = make(map[TopicID]*Topic, len(img.ByID))
	for k, v := range img.ByID {
		n.ByID[k] = v
	}
	return &n
}

// MarshalText is the base64 form, so the metadata log stays readable.
func (id TopicID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText reads the base64 form.
func (id *TopicID) UnmarshalText(b []byte) error {
	n, err := base64.RawURLEncoding.Decode(id[:], b)
	if err == nil && n != len(id) {
		err = errors.New("cluster: topic id is not 16 bytes")
	}
	return err
}

// EmptyImage is the metadata before any record.
func EmptyImage(clusterID string) *Image { return emptyImage(clusterID) }
