package quota

import (
	"sync"
	"time"
)

// Manager measures what every client does against its quota and says how
// long to throttle it. It reads the quotas of the moment from table on
// every call, so a change in the metadata applies to the next request.
type Manager struct {
	w     Window
	table func() *Table
	// Expired is called (under no lock of the caller's) with the sensors
	// dropped after an hour without use, so their metrics can go too.
	Expired func(key string, tags Tags)
	// MaxSensors, when positive, replaces the package's MaxSensors.
	MaxSensors int

	mu        sync.Mutex
	sensors   map[sensorKey]*sensor
	lastSweep time.Time
}

type sensorKey struct {
	key  string
	tags Tags
}

type sensor struct {
	r    rate
	used time.Time
	// The token bucket of controller_mutation_rate (KIP-599): tokens
	// refill at the quota's rate up to Samples×Size seconds of it, each
	// partition created or deleted takes one, and a request finding the
	// bucket below zero is refused.
	tokens   float64
	tokensAt time.Time
	bucket   bool // tokens is in use
}

// sensorIdle is how long a sensor is kept without use, as Kafka's
// inactive sensor expiry (one hour).
const sensorIdle = time.Hour

// NewManager measures over w the quotas table returns.
func NewManager(w Window, table func() *Table) *Manager {
	if w.Samples < 1 {
		w.Samples = 1
	}
	if w.Size <= 0 {
		w.Size = time.Second
	}
	return &Manager{w: w, table: table, sensors: map[sensorKey]*sensor{}}
}

// Table is the quotas of the moment.
func (m *Manager) Table() *Table { return m.table() }

// Window is the manager's sample window.
func (m *Manager) Window() Window { return m.w }

// Active is whether any client quota is configured at all: without one,
// callers skip the measuring altogether.
func (m *Manager) Active() bool { return m.table().Len() > 0 }

// MaxSensors bounds the sensors kept: client ids are the client's to
// choose, and a quota for every client id (<default>) would otherwise let
// anyone grow the broker's memory and its metrics without limit. Past it,
// new clients share one sensor, Overflow, per quota and per kind of entity
// (and are throttled together).
const MaxSensors = 10000

// Overflow is the user or client id the clients beyond MaxSensors are
// measured and reported as.
const Overflow = "<overflow>"

// sensor is k's sensor and the tags it is measured as (k's, or Overflow's
// when the manager is full); mu must be held.
func (m *Manager) sensor(k sensorKey, now time.Time) (*sensor, Tags) {
	s := m.sensors[k]
	if s == nil && len(m.sensors) >= m.maxSensors() {
		if k.tags.User != "" {
			k.tags.User = Overflow
		}
		if k.tags.ClientID != "" {
			k.tags.ClientID = Overflow
		}
		s = m.sensors[k]
	}
	if s == nil {
		s = &sensor{r: rate{w: m.w}}
		m.sensors[k] = s
	}
	s.used = now
	return s, k.tags
}

func (m *Manager) maxSensors() int {
	if m.MaxSensors > 0 {
		return m.MaxSensors
	}
	return MaxSensors
}

// Record adds v to the rate of key (producer_byte_rate: request bytes,
// consumer_byte_rate: response bytes, request_percentage: percent of a
// second spent handling) for the client, and says how long it must be
// throttled. limited is false when no quota applies to it (nothing is
// recorded then).
func (m *Manager) Record(key, user, clientID string, v float64, now time.Time) (throttle time.Duration, tags Tags, limited bool) {
	tags, bound, ok := m.table().Resolve(key, user, clientID)
	if !ok {
		return 0, tags, false
	}
	m.mu.Lock()
	s, tags := m.sensor(sensorKey{key, tags}, now)
	s.r.record(v, now)
	throttle = s.r.throttle(bound, now)
	if key == RequestPercentage {
		// Kafka bounds a request-time throttle by one sample window
		// (ClientRequestQuotaManager): a slow request says little about
		// the next.
		throttle = min(throttle, m.w.Size)
	}
	expired := m.sweep(now)
	m.mu.Unlock()
	m.expire(expired)
	return throttle, tags, true
}

// Unrecord takes back v recorded at now: a throttled fetch answers with no
// records, so its bytes must not count, as Kafka's unrecordQuotaSensor.
func (m *Manager) Unrecord(key, user, clientID string, v float64, now time.Time) {
	tags, _, ok := m.table().Resolve(key, user, clientID)
	if !ok {
		return
	}
	m.mu.Lock()
	s, _ := m.sensor(sensorKey{key, tags}, now)
	s.r.record(-v, now)
	m.mu.Unlock()
}

// MaxInWindow is the most a single response may carry without being
// throttled for certain: Kafka caps a consumer's fetch at this many bytes
// (getMaxValueInQuotaWindow), so that one answer never owes minutes.
func (m *Manager) MaxInWindow(key, user, clientID string) (float64, bool) {
	_, bound, ok := m.table().Resolve(key, user, clientID)
	if !ok {
		return 0, false
	}
	return bound * float64(max(m.w.Samples-1, 1)) * m.w.Size.Seconds(), true
}

// refill brings the bucket of s up to now.
func (m *Manager) refill(s *sensor, bound float64, now time.Time) {
	burst := bound * float64(m.w.Samples) * m.w.Size.Seconds()
	if !s.bucket {
		s.tokens, s.tokensAt, s.bucket = burst, now, true // a new bucket starts full
	}
	s.tokens = min(burst, s.tokens+now.Sub(s.tokensAt).Seconds()*bound)
	s.tokensAt = now
}

// MutationThrottle is, before a CreateTopics, CreatePartitions or
// DeleteTopics, how long the client must wait because its
// controller_mutation_rate is spent (zero: go ahead).
func (m *Manager) MutationThrottle(user, clientID string, now time.Time) (time.Duration, Tags, bool) {
	tags, bound, ok := m.table().Resolve(ControllerMutationRate, user, clientID)
	if !ok {
		return 0, tags, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, tags := m.sensor(sensorKey{ControllerMutationRate, tags}, now)
	m.refill(s, bound, now)
	if s.tokens >= 0 {
		return 0, tags, true
	}
	return time.Duration(-s.tokens / bound * float64(time.Second)), tags, true
}

// RecordMutations takes n partitions from the client's bucket after an
// accepted mutation, and says how long the client should now wait.
func (m *Manager) RecordMutations(user, clientID string, n int, now time.Time) time.Duration {
	tags, bound, ok := m.table().Resolve(ControllerMutationRate, user, clientID)
	if !ok || n <= 0 {
		return 0
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s, _ := m.sensor(sensorKey{ControllerMutationRate, tags}, now)
	m.refill(s, bound, now)
	s.tokens -= float64(n)
	if s.tokens >= 0 {
		return 0
	}
	return time.Duration(-s.tokens / bound * float64(time.Second))
}

// sweep drops sensors idle for sensorIdle, at most once a minute; mu must
// be held.
func (m *Manager) sweep(now time.Time) []sensorKey {
	if now.Sub(m.lastSweep) < time.Minute {
		return nil
	}
	m.lastSweep = now
	var out []sensorKey
	for k, s := range m.sensors {
		if now.Sub(s.used) > sensorIdle {
			delete(m.sensors, k)
			out = append(out, k)
		}
	}
	return out
}

func (m *Manager) expire(keys []sensorKey) {
	if m.Expired == nil {
		return
	}
	for _, k := range keys {
		m.Expired(k.key, k.tags)
	}
}

// Sensors is the number of sensors kept (for tests and metrics).
func (m *Manager) Sensors() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sensors)
}
