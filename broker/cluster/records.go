package cluster

import (
	"fmt"
	"maps"
	"slices"
)

// Record is one metadata change, the unit of the metadata log. Exactly one
// field is set. The JSON form is what the metadata log stores (see
// metalog.go); a field added later must default to the old behaviour.
type Record struct {
	RegisterBroker *Broker `json:"register_broker,omitempty"`
	// UnregisterBroker removes a broker (by id) from the metadata.
	UnregisterBroker *int32             `json:"unregister_broker,omitempty"`
	Topic            *TopicRecord       `json:"topic,omitempty"`
	Partition        *PartitionRecord   `json:"partition,omitempty"`
	Config           *ConfigRecord      `json:"config,omitempty"`
	RemoveTopic      *RemoveTopicRecord `json:"remove_topic,omitempty"`
	ProducerIDs      *ProducerIDsRecord `json:"producer_ids,omitempty"`
	Secret           *SecretRecord      `json:"secret,omitempty"`
	// BrokerConfig sets or removes a dynamic broker config (KIP-226).
	BrokerConfig *BrokerConfigRecord `json:"broker_config,omitempty"`
	// Scram is a SCRAM credential (scram.go).
	Scram *ScramRecord `json:"scram,omitempty"`
	// ScramBootstrap marks the bootstrap SCRAM users (--add-scram) as
	// applied, so that they are never applied again (scram.go).
	ScramBootstrap *ScramBootstrapRecord `json:"scram_bootstrap,omitempty"`
	// ClientQuota sets or removes a client quota (quotas.go).
	ClientQuota *ClientQuotaRecord `json:"client_quota,omitempty"`
	// Acl adds or removes an ACL binding (acls.go).
	Acl *AclRecord `json:"acl,omitempty"`
	// FeatureLevel finalizes a feature's level (features.go).
	FeatureLevel *FeatureLevelRecord `json:"feature_level,omitempty"`
	// GroupConfig sets or removes a group config (group_configs.go).
	GroupConfig *GroupConfigRecord `json:"group_config,omitempty"`
}

// BrokerConfigRecord sets (Value non-nil) or removes one dynamic broker
// config of Broker: a node id, or "" for the cluster-wide default, as
// Kafka's BROKER config resource names them.
type BrokerConfigRecord struct {
	Broker string  `json:"broker"`
	Name   string  `json:"name"`
	Value  *string `json:"value"`
}

// TopicRecord creates a topic with no partitions; PartitionRecords follow.
type TopicRecord struct {
	Name string  `json:"name"`
	ID   TopicID `json:"id"`
}

// PartitionRecord creates or replaces one partition's state.
type PartitionRecord struct {
	TopicID TopicID `json:"topic_id"`
	Partition
}

// ConfigRecord sets (Value non-nil) or removes a topic override.
type ConfigRecord struct {
	Topic string  `json:"topic"`
	Name  string  `json:"name"`
	Value *string `json:"value"`
}

// RemoveTopicRecord deletes a topic.
type RemoveTopicRecord struct {
	ID TopicID `json:"id"`
}

// applyAll returns the image after rs.
func (img *Image) applyAll(rs []Record) (*Image, error) {
	next := img
	for i := 0; i < len(rs); {
		if rs[i].GroupConfig != nil {
			// A run of group configs (a snapshot holds them together)
			// copies the image and its group map once, not per record:
			// replay stays linear in the number of groups (review M5).
			n := next.clone()
			n.GroupConfigs = maps.Clone(n.GroupConfigs)
			for ; i < len(rs) && rs[i].GroupConfig != nil; i++ {
				n.setGroupConfig(rs[i].GroupConfig)
				n.Offset++
			}
			next = n
			continue
		}
		var err error
		if next, err = next.Apply(rs[i]); err != nil {
			return nil, err
		}
		i++
	}
	return next, nil
}

