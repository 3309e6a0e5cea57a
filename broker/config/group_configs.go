package config

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Group configs (Kafka's GroupConfig, KIP-848 and KIP-932): settings of
// one group, set with IncrementalAlterConfigs on a GROUP resource
// (kafka-configs.sh --entity-type groups) and kept in the metadata log,
// each falling back to the broker config Broker names. Kafka 4.4 has more
// (streams.*, the assignment intervals and offload switches,
// share.renew.acknowledge.enable, the dead-letter queue): Tributary
// refuses those rather than store what it would not apply.

// GroupConfigDef is one group config.
type GroupConfigDef struct {
	Name   string
	Broker string // the broker config that is its default
	// Values are the allowed values of a string config; an int config
	// has none and is bounded by the broker configs that bound Broker
	// (its min and max), as Kafka's GroupConfig.validate bounds it.
	Values []string
	Doc    string
}

// GroupConfigDefs are the group configs Tributary applies, by name.
var GroupConfigDefs = map[string]GroupConfigDef{}

func init() {
	for _, d := range []GroupConfigDef{
		{Name: "consumer.session.timeout.ms", Broker: "group.consumer.session.timeout.ms", Doc: "The timeout to detect client failures when using the consumer group protocol."},
		{Name: "consumer.heartbeat.interval.ms", Broker: "group.consumer.heartbeat.interval.ms", Doc: "The heartbeat interval given to the members of a consumer group."},
		{Name: "share.session.timeout.ms", Broker: "group.share.session.timeout.ms", Doc: "The timeout to detect client failures when using the share group protocol."},
		{Name: "share.heartbeat.interval.ms", Broker: "group.share.heartbeat.interval.ms", Doc: "The heartbeat interval given to the members of a share group."},
		{Name: "share.record.lock.duration.ms", Broker: "group.share.record.lock.duration.ms", Doc: "The record acquisition lock duration in milliseconds for share groups."},
		{Name: "share.delivery.count.limit", Broker: "group.share.delivery.count.limit", Doc: "The maximum number of delivery attempts for a record delivered to a share group."},
		{Name: "share.partition.max.record.locks", Broker: "group.share.partition.max.record.locks", Doc: "Share-group record lock limit per share-partition."},
		{Name: "share.auto.offset.reset", Values: []string{"latest", "earliest"}, Doc: "Where a share partition starts when the group first reads it: latest or earliest (Kafka's by_duration: is not supported)."},
		{Name: "share.isolation.level", Values: []string{"read_uncommitted", "read_committed"}, Doc: "Whether a share group is delivered only committed transactional records (read_committed) or all of them (read_uncommitted)."},
	} {
		GroupConfigDefs[d.Name] = d
	}
}

// GroupConfigNames are the group configs' names, sorted.
func GroupConfigNames() []string {
	names := make([]string, 0, len(GroupConfigDefs))
	for n := range GroupConfigDefs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// GroupDefault is a group config's value when the group does not set it.
func (b *Broker) GroupDefault(name string) string {
	d := GroupConfigDefs[name]
	if d.Broker != "" {
		return b.String(d.Broker)
	}
	return d.Values[0]
}

// bounds are the broker configs bounding an int group config: Kafka's
// group.<kind>.min.<rest> and group.<kind>.max.<rest>.
func groupBounds(broker string) (lo, hi string) {
	kind, rest, _ := strings.Cut(strings.TrimPrefix(broker, "group."), ".")
	return "group." + kind + ".min." + rest, "group." + kind + ".max." + rest
}

// ValidateGroupConfigs checks a group's configs as they would be after a
// change: every name known, every value of its type and within the
// broker's bounds, and each heartbeat interval below its session timeout
// (the values not set counting at their defaults). The error names the
// config and the value, for INVALID_CONFIG.
func (b *Broker) ValidateGroupConfigs(values map[string]string) error {
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		d, ok := GroupConfigDefs[n]
		if !ok {
			return fmt.Errorf("Unknown group config name: %s", n) // Kafka's words
		}
		v := values[n]
		if d.Values != nil {
			if !slices.Contains(d.Values, v) {
				return fmt.Errorf("Invalid value %s for configuration %s: must be one of %s", v, n, strings.Join(d.Values, ", "))
			}
			continue
		}
		i, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return fmt.Errorf("Invalid value %s for configuration %s: Not a number of type INT", v, n)
		}
		lo, hi := groupBounds(d.Broker)
		if minV, maxV := b.Int(lo), b.Int(hi); i < minV || i > maxV {
			return fmt.Errorf("Invalid value %s for configuration %s: must be in the range %d to %d inclusive (%s, %s)", v, n, minV, maxV, lo, hi)
		}
	}
	for _, kind := range []string{"consumer", "share"} {
		st, hb := kind+".session.timeout.ms", kind+".heartbeat.interval.ms"
		_, setS := values[st]
		_, setH := values[hb]
		if !setS && !setH {
			continue
		}
		s, h := b.groupInt(values, st), b.groupInt(values, hb)
		if s <= h {
			return fmt.Errorf("Invalid value %s for configuration %s: %s must be greater than %s (%d)", strconv.FormatInt(pick(setS, s, h), 10), pickName(setS, st, hb), st, hb, h)
		}
	}
	return nil
}

