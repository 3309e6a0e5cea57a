// Package quota holds client quotas as Apache Kafka defines them: the
// entities a quota applies to (user, client-id, ip, and their defaults),
// the validation AlterClientQuotas applies, the eight levels of precedence
// that pick the quota of a (user, client-id) pair, and the sampled rates
// that decide how long a client is throttled.
//
// A Table is immutable: the metadata image holds one and replaces it on
// every change, so readers need no lock. A Manager is safe for concurrent
// use by every connection.
package quota

import (
	"fmt"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
)

// Entity types, as Kafka names them (ClientQuotaEntity).
const (
	User     = "user"
	ClientID = "client-id"
	IP       = "ip"
)

// Quota keys, as Kafka names them (QuotaConfig).
const (
	ProducerByteRate       = "producer_byte_rate"
	ConsumerByteRate       = "consumer_byte_rate"
	RequestPercentage      = "request_percentage"
	ControllerMutationRate = "controller_mutation_rate"
	ConnectionCreationRate = "connection_creation_rate"
)

// keyKind is how Kafka types a quota key: integral keys refuse fractions.
type keyKind int

const (
	kindLong keyKind = iota
	kindDouble
	kindInt
)

var userClientKeys = map[string]keyKind{
	ProducerByteRate:       kindLong,
	ConsumerByteRate:       kindLong,
	RequestPercentage:      kindDouble,
	ControllerMutationRate: kindDouble,
}

var ipKeys = map[string]keyKind{ConnectionCreationRate: kindInt}

// Part is one component of an entity: its type and name, nil for the
// type's default (Kafka's <default>).
type Part struct {
	Type string  `json:"type"`
	Name *string `json:"name"`
}

// Entity is what a quota applies to: one to three parts, sorted by type,
// each type at most once.
type Entity []Part

// NewEntity sorts parts into an Entity.
func NewEntity(parts ...Part) Entity {
	e := append(Entity(nil), parts...)
	sort.SliceStable(e, func(i, j int) bool { return e[i].Type < e[j].Type })
	return e
}

// Key is a string that identifies the entity, for maps.
func (e Entity) Key() string {
	var b strings.Builder
	for _, p := range e {
		b.WriteString(p.Type)
		if p.Name == nil {
			b.WriteString("=<default>;")
		} else {
			b.WriteString("=" + strconv.Quote(*p.Name) + ";")
		}
	}
	return b.String()
}

// Get is the part of type t.
func (e Entity) Get(t string) (p Part, ok bool) {
	for _, p := range e {
		if p.Type == t {
			return p, true
		}
	}
	return Part{}, false
}

// String is how Kafka's messages print an entity:
// ClientQuotaEntity(entries={user=alice, client-id=null}).
func (e Entity) String() string {
	var parts []string
	for _, p := range e {
		n := "null"
		if p.Name != nil {
			n = *p.Name
		}
		parts = append(parts, p.Type+"="+n)
	}
	return "ClientQuotaEntity(entries={" + strings.Join(parts, ", ") + "})"
}

// Path is the entity as Kafka's ZooKeeper-era config path reads, which is
// how operators and Kafka's docs name the eight levels:
// /config/users/alice/clients/<default>.
func (e Entity) Path() string {
	name := func(p Part) string {
		if p.Name == nil {
			return "<default>"
		}
		return *p.Name
	}
	var s string
	if u, ok := e.Get(User); ok {
		s += "/config/users/" + name(u)
	}
	if c, ok := e.Get(ClientID); ok {
		s += "/config/clients/" + name(c)
		if _, ok := e.Get(User); ok {
			s = strings.Replace(s, "/config/clients/", "/clients/", 1)
		}
	}
	if ip, ok := e.Get(IP); ok {
		s += "/config/ips/" + name(ip)
	}
	return s
}

// ValidateEntity checks an entity of AlterClientQuotas as Kafka's
// ClientQuotaControlManager does, with its messages; the parts are as the
// request gave them (unsorted, maybe repeated).
func ValidateEntity(parts []Part) (Entity, error) {
	if len(parts) == 0 {
		return nil, invalid("Invalid empty client quota entity")
	}
	seen := map[string]bool{}
	for _, p := range parts {
		if seen[p.Type] {
			return nil, invalid("Invalid client quota entity, duplicate entity entry " + p.Type)
		}
		seen[p.Type] = true
		switch p.Type {
		case User, ClientID, IP:
		default:
			return nil, invalid("Unhandled client quota entity type: " + p.Type)
		}
		if p.Name != nil && *p.Name == "" {
			return nil, invalid("Empty " + p.Type + " not supported")
		}
	}
	e := NewEntity(parts...)
	if ip, ok := e.Get(IP); ok {
		if len(e) > 1 {
			// Kafka's message lacks the space, kept so that tools comparing
			// messages see the same text.
			return nil, invalid("Invalid quota entity combination, IP entity should" + "not be combined with User or ClientId")
		}
		if ip.Name != nil && net.ParseIP(*ip.Name) == nil {
			if _, err := net.LookupHost(*ip.Name); err != nil {
				return nil, invalid(*ip.Name + " is not a valid IP or resolvable host.")
			}
		}
	}
	return e, nil
}

// ValidateValue checks one quota key and value for entity e, with Kafka's
// messages.
func ValidateValue(e Entity, key string, value float64) error {
	keys := userClientKeys
	if _, ok := e.Get(IP); ok {
		keys = ipKeys
	}
	kind, ok := keys[key]
	if !ok {
		return invalid("Invalid configuration key " + key)
	}
	if !(value > 0) {
		return invalid("Quota " + key + " must be greater than 0")
	}
	switch kind {
	case kindInt:
		if value > math.MaxInt32 {
			return invalid("Proposed value for " + key + " is too large for an INT.")
		}
	case kindLong:
		if value > math.MaxInt64 {
			return invalid("Proposed value for " + key + " is too large for a LONG.")
		}
	case kindDouble:
		if math.IsInf(value, 0) {
			return invalid("Proposed value for " + key + " is not finite.")
		}
		return nil
	}
	if math.Abs(math.Mod(value, 1)) > 1e-6 {
		return invalid(key + " cannot be a fractional value.")
	}
	return nil
}

// InvalidError is a refusal Kafka answers with INVALID_REQUEST.
type InvalidError struct{ Msg string }

func (e *InvalidError) Error() string { return e.Msg }

func invalid(msg string) error { return &InvalidError{Msg: msg} }

// str is a pointer to s, for names.
func str(s string) *string { return &s }

// UserEntity and the others build the entities of the eight levels.
func UserEntity(user *string) Entity { return Entity{{Type: User, Name: user}} }

// ClientEntity is /config/clients/<client-id>.
func ClientEntity(client *string) Entity { return Entity{{Type: ClientID, Name: client}} }

// UserClientEntity is /config/users/<user>/clients/<client-id>.
func UserClientEntity(user, client *string) Entity {
	return Entity{{Type: ClientID, Name: client}, {Type: User, Name: user}}
}

// String is fmt's form, the same as Path.
func (p Part) String() string {
	if p.Name == nil {
		return fmt.Sprintf("%s=<default>", p.Type)
	}
	return p.Type + "=" + *p.Name
}
