package config

import (
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
)

// Dynamic broker configs (KIP-226): values stored in the metadata log, for
// one broker (resource name "2") or as the cluster's default (resource
// name ""), that override the config file without a restart. A property's
// value is the first of, in Kafka's order:
//
//	DYNAMIC_BROKER_CONFIG          this broker's dynamic value
//	DYNAMIC_DEFAULT_BROKER_CONFIG  the cluster's dynamic default
//	STATIC_BROKER_CONFIG           the config file, environment or flags
//	DEFAULT_CONFIG                 the definition's default
//
// The layer is swapped whole through an atomic pointer, so that readers
// (every s.cfg.Int call on a request path) never lock and always see one
// consistent pair of maps.

// dynamicProps are the broker properties Kafka lets the admin APIs change
// at run time (DynamicBrokerConfig.AllDynamicConfigs) that Tributary has
// and applies without a restart. Left out on purpose: listeners and
// listener.security.protocol.map (Tributary cannot rebind a listener yet),
// max.connections.per.ip.overrides, whose host names are resolved once
// at start, num.io.threads and num.network.threads (there are no pools:
// a goroutine per connection) and num.recovery.threads.per.data.dir (used
// only while the logs open at start, before the metadata is read).
var dynamicProps = []string{
	// The broker synonyms of topic properties (DynamicLogConfig): a
	// change is applied to every hosted partition without an override.
	"log.segment.bytes", "log.roll.ms", "log.roll.jitter.ms", "log.index.size.max.bytes",
	"log.flush.interval.messages", "log.flush.interval.ms", "log.retention.bytes", "log.retention.ms",
	"message.max.bytes", "log.index.interval.bytes", "log.cleaner.delete.retention.ms",
	"log.cleaner.min.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms", "log.segment.delete.delay.ms",
	"log.cleaner.min.cleanable.ratio", "log.cleanup.policy", "unclean.leader.election.enable",
	"min.insync.replicas", "compression.type", "log.preallocate", "log.message.timestamp.type",
	"log.message.timestamp.before.max.ms", "log.message.timestamp.after.max.ms",
	"log.local.retention.ms", "log.local.retention.bytes",
	// The log cleaner: log.cleaner.backoff.ms is read at each pass;
	// log.cleaner.threads is accepted and described but, as its static
	// form, changes nothing (one cleaner per log dir; docs/cluster.md).
	"log.cleaner.threads", "log.cleaner.backoff.ms",
	// Producer state.
	"producer.id.expiration.ms",
	// Connection limits, checked at each accept.
	"max.connections", "max.connections.per.ip",
}

// quotaDefs are the replication quotas (KIP-73), which Kafka defines only
// as dynamic broker configs. kafka-reassign-partitions --throttle sets the
// two rates on every broker of a move and --verify removes them.
var quotaDefs = []Def{
	{Name: "leader.replication.throttled.rate", Type: Long, Default: maxLong, Check: atLeast(0), DynamicOnly: true,
		Doc: "Bytes per second a leader serves to the followers of the replicas its topics list in leader.replication.throttled.replicas, while they are out of the ISR."},
	{Name: "follower.replication.throttled.rate", Type: Long, Default: maxLong, Check: atLeast(0), DynamicOnly: true,
		Doc: "Bytes per second this broker fetches as a follower of the replicas its topics list in follower.replication.throttled.replicas, while it is out of their ISR."},
	{Name: "replica.alter.log.dirs.io.max.bytes.per.second", Type: Long, Default: maxLong, Check: atLeast(0), DynamicOnly: true,
		Doc: "Accepted: Tributary moves no replica between log dirs of one broker (AlterReplicaLogDirs)."},
}

func init() {
	for _, d := range quotaDefs {
		if _, dup := BrokerDefs[d.Name]; dup {
			panic("config: " + d.Name + " defined twice")
		}
		d.Dynamic = true
		BrokerDefs[d.Name] = d
	}
	for _, name := range dynamicProps {
		d, ok := BrokerDefs[name]
		if !ok {
			panic("config: dynamic property " + name + " is not defined")
		}
		d.Dynamic = true
		BrokerDefs[name] = d
	}
}

// dynamicLayer is one published pair of dynamic config maps.
type dynamicLayer struct {
	perBroker, clusterDefault map[string]string
}

// SetDynamic replaces the dynamic configs: this broker's and the cluster's
// defaults, as the metadata log holds them. Properties this version does
// not know or cannot change at run time, and invalid values, are ignored
// (a newer controller may have stored them). It reports whether anything
// changed.
func (b *Broker) SetDynamic(clusterDefault, perBroker map[string]string) bool {
	keep := func(m map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			if d, ok := BrokerDefs[k]; ok && d.Dynamic && checkDynamic(d, v) == nil {
				out[k] = v
			}
		}
		return out
	}
	next := &dynamicLayer{perBroker: keep(perBroker), clusterDefault: keep(clusterDefault)}
	old := b.dyn.Swap(next)
	return old == nil && (len(next.perBroker) > 0 || len(next.clusterDefault) > 0) ||
		old != nil && (!maps.Equal(old.perBroker, next.perBroker) || !maps.Equal(old.clusterDefault, next.clusterDefault))
}

func (b *Broker) layer() *dynamicLayer {
	if l := b.dyn.Load(); l != nil {
		return l
	}
	return &dynamicLayer{}
}