// Apply returns the image after r. It never modifies img.
func (img *Image) Apply(r Record) (*Image, error) {
	n := img.clone()
	switch {
	case r.RegisterBroker != nil:
		b := *r.RegisterBroker
		b.Listeners, b.LogDirs = slices.Clone(b.Listeners), slices.Clone(b.LogDirs)
		b.OfflineLogDirs, b.OfflineReplicas = slices.Clone(b.OfflineLogDirs), slices.Clone(b.OfflineReplicas)
		n.Brokers[b.ID] = b
	case r.UnregisterBroker != nil:
		if _, ok := n.Brokers[*r.UnregisterBroker]; !ok {
			return nil, fmt.Errorf("cluster: unregistering unknown broker %d", *r.UnregisterBroker)
		}
		delete(n.Brokers, *r.UnregisterBroker)
	case r.Topic != nil:
		if _, exists := n.Topics[r.Topic.Name]; exists {
			return nil, fmt.Errorf("cluster: topic %s already exists", r.Topic.Name)
		}
		t := &Topic{Name: r.Topic.Name, ID: r.Topic.ID, Configs: map[string]string{}}
		n.Topics[t.Name], n.ByID[t.ID] = t, t
	case r.Partition != nil:
		old, ok := n.ByID[r.Partition.TopicID]
		if !ok {
			return nil, fmt.Errorf("cluster: partition of unknown topic id %s", r.Partition.TopicID)
		}
		t := old.copy()
		p := r.Partition.Partition
		p.Replicas, p.ISR, p.ELR = slices.Clone(p.Replicas), slices.Clone(p.ISR), slices.Clone(p.ELR)
		p.Adding, p.Removing = slices.Clone(p.Adding), slices.Clone(p.Removing)
		switch i := int(p.Index); {
		case i < len(t.Partitions):
			t.Partitions[i] = p
		case i == len(t.Partitions):
			t.Partitions = append(t.Partitions, p)
		default:
			return nil, fmt.Errorf("cluster: partition %d of %s would leave a gap after %d", i, t.Name, len(t.Partitions))
		}
		n.Topics[t.Name], n.ByID[t.ID] = t, t
	case r.Config != nil:
		old, ok := n.Topics[r.Config.Topic]
		if !ok {
			return nil, fmt.Errorf("cluster: config of unknown topic %s", r.Config.Topic)
		}
		t := old.copy()
		if r.Config.Value == nil {
			delete(t.Configs, r.Config.Name)
		} else {
			t.Configs[r.Config.Name] = *r.Config.Value
		}
		n.Topics[t.Name], n.ByID[t.ID] = t, t
	case r.RemoveTopic != nil:
		t, ok := n.ByID[r.RemoveTopic.ID]
		if !ok {
			return nil, fmt.Errorf("cluster: removing unknown topic id %s", r.RemoveTopic.ID)
		}
		delete(n.Topics, t.Name)
		delete(n.ByID, t.ID)
	case r.ProducerIDs != nil:
		if r.ProducerIDs.Next <= n.NextProducerID {
			return nil, fmt.Errorf("cluster: producer id block ending at %d does not advance past %d", r.ProducerIDs.Next, n.NextProducerID)
		}
		n.NextProducerID = r.ProducerIDs.Next
	case r.Secret != nil:
		n.Secret = r.Secret.Value
	case r.BrokerConfig != nil:
		// Copied on write: the published image's maps stay as they are.
		bc := r.BrokerConfig
		n.BrokerConfigs = maps.Clone(n.BrokerConfigs)
		if n.BrokerConfigs == nil {
			n.BrokerConfigs = map[string]map[string]string{}
		}
		m := maps.Clone(n.BrokerConfigs[bc.Broker])
		if m == nil {
			m = map[string]string{}
		}
		if bc.Value == nil {
			delete(m, bc.Name)
		} else {
			m[bc.Name] = *bc.Value
		}
		if len(m) == 0 {
			delete(n.BrokerConfigs, bc.Broker)
		} else {
			n.BrokerConfigs[bc.Broker] = m
		}
	case r.GroupConfig != nil:
		n.applyGroupConfig(r.GroupConfig)
	case r.Scram != nil:
		if err := n.applyScram(r.Scram); err != nil {
			return nil, err
		}
	case r.ScramBootstrap != nil:
		n.ScramBootstrapped = true
	case r.ClientQuota != nil:
		n.applyClientQuota(r.ClientQuota)
	case r.Acl != nil:
		n.applyAcl(r.Acl)
	case r.FeatureLevel != nil:
		n.applyFeatureLevel(r.FeatureLevel)
	default:
		return nil, fmt.Errorf("cluster: empty metadata record")
	}
	n.Offset++
	return n, nil
}

func (t *Topic) copy() *Topic {
	c := *t
	c.Partitions = slices.Clone(t.Partitions)
	c.Configs = maps.Clone(t.Configs)
	return &c
}

// ProducerIDsRecord reserves producer ids below Next.
type ProducerIDsRecord struct {
	Next int64 `json:"next"`
}

// SecretRecord sets the cluster's inter-broker secret (see Image.Secret).
type SecretRecord struct {
	Value string `json:"value"`
}
