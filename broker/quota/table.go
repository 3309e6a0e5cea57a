package quota

import (
	"maps"
	"sort"
	"strings"
	"unicode/utf8"
)

// Entry is one entity's quotas.
type Entry struct {
	Entity Entity
	Values map[string]float64
}

// Table is every configured quota. It is never changed: With returns a new
// Table sharing what did not change. The nil Table is empty.
type Table struct {
	entries map[string]Entry
}

// With is t after setting key of e to *value, or removing it (nil).
func (t *Table) With(e Entity, key string, value *float64) *Table {
	n := &Table{entries: map[string]Entry{}}
	if t != nil {
		n.entries = maps.Clone(t.entries)
	}
	k := e.Key()
	old := n.entries[k]
	vals := maps.Clone(old.Values)
	if vals == nil {
		vals = map[string]float64{}
	}
	if value == nil {
		delete(vals, key)
	} else {
		vals[key] = *value
	}
	if len(vals) == 0 {
		delete(n.entries, k)
	} else {
		n.entries[k] = Entry{Entity: e, Values: vals}
	}
	return n
}

// Get is e's quotas (nil when it has none).
func (t *Table) Get(e Entity) map[string]float64 {
	if t == nil {
		return nil
	}
	return t.entries[e.Key()].Values
}

// Entries is every entity with quotas, in key order.
func (t *Table) Entries() []Entry {
	if t == nil {
		return nil
	}
	keys := make([]string, 0, len(t.entries))
	for k := range t.entries {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]Entry, 0, len(keys))
	for _, k := range keys {
		out = append(out, t.entries[k])
	}
	return out
}

// Len is the number of entities with quotas.
func (t *Table) Len() int {
	if t == nil {
		return 0
	}
	return len(t.entries)
}

func (t *Table) has(e Entity, key string) (float64, bool) {
	v, ok := t.Get(e)[key]
	return v, ok
}

// Tags name the sensor a (user, client-id) pair records into, as Kafka's
// quota metric tags do: clients whose quota comes from the same level and
// entity share a sensor (every client-id of a user with a
// /config/users/<user> quota shares the user's), and "" stands for a
// part that does not split the sensor.
type Tags struct{ User, ClientID string }

// Resolve picks the quota key of a connection of user (the principal's
// name) with clientID, by Kafka's eight levels of precedence, most
// specific first:
//
//  1. /config/users/<user>/clients/<client-id>
//  2. /config/users/<user>/clients/<default>
//  3. /config/users/<user>
//  4. /config/users/<default>/clients/<client-id>
//  5. /config/users/<default>/clients/<default>
//  6. /config/users/<default>
//  7. /config/clients/<client-id>
//  8. /config/clients/<default>
//
// It returns the sensor's tags, and the bound (ok false: no quota, the
// client is not limited). Like Kafka's DefaultQuotaCallback, the level
// chooses the tags and the tags then choose the bound.
func (t *Table) Resolve(key, user, clientID string) (tags Tags, bound float64, ok bool) {
	u, c := &user, &clientID
	tags = t.tags(key, u, c)
	bound, ok = t.limit(key, tags)
	return tags, bound, ok
}

func (t *Table) tags(key string, u, c *string) Tags {
	has := func(e Entity) bool { _, ok := t.has(e, key); return ok }
	switch {
	case has(UserClientEntity(u, c)), has(UserClientEntity(u, nil)):
		return Tags{*u, *c}
	case has(UserEntity(u)):
		return Tags{*u, ""}
	case has(UserClientEntity(nil, c)), has(UserClientEntity(nil, nil)):
		return Tags{*u, *c}
	case has(UserEntity(nil)):
		return Tags{*u, ""}
	}
	return Tags{"", *c}
}

func (t *Table) limit(key string, tags Tags) (float64, bool) {
	u, c := &tags.User, &tags.ClientID
	var order []Entity
	switch {
	case tags.User != "" && tags.ClientID != "":
		order = []Entity{UserClientEntity(u, c), UserClientEntity(u, nil), UserClientEntity(nil, c), UserClientEntity(nil, nil)}
	case tags.User != "":
		order = []Entity{UserEntity(u), UserEntity(nil)}
	case tags.ClientID != "":
		order = []Entity{ClientEntity(c), ClientEntity(nil)}
	}
	for _, e := range order {
		if v, ok := t.has(e, key); ok {
			return v, true
		}
	}
	return 0, false
}

// IPLimit is the connection_creation_rate of ip: its own, else the
// default IP's.
func (t *Table) IPLimit(ip string) (float64, bool) {
	if v, ok := t.has(Entity{{Type: IP, Name: &ip}}, ConnectionCreationRate); ok {
		return v, true
	}
	return t.has(Entity{{Type: IP}}, ConnectionCreationRate)
}

// labelLen is the most of a user or client id a metric label carries:
// both are the client's to choose, and a label is kept per value.
const labelLen = 64

// Labels are t's user and client id as metric labels: valid UTF-8 (a
// Prometheus label must be) and at most labelLen bytes.
func (t Tags) Labels() (user, clientID string) {
	return label(t.User), label(t.ClientID)
}

func label(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= labelLen {
		return s
	}
	cut := labelLen
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
