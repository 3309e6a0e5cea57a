package cluster

import (
	"maps"
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

// applyGroupConfig applies r, copying the maps it changes.
func (n *Image) applyGroupConfig(r *GroupConfigRecord) {
	n.GroupConfigs = maps.Clone(n.GroupConfigs)
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
	return c.decide(validateOnly, func(img *Image) ([]Record, error) {
		cur := img.GroupConfigs[group]
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
