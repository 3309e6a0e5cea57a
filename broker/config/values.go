package config

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/record"
)

// ErrInvalid wraps every validation failure; the message names the
// properties and values at fault.
var ErrInvalid = errors.New("broker/config: invalid configuration")

// Broker is a validated broker configuration: the values that were set and
// the definitions that give everything else a default.
type Broker struct {
	set map[string]string
	dyn atomic.Pointer[dynamicLayer] // see dynamic.go
}

// ParseBroker validates broker properties by Kafka name. Unknown names and
// invalid values are all reported at once.
func ParseBroker(props map[string]string) (*Broker, error) {
	var errs []string
	set := make(map[string]string, len(props))
	for name, v := range props {
		d, ok := BrokerDefs[name]
		if ld, err, prefixed := listenerProperty(name); prefixed {
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			d, ok = ld, true
		}
		if !ok {
			errs = append(errs, fmt.Sprintf("unknown property %s", name))
			continue
		}
		if err := d.parse(v); err != nil {
			errs = append(errs, err.Error())
			continue
		}
		set[name] = v
	}
	b := &Broker{set: set}
	if len(errs) == 0 {
		errs = b.crossChecks()
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return nil, fmt.Errorf("%w: %s", ErrInvalid, strings.Join(errs, "; "))
	}
	return b, nil
}

// crossChecks are the constraints between properties that Kafka enforces at
// start.
func (b *Broker) crossChecks() []string {
	var errs []string
	_, fetchSet := b.set["replica.fetch.max.bytes"]
	_, msgSet := b.set["message.max.bytes"]
	if fetch, msg := b.Int("replica.fetch.max.bytes"), b.Int("message.max.bytes"); (fetchSet || msgSet) && fetch < msg {
		// KAFKA-995: a follower must be able to fetch the largest batch a
		// leader accepts. Only checked when one is set, because Kafka's own
		// defaults (1048576 < 1048588) predate the record overhead.
		errs = append(errs, fmt.Sprintf("replica.fetch.max.bytes=%d must be at least message.max.bytes=%d, or followers cannot copy the largest batch (KAFKA-995)", fetch, msg))
	}
	if lo, hi := b.Int("group.min.session.timeout.ms"), b.Int("group.max.session.timeout.ms"); lo > hi {
		errs = append(errs, fmt.Sprintf("group.min.session.timeout.ms=%d is larger than group.max.session.timeout.ms=%d", lo, hi))
	}
	errs = append(errs, b.consumerGroupChecks()...)
	errs = append(errs, b.shareGroupChecks()...)
	if _, err := b.Listeners(); err != nil {
		errs = append(errs, err.Error())
	}
	if pool, frame := b.QueuedMaxRequestBytes(), b.Int("socket.request.max.bytes"); pool != -1 && pool < frame {
		// As Kafka: a frame the pool can never hold would wait forever.
		errs = append(errs, fmt.Sprintf("queued.max.request.bytes=%d must be -1 or at least socket.request.max.bytes=%d, or the largest request could never be read", pool, frame))
	}
	if _, err := b.ConnectionsPerIPOverrides(); err != nil {
		errs = append(errs, err.Error())
	}
	if b.Int("max.connections.per.ip") == 0 && len(b.List("max.connections.per.ip.overrides")) == 0 {
		// Kafka's words: 0 alone refuses every client and every broker.
		errs = append(errs, "max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set.")
	}
	if b.Bool("remote.log.storage.system.enable") && b.String("rsm.config.storage.uri") == "" {
		errs = append(errs, "remote.log.storage.system.enable=true needs rsm.config.storage.uri, where tiered storage keeps segments (hdfs://namenode:port/path or file:///path)")
	}
	errs = append(errs, b.securityChecks()...)
	return errs
}

// Get returns a property's value and where it came from; ok is false for an
// unset property without a default.
func (b *Broker) Get(name string) (value string, src Source, ok bool) {
	if l := b.dyn.Load(); l != nil {
		if v, set := l.perBroker[name]; set {
			return v, SourceDynamicBroker, true
		}
		if v, set := l.clusterDefault[name]; set {
			return v, SourceDynamicDefaultBroker, true
		}
	}
	if v, set := b.set[name]; set {
		return v, SourceStaticBroker, true
	}
	d, known := BrokerDefs[name]
	if !known || d.NoDefault {
		return "", 0, false
	}
	return d.Default, SourceDefault, true
}

// IsSet reports whether name was given explicitly: in the config file,
// environment or flags, or as a dynamic config.
func (b *Broker) IsSet(name string) bool {
	_, src, ok := b.Get(name)
	return ok && src != SourceDefault
}

func (b *Broker) String(name string) string { v, _, _ := b.Get(name); return v }

func (b *Broker) Int(name string) int64 {
	v, _, _ := b.Get(name)
	i, _ := strconv.ParseInt(v, 10, 64)
	return i
}

func (b *Broker) Bool(name string) bool { return b.String(name) == "true" }

func (b *Broker) Double(name string) float64 {
	f, _ := strconv.ParseFloat(b.String(name), 64)
	return f
}

func (b *Broker) List(name string) []string { return SplitList(b.String(name)) }

// LogDirs is log.dirs, or log.dir when that is unset.
func (b *Broker) LogDirs() []string {
	if b.IsSet("log.dirs") {
		return b.List("log.dirs")
	}
	return []string{b.String("log.dir")}
}

// Values lists every broker property with its value and source, for
// DescribeConfigs, ordered by name. Unset properties without a default are
// included with ok=false values omitted.
func (b *Broker) Values() []Value {
	out := make([]Value, 0, len(BrokerDefs))
	for name, d := range BrokerDefs {
		v, src, ok := b.Get(name)
		if d.DynamicOnly && (!ok || src == SourceDefault) {
			continue // as Kafka, which lists them only once set
		}
		out = append(out, Value{Def: d, Value: v, Null: !ok, Source: src})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Def.Name < out[j].Def.Name })
	return out
}

