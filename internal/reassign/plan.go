// Package reassign is Kafka's partition reassignment plan: the JSON file
// kafka-reassign-partitions.sh reads and writes, checked as Kafka checks
// it, a deterministic proposal over a set of brokers, and each partition's
// progress against its plan entry. `tributary cluster reassign` is its
// command line; the functions are pure (the cluster's state comes in as
// kadm values), so they are safe to call concurrently.
package reassign

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/tributary-io/tributary/internal/kafkacli"
)

// The plan format, so that a plan made by either tool runs with the other:
//
//	{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2,3]}]}
//
// The first replica is the preferred leader. Kafka's optional "log_dirs"
// (one per replica) is accepted when every entry is "any": moving replicas
// between the log dirs of one broker is not supported. Version is the only
// version of the format Kafka has defined; a reader refuses any other.
const Version = 1

type plan struct {
	Version    int         `json:"version"`
	Partitions []Partition `json:"partitions"`
}

// Partition is one entry of a plan: where a partition's replicas go.
type Partition struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Replicas  []int32 `json:"replicas"`
}

// JSON is the plan as one line of JSON, partitions sorted, as Kafka
// prints it: easy to copy from a terminal into a file.
func JSON(parts []Partition) string {
	parts = slices.Clone(parts)
	Sort(parts)
	b, _ := json.Marshal(plan{Version: Version, Partitions: parts}) // cannot fail: plain types
	return string(b)
}

