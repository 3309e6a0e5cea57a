// Package config owns the broker's and topics' configuration properties:
// their Kafka names, types, defaults, documentation and validation, the
// topic-to-broker synonyms that DescribeConfigs reports, and the resolution
// of a topic's effective settings into a broker/log.Config.
//
// Definitions are immutable tables. A Broker is safe to share once built:
// its static values never change, and its dynamic configs (KIP-226,
// dynamic.go) are swapped whole through an atomic pointer by the metadata
// publisher, so that readers never lock.
package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Type is a property's value type, numbered as Kafka's DescribeConfigs
// response numbers them (KIP-569).
type Type int8

const (
	Bool     Type = 1
	String   Type = 2
	Int      Type = 3
	Short    Type = 4
	Long     Type = 5
	Double   Type = 6
	List     Type = 7
	Password Type = 9
)

// Source is where a value came from, numbered as Kafka's DescribeConfigs
// response numbers them.
type Source int8

const (
	SourceTopic         Source = 1 // a topic override
	SourceDynamicBroker Source = 2 // a dynamic config of this broker (KIP-226)
	// SourceDynamicDefaultBroker is a dynamic config of every broker of
	// the cluster (kafka-configs --entity-default).
	SourceDynamicDefaultBroker Source = 3
	SourceStaticBroker         Source = 4 // the broker's config file, env or flags
	SourceDefault              Source = 5
)

// Def defines one property.
type Def struct {
	Name    string
	Type    Type
	Default string // "" and NoDefault: the property is null unless set
	// NoDefault says the property has no value unless set, as Kafka's
	// null defaults (log.retention.ms, advertised.listeners).
	NoDefault bool
	Doc       string
	// Check validates a value that already parsed as Type.
	Check func(string) error
	// Synonyms are the broker properties a topic property falls back to,
	// most specific first (retention.ms ← log.retention.ms,
	// log.retention.minutes, log.retention.hours).
	Synonyms []string
	// Scale converts a synonym's unit to this property's: retention.ms from
	// log.retention.hours is ×3,600,000. Indexed like Synonyms; 0 means 1.
	Scale []int64
	// Sensitive values are never shown.
	Sensitive bool
	// Dynamic broker properties may be changed at run time through the
	// admin APIs (KIP-226), per broker or as the cluster's default, and
	// take effect without a restart: Kafka's set of dynamically updatable
	// properties, as far as Tributary has them (docs/cluster.md).
	Dynamic bool
	// DynamicOnly properties are not part of Kafka's KafkaConfig (the
	// replication quotas): DescribeConfigs lists them only when set, with
	// no type and read-only, as Kafka does.
	DynamicOnly bool
}

// parse checks that v is a valid value of d's type and passes d.Check.
func (d Def) parse(v string) error {
	var err error
	switch d.Type {
	case Bool:
		if v != "true" && v != "false" {
			err = fmt.Errorf("must be true or false")
		}
	case Int:
		_, err = strconv.ParseInt(v, 10, 32)
	case Short:
		_, err = strconv.ParseInt(v, 10, 16)
	case Long:
		_, err = strconv.ParseInt(v, 10, 64)
	case Double:
		_, err = strconv.ParseFloat(v, 64)
	}
	if err == nil && d.Check != nil {
		err = d.Check(v)
	}
	if err != nil {
		return fmt.Errorf("invalid value %q for %s: %s", v, d.Name, reason(err))
	}
	return nil
}

func reason(err error) string {
	if ne, ok := err.(*strconv.NumError); ok {
		if ne.Err == strconv.ErrRange {
			return "out of range"
		}
		return "not a number"
	}
	return err.Error()
}

// Checks used by the tables.

func atLeast(n int64) func(string) error {
	return func(v string) error {
		if i, _ := strconv.ParseInt(v, 10, 64); i < n {
			return fmt.Errorf("must be at least %d", n)
		}
		return nil
	}
}

// atLeastOrUnbounded is atLeast(n), or -1 for Kafka's "no limit".
func atLeastOrUnbounded(n int64) func(string) error {
	return func(v string) error {
		if i, _ := strconv.ParseInt(v, 10, 64); i != -1 && i < n {
			return fmt.Errorf("must be -1 (unbounded) or at least %d", n)
		}
		return nil
	}
}

func between(lo, hi float64) func(string) error {
	return func(v string) error {
		if f, _ := strconv.ParseFloat(v, 64); f < lo || f > hi {
			return fmt.Errorf("must be between %g and %g", lo, hi)
		}
		return nil
	}
}

func oneOf(allowed ...string) func(string) error {
	return func(v string) error {
		for _, a := range allowed {
			if v == a {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
	}
}

// oneOfFold is oneOf ignoring case, for the values Kafka parses so.
func oneOfFold(allowed ...string) func(string) error {
	return func(v string) error {
		for _, a := range allowed {
			if strings.EqualFold(v, a) {
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
	}
}

func listOf(allowed ...string) func(string) error {
	one := oneOf(allowed...)
	return func(v string) error {
		for _, p := range SplitList(v) {
			if err := one(p); err != nil {
				return fmt.Errorf("%q %w", p, err)
			}
		}
		return nil
	}
}

// SplitList splits a comma-separated list value, dropping empty items.
func SplitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

var maxLong = strconv.FormatInt(math.MaxInt64, 10)