// ValidateDynamic checks the dynamic configs of one resource, all of them
// as they would be stored. Its messages are Kafka's: a non-dynamic
// property is "Cannot update these configs dynamically".
func ValidateDynamic(values map[string]string) error {
	var fixed, unknown, errs []string
	for name, v := range values {
		d, ok := BrokerDefs[name]
		switch {
		case !ok:
			unknown = append(unknown, name)
		case !d.Dynamic:
			fixed = append(fixed, name)
		default:
			if err := checkDynamic(d, v); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	switch {
	case len(fixed) > 0:
		sort.Strings(fixed)
		return fmt.Errorf("Cannot update these configs dynamically: Set(%s)", strings.Join(fixed, ", "))
	case len(unknown) > 0:
		// Kafka stores names it does not know; Tributary refuses them, so
		// that a typo is never stored to do nothing.
		sort.Strings(unknown)
		return fmt.Errorf("Unknown broker configs: Set(%s)", strings.Join(unknown, ", "))
	case len(errs) > 0:
		sort.Strings(errs)
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// checkDynamic checks one dynamic value. max.connections.per.ip=0 is
// refused: Kafka allows 0 only with max.connections.per.ip.overrides, which
// is static here and differs from broker to broker, so the controller
// cannot tell which brokers a 0 would cut off from every client and from
// the other brokers (replication). 0 goes in the config file, with the
// overrides.
func checkDynamic(d Def, v string) error {
	if err := d.parse(v); err != nil {
		return err
	}
	if n, _ := strconv.ParseInt(v, 10, 32); d.Name == "max.connections.per.ip" && n == 0 {
		return fmt.Errorf("max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set, which Tributary takes only from the config file: set both there")
	}
	return nil
}

// brokerSynonymChain is the names one broker property can be set by, most
// specific first (Kafka's DynamicBrokerConfig.brokerConfigSynonyms).
func brokerSynonymChain(name string) []string {
	switch name {
	case "log.roll.ms", "log.roll.hours":
		return []string{"log.roll.ms", "log.roll.hours"}
	case "log.roll.jitter.ms", "log.roll.jitter.hours":
		return []string{"log.roll.jitter.ms", "log.roll.jitter.hours"}
	case "log.flush.interval.ms":
		return []string{"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}
	case "log.retention.ms", "log.retention.minutes", "log.retention.hours":
		return []string{"log.retention.ms", "log.retention.minutes", "log.retention.hours"}
	}
	return []string{name}
}

// SynonymsOf lists where the names of chain are set: every name's dynamic
// value for this broker, then every name's cluster default, then the
// static values, then the definitions' defaults, as Kafka's
// ConfigHelper.configSynonyms orders them (by source first, then by chain).
// Values are the properties' own, unscaled.
func (b *Broker) SynonymsOf(chain []string) []Synonym {
	l := b.layer()
	var out []Synonym
	for _, name := range chain {
		if v, ok := l.perBroker[name]; ok {
			out = append(out, Synonym{Name: name, Value: v, Source: SourceDynamicBroker})
		}
	}
	for _, name := range chain {
		if v, ok := l.clusterDefault[name]; ok {
			out = append(out, Synonym{Name: name, Value: v, Source: SourceDynamicDefaultBroker})
		}
	}
	for _, name := range chain {
		if v, ok := b.set[name]; ok {
			out = append(out, Synonym{Name: name, Value: v, Source: SourceStaticBroker})
		}
	}
	for _, name := range chain {
		if d, ok := BrokerDefs[name]; ok && !d.NoDefault && !d.DynamicOnly {
			out = append(out, Synonym{Name: name, Value: d.Default, Source: SourceDefault})
		}
	}
	return out
}

// BrokerSynonyms are a broker property's synonyms as DescribeConfigs
// reports them: those of its chain, without the names before it (Kafka
// drops them, so log.retention.hours never lists log.retention.ms).
func (b *Broker) BrokerSynonyms(name string) []Synonym {
	syns := b.SynonymsOf(brokerSynonymChain(name))
	for len(syns) > 0 && syns[0].Name != name {
		syns = syns[1:]
	}
	return syns
}

// ClusterDefaults are the cluster-wide dynamic configs in force here.
func (b *Broker) ClusterDefaults() map[string]string { return maps.Clone(b.layer().clusterDefault) }

// throttledReplicas checks a leader/follower.replication.throttled.replicas
// value: * or partition:broker pairs, as Kafka's
// ThrottledReplicaListValidator.
func throttledReplicas(v string) error {
	if _, err := ParseThrottledReplicas(v); err != nil {
		return err
	}
	return nil
}

// ThrottledReplicas is a parsed throttled-replicas list: All for *,
// otherwise the partition:broker pairs.
type ThrottledReplicas struct {
	All   bool
	Pairs map[[2]int32]bool // {partition, broker}
}

// Has reports whether the replica of partition on broker is listed.
func (t ThrottledReplicas) Has(partition, broker int32) bool {
	return t.All || t.Pairs[[2]int32{partition, broker}]
}

// ParseThrottledReplicas reads a leader/follower.replication.throttled.replicas value.
func ParseThrottledReplicas(v string) (ThrottledReplicas, error) {
	items := SplitList(v)
	if len(items) == 1 && items[0] == "*" {
		return ThrottledReplicas{All: true}, nil
	}
	out := ThrottledReplicas{Pairs: map[[2]int32]bool{}}
	for _, it := range items {
		p, b, ok := strings.Cut(it, ":")
		pi, perr := strconv.ParseInt(strings.TrimSpace(p), 10, 32)
		bi, berr := strconv.ParseInt(strings.TrimSpace(b), 10, 32)
		if !ok || perr != nil || berr != nil || pi < 0 || bi < 0 {
			return ThrottledReplicas{}, fmt.Errorf("must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
		}
		out.Pairs[[2]int32{int32(pi), int32(bi)}] = true
	}
	return out, nil
}
