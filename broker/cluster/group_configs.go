package cluster

import (
	"maps"
	"slices"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Group configs (Kafka's GroupConfig: share.auto.offset.reset,
// share.record.lock.duration.ms, consumer.session.timeout.ms, ...) live
// in the metadata log, as Kafka's controller keeps them in ConfigRecords
// of the GROUP resource: every broker applies the same values, and they
// survive restarts and coordinator moves. Which names and values are
// allowed is the broker's to check (broker/config), before the change.

// GroupConfigRecord sets (Value non-nil) or removes one config of Group.
type GroupConfigRecord struct {
	Group string  `json:"group"`
	Name  string  `json:"name"`
	Value *string `json:"value"`
}

// MaxGroupConfigGroups bounds the groups that have configs, and
// MaxGroupConfigIDLength their ids: anyone allowed ALTER_CONFIGS on a
// prefix of group ids (or any client without an authorizer) could
// otherwise fill every node's metadata with configs of groups that need
// not exist (review M5). Kafka 4.4 has neither bound.
const (
	MaxGroupConfigGroups   = 10000
	MaxGroupConfigIDLength = 255
)

// maxGroupConfigGroups is MaxGroupConfigGroups; tests lower it.
var maxGroupConfigGroups = MaxGroupConfigGroups

// applyGroupConfig applies r, copying the maps it changes.
func (n *Image) applyGroupConfig(r *GroupConfigRecord) {
	n.GroupConfigs = maps.Clone(n.GroupConfigs)
	n.setGroupConfig(r)
}

// setGroupConfig applies r to n.GroupConfigs, which must be n's own
// (applyAll copies it once for a run of group config records, so that
// replaying a snapshot is linear in its groups, not quadratic), copying
// the group's map.
func (n *Image) setGroupConfig(r *GroupConfigRecord) {
	if n.GroupConfigs == nil {
		n.GroupConfigs = map[string]map[string]string{}
	}
	m := maps.Clone(n.GroupConfigs[r.Group])
	if m == nil {
		m = map[string]string{}
	}
	if r.Value == nil {
		delete(m, r.Name)
	} else {
		m[r.Name] = *r.Value
	}
	if len(m) == 0 {
		delete(n.GroupConfigs, r.Group)
	} else {
		n.GroupConfigs[r.Group] = m
	}
}

// groupConfigRecords rebuild the group configs (snapshots).
func (img *Image) groupConfigRecords() []Record {
	groups := make([]string, 0, len(img.GroupConfigs))
	for g := range img.GroupConfigs {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	var rs []Record
	for _, g := range groups {
		names := make([]string, 0, len(img.GroupConfigs[g]))
		for k := range img.GroupConfigs[g] {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			v := img.GroupConfigs[g][k]
			rs = append(rs, Record{GroupConfig: &GroupConfigRecord{Group: g, Name: k, Value: &v}})
		}
	}
	return rs
}

// AlterGroupConfigs applies changes to a group's configs. validate sees
// the group's configs as they would be after the change, decided from the
// newest image, and refuses them with an error that becomes
// INVALID_CONFIG.
func (c *Controller) AlterGroupConfigs(group string, changes []ConfigChange, validate func(next map[string]string) error, validateOnly bool) error {
	if group == "" {
		return errorf(kerr.InvalidRequest, "a group resource needs a group id")
	}
	if len(group) > MaxGroupConfigIDLength {
		return errorf(kerr.InvalidRequest, "group id of %d bytes: group configs are kept for group ids of at most %d bytes", len(group), MaxGroupConfigIDLength)
	}
	return c.decide(validateOnly, func(img *Image) ([]Record, error) {
		if l := img.FeatureLevel(GroupVersion); l < 1 {
			return nil, errorf(kerr.UnsupportedVersion, "group configs need feature %s at level 1 or more, and this cluster has %d: once every node runs this version, finalize it with `kafka-features.sh upgrade --feature %s=1`", GroupVersion, l, GroupVersion)
		}
		cur := img.GroupConfigs[group]
		if cur == nil && len(img.GroupConfigs) >= maxGroupConfigGroups && slices.ContainsFunc(changes, func(ch ConfigChange) bool { return ch.Value != nil }) {
			return nil, errorf(kerr.PolicyViolation, "%d groups have configs, the most this cluster keeps (%d): delete another group's configs first", len(img.GroupConfigs), maxGroupConfigGroups)
		}
		next := maps.Clone(cur)
		if next == nil {
			next = map[string]string{}
		}
		for _, ch := range changes {
			if ch.Value == nil {
				delete(next, ch.Name)
			} else {
				next[ch.Name] = *ch.Value
			}
		}
		if err := validate(next); err != nil {
			return nil, errorf(kerr.InvalidConfig, "%s", err.Error())
		}
		var rs []Record
		for k := range cur {
			if _, keep := next[k]; !keep {
				rs = append(rs, Record{GroupConfig: &GroupConfigRecord{Group: group, Name: k}})
			}
		}
		for k, v := range next {
			if old, had := cur[k]; !had || old != v {
				rs = append(rs, Record{GroupConfig: &GroupConfigRecord{Group: group, Name: k, Value: &v}})
			}
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i].GroupConfig.Name < rs[j].GroupConfig.Name })
		return rs, nil
	})
}