// Sort orders partitions by topic, then partition.
func Sort(parts []Partition) {
	sort.Slice(parts, func(i, j int) bool {
		a, b := parts[i], parts[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
}

// Parse reads a plan and checks it: version 1, at least one partition,
// each named once, with distinct non-negative replica ids. Errors start
// with name (the file's) and name the entry. Unknown fields are errors, so
// that a typo such as "replica" is not read as an empty list.
func Parse(name string, data []byte) ([]Partition, error) {
	var raw struct {
		Version    *int `json:"version"`
		Partitions []struct {
			Topic     *string  `json:"topic"`
			Partition *int32   `json:"partition"`
			Replicas  []int32  `json:"replicas"`
			LogDirs   []string `json:"log_dirs"`
		} `json:"partitions"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s: not a reassignment plan: %w", name, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: more than one JSON value", name)
	}
	switch {
	case raw.Version == nil:
		return nil, fmt.Errorf(`%s: no "version" (want %d)`, name, Version)
	case *raw.Version != Version:
		return nil, fmt.Errorf("%s: version %d: only version %d is known", name, *raw.Version, Version)
	case len(raw.Partitions) == 0:
		return nil, fmt.Errorf(`%s: "partitions" is empty`, name)
	}
	type key struct {
		topic string
		p     int32
	}
	seen := map[key]int{}
	out := make([]Partition, 0, len(raw.Partitions))
	for i, rp := range raw.Partitions {
		where := fmt.Sprintf("%s: partitions[%d]", name, i)
		if rp.Topic == nil || *rp.Topic == "" {
			return nil, fmt.Errorf(`%s: no "topic"`, where)
		}
		if rp.Partition == nil {
			return nil, fmt.Errorf(`%s (topic %q): no "partition"`, where, *rp.Topic)
		}
		p := Partition{Topic: *rp.Topic, Partition: *rp.Partition, Replicas: rp.Replicas}
		where = fmt.Sprintf("%s (%s/%d)", where, p.Topic, p.Partition)
		if p.Partition < 0 {
			return nil, fmt.Errorf("%s: partition %d: must be >= 0", where, p.Partition)
		}
		if j, dup := seen[key{p.Topic, p.Partition}]; dup {
			return nil, fmt.Errorf("%s: the same partition as partitions[%d]", where, j)
		}
		seen[key{p.Topic, p.Partition}] = i
		if len(p.Replicas) == 0 {
			return nil, fmt.Errorf(`%s: "replicas" is empty`, where)
		}
		ids := map[int32]bool{}
		for _, r := range p.Replicas {
			if r < 0 {
				return nil, fmt.Errorf("%s: replica %d: a broker id is >= 0", where, r)
			}
			if ids[r] {
				return nil, fmt.Errorf("%s: replica %d listed twice", where, r)
			}
			ids[r] = true
		}
		if rp.LogDirs != nil {
			if len(rp.LogDirs) != len(p.Replicas) {
				return nil, fmt.Errorf(`%s: %d "log_dirs" for %d replicas`, where, len(rp.LogDirs), len(p.Replicas))
			}
			for _, d := range rp.LogDirs {
				if d != "any" {
					return nil, fmt.Errorf(`%s: log dir %q: only "any" is supported (no moves between the log dirs of a broker)`, where, d)
				}
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// Propose places each partition's replicas round-robin over brokers,
// keeping each partition's replication factor. Partitions are taken in
// topic, partition order and the count runs on across topics, so the k-th
// partition's replicas are brokers k, k+1, ... (mod their number): leaders
// (the first replicas) spread evenly over the brokers, and so do the
// followers. Unlike Kafka's generator it starts at a fixed broker, so the
// same input always gives the same plan. current is not changed.
func Propose(current []Partition, brokers []int32) ([]Partition, error) {
	if len(brokers) == 0 {
		return nil, errors.New("no broker to place replicas on")
	}
	current = slices.Clone(current)
	Sort(current)
	out := make([]Partition, len(current))
	for k, p := range current {
		rf := len(p.Replicas)
		if rf > len(brokers) {
			return nil, fmt.Errorf("%s/%d has %d replicas but only %d brokers are given (%s)", p.Topic, p.Partition, rf, len(brokers), JoinIDs(brokers))
		}
		replicas := make([]int32, rf)
		for j := range replicas {
			replicas[j] = brokers[(k+j)%len(brokers)]
		}
		out[k] = Partition{Topic: p.Topic, Partition: p.Partition, Replicas: replicas}
	}
	return out, nil
}

// Current is the replica lists of topics' partitions as the metadata says;
// a topic that does not exist is an error naming it.
func Current(md kadm.Metadata, topics []string) ([]Partition, error) {
	var out []Partition
	for _, t := range topics {
		td, ok := md.Topics[t]
		if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			return nil, fmt.Errorf("topic %q %w", t, kafkacli.ErrUnknownTopic)
		}
		if td.Err != nil {
			return nil, fmt.Errorf("topic %q: %w", t, td.Err)
		}
		for _, pd := range td.Partitions.Sorted() {
			out = append(out, Partition{Topic: t, Partition: pd.Partition, Replicas: pd.Replicas})
		}
	}
	return out, nil
}

// Check refuses a plan that names a partition or a broker the cluster does
// not have, before anything is sent: the controller would refuse it too,
// but with less of a clue which entry was wrong.
func Check(md kadm.Metadata, plan []Partition) error {
	alive := md.Brokers.NodeIDs()
	for _, p := range plan {
		td, ok := md.Topics[p.Topic]
		if !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition) {
			return fmt.Errorf("topic %q %w", p.Topic, kafkacli.ErrUnknownTopic)
		}
		if _, ok := td.Partitions[p.Partition]; !ok {
			return fmt.Errorf("%s/%d: topic %q has %d partitions", p.Topic, p.Partition, p.Topic, len(td.Partitions))
		}
		for _, r := range p.Replicas {
			if !slices.Contains(alive, r) {
				return fmt.Errorf("%s/%d: broker %d is not in the cluster (brokers: %s)", p.Topic, p.Partition, r, JoinIDs(alive))
			}
		}
	}
	return nil
}

// Topics are the topics a plan names, in the order it first names them.
func Topics(plan []Partition) []string {
	var ts []string
	for _, p := range plan {
		if !slices.Contains(ts, p.Topic) {
			ts = append(ts, p.Topic)
		}
	}
	return ts
}

// Status is one partition's state against its plan entry: cur is its
// replicas now (nil when the metadata has no such partition), ongoing its
// running reassignment if the controller lists one. done is whether the
// partition has reached the plan.
func Status(want Partition, cur []int32, ongoing *kadm.ListPartitionReassignmentsResponse) (status string, done bool) {
	switch {
	case ongoing != nil:
		s := "in progress"
		if len(ongoing.AddingReplicas) > 0 || len(ongoing.RemovingReplicas) > 0 {
			s += fmt.Sprintf(" (adding %s; removing %s)", JoinIDs(ongoing.AddingReplicas), JoinIDs(ongoing.RemovingReplicas))
		}
		return s, false
	case cur == nil:
		return "missing: the cluster has no such partition", false
	case slices.Equal(cur, want.Replicas):
		return "complete", true
	default:
		return fmt.Sprintf("differs: replicas are %s, the plan says %s", JoinIDs(cur), JoinIDs(want.Replicas)), false
	}
}

// JoinIDs is broker ids as "1,2,3", or "-" for none.
func JoinIDs(ids []int32) string {
	if len(ids) == 0 {
		return "-"
	}
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = fmt.Sprint(id)
	}
	return strings.Join(s, ",")
}