func pick(a bool, x, y int64) int64 {
	if a {
		return x
	}
	return y
}

func pickName(a bool, x, y string) string {
	if a {
		return x
	}
	return y
}

// groupInt is an int group config's value: the group's, else the default.
func (b *Broker) groupInt(values map[string]string, name string) int64 {
	if v, ok := values[name]; ok {
		if i, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
			return i
		}
	}
	i, _ := strconv.ParseInt(b.GroupDefault(name), 10, 64)
	return i
}

// GroupSettings are a group's configs in force: its own, else the
// broker's defaults. Values outside the broker's current bounds (the
// bounds changed after they were set) are capped, as Kafka's
// GroupConfig.evaluate caps them.
type GroupSettings struct {
	ConsumerSessionTimeout    time.Duration
	ConsumerHeartbeatInterval time.Duration
	ShareSessionTimeout       time.Duration
	ShareHeartbeatInterval    time.Duration
	ShareLockDuration         time.Duration
	ShareDeliveryLimit        int16
	ShareMaxRecordLocks       int
	ShareAutoOffsetReset      string // latest or earliest
	ShareIsolationLevel       string // read_uncommitted or read_committed
}

// GroupSettingsOf evaluates a group's configs (nil: none set).
func (b *Broker) GroupSettingsOf(values map[string]string) GroupSettings {
	capped := func(name string) int64 {
		lo, hi := groupBounds(GroupConfigDefs[name].Broker)
		return min(max(b.groupInt(values, name), b.Int(lo)), b.Int(hi))
	}
	ms := func(name string) time.Duration { return time.Duration(capped(name)) * time.Millisecond }
	str := func(name string) string {
		if v, ok := values[name]; ok && slices.Contains(GroupConfigDefs[name].Values, v) {
			return v
		}
		return b.GroupDefault(name)
	}
	return GroupSettings{
		ConsumerSessionTimeout:    ms("consumer.session.timeout.ms"),
		ConsumerHeartbeatInterval: ms("consumer.heartbeat.interval.ms"),
		ShareSessionTimeout:       ms("share.session.timeout.ms"),
		ShareHeartbeatInterval:    ms("share.heartbeat.interval.ms"),
		ShareLockDuration:         ms("share.record.lock.duration.ms"),
		ShareDeliveryLimit:        int16(capped("share.delivery.count.limit")),
		ShareMaxRecordLocks:       int(capped("share.partition.max.record.locks")),
		ShareAutoOffsetReset:      str("share.auto.offset.reset"),
		ShareIsolationLevel:       str("share.isolation.level"),
	}
}