// Value is one resolved property.
type Value struct {
	Def    Def
	Value  string
	Null   bool
	Source Source
	// Synonyms are where the value could have come from, most specific
	// first, as DescribeConfigs reports them.
	Synonyms []Synonym
}

// Synonym is one candidate source of a topic property's value.
type Synonym struct {
	Name   string
	Value  string
	Source Source
}

// ValidateTopicOverrides checks topic-level properties by name and value.
func ValidateTopicOverrides(overrides map[string]string) error {
	var errs []string
	for name, v := range overrides {
		d, ok := TopicDefs[name]
		if !ok {
			errs = append(errs, fmt.Sprintf("unknown topic property %s", name))
			continue
		}
		if err := d.parse(v); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if overrides["remote.storage.enable"] == "true" && strings.Contains(overrides["cleanup.policy"], "compact") {
		// As Kafka: a compacted log's segments change after they close.
		errs = append(errs, "remote.storage.enable=true is not supported with cleanup.policy=compact: tiered storage keeps closed segments as they are")
	}
	if len(errs) > 0 {
		sort.Strings(errs)
		return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(errs, "; "))
	}
	return nil
}

// Topic resolves every topic property for a topic with these overrides.
func (b *Broker) Topic(overrides map[string]string) map[string]Value {
	out := make(map[string]Value, len(TopicDefs))
	for name, d := range TopicDefs {
		out[name] = b.resolveTopic(d, overrides)
	}
	return out
}

func (b *Broker) resolveTopic(d Def, overrides map[string]string) Value {
	val := Value{Def: d}
	for i, syn := range d.Synonyms {
		v, src, ok := b.Get(syn)
		if !ok {
			continue
		}
		if i < len(d.Scale) && d.Scale[i] > 1 {
			n, _ := strconv.ParseInt(v, 10, 64)
			v = strconv.FormatInt(n*d.Scale[i], 10)
		}
		val.Synonyms = append(val.Synonyms, Synonym{Name: syn, Value: v, Source: src})
	}
	if v, ok := overrides[d.Name]; ok {
		val.Synonyms = append([]Synonym{{Name: d.Name, Value: v, Source: SourceTopic}}, val.Synonyms...)
	}
	// The first explicitly set value wins; failing that, the most specific
	// default.
	for _, s := range val.Synonyms {
		if s.Source != SourceDefault {
			val.Value, val.Source = s.Value, s.Source
			return val
		}
	}
	if len(val.Synonyms) > 0 {
		val.Value, val.Source = val.Synonyms[0].Value, SourceDefault
		return val
	}
	if len(d.Synonyms) == 0 && !d.NoDefault {
		// A topic property no broker property stands for
		// (leader.replication.throttled.replicas): its own default.
		val.Value, val.Source = d.Default, SourceDefault
		return val
	}
	val.Null = true
	return val
}

// LogConfig is the storage configuration of a topic with these overrides.
// The overrides must have passed ValidateTopicOverrides.
func (b *Broker) LogConfig(overrides map[string]string) log.Config {
	vals := b.Topic(overrides)
	num := func(name string) int64 { n, _ := strconv.ParseInt(vals[name].Value, 10, 64); return n }
	ms := func(name string) time.Duration {
		n := num(name)
		if n > int64(1<<63-1)/int64(time.Millisecond) {
			return time.Duration(1<<63 - 1)
		}
		return time.Duration(n) * time.Millisecond
	}
	c := log.DefaultConfig()
	c.SegmentBytes = num("segment.bytes")
	c.SegmentMs = ms("segment.ms")
	c.SegmentIndexBytes = int(num("segment.index.bytes"))
	c.IndexIntervalBytes = int(num("index.interval.bytes"))
	c.MaxMessageBytes = int(num("max.message.bytes"))
	c.RetentionMs = ms("retention.ms")
	if num("retention.ms") < 0 {
		c.RetentionMs = -1
	}
	c.RetentionBytes = num("retention.bytes")
	_ = c.SetCleanupPolicy(vals["cleanup.policy"].Value)
	c.DeleteRetentionMs = ms("delete.retention.ms")
	c.MinCleanableDirtyRatio, _ = strconv.ParseFloat(vals["min.cleanable.dirty.ratio"].Value, 64)
	c.MinCompactionLagMs = ms("min.compaction.lag.ms")
	c.FlushMessages = num("flush.messages")
	c.FlushMs = ms("flush.ms")
	c.LogAppendTime = vals["message.timestamp.type"].Value == "LogAppendTime"
	c.Compression = log.CompressionProducer
	for codec := record.CodecNone; codec <= record.CodecZstd; codec++ {
		if v := vals["compression.type"].Value; v == codec.String() || (v == "uncompressed" && codec == record.CodecNone) {
			c.Compression = codec
		}
	}
	c.TimestampBeforeMaxMs = num("message.timestamp.before.max.ms")
	c.TimestampAfterMaxMs = num("message.timestamp.after.max.ms")
	c.FileDeleteDelayMs = ms("file.delete.delay.ms")
	c.RemoteStorage = vals["remote.storage.enable"].Value == "true"
	c.LocalRetentionMs = time.Duration(num("local.retention.ms")) * time.Millisecond
	if num("local.retention.ms") < 0 {
		c.LocalRetentionMs = time.Duration(num("local.retention.ms"))
	}
	c.LocalRetentionBytes = num("local.retention.bytes")
	return c
}
