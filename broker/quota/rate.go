package quota

import (
	"sync"
	"time"
)

// Window is quota.window.num samples of quota.window.size.seconds each.
type Window struct {
	Samples int
	Size    time.Duration
}

// DefaultWindow is Kafka's: 11 samples of one second.
var DefaultWindow = Window{Samples: 11, Size: time.Second}

// sample is the sum recorded since start.
type sample struct {
	start time.Time
	value float64
}

// rate is Kafka's Rate over a SampledStat: values summed into rotating
// samples, a sample starting at the first record after the previous one's
// window ended; the rate is the sum of the samples younger than
// Samples×Size, over the time since the oldest began, counted as at least
// Samples-1 full windows so that the first records after a quiet spell
// are not a rate of infinity. Not safe for concurrent use.
//
// This is the SampledStat of Kafka 3.x. Kafka 4 keeps one more sample,
// which may overlap the window, and expires samples by their last record:
// tried here, it let a consumer through at 1.08× its quota (1.22× with 3
// samples) in TestClientQuotas, where this one keeps within 0.93-1.05×.
type rate struct {
	w       Window
	samples []sample
	cur     int
}

func (r *rate) record(v float64, now time.Time) {
	if len(r.samples) == 0 {
		r.samples = append(r.samples, sample{start: now})
	} else if now.Sub(r.samples[r.cur].start) >= r.w.Size {
		r.cur = (r.cur + 1) % r.w.Samples
		if r.cur >= len(r.samples) {
			r.samples = append(r.samples, sample{start: now})
		} else {
			r.samples[r.cur] = sample{start: now}
		}
	}
	r.samples[r.cur].value += v
}

// purge resets the samples too old to count, as Kafka's
// purgeObsoleteSamples does.
func (r *rate) purge(now time.Time) {
	expire := time.Duration(r.w.Samples) * r.w.Size
	for i := range r.samples {
		if now.Sub(r.samples[i].start) >= expire {
			r.samples[i] = sample{start: now}
		}
	}
}

// windowSize is the span the rate divides by.
func (r *rate) windowSize(now time.Time) time.Duration {
	oldest := now
	for _, s := range r.samples {
		if s.start.Before(oldest) {
			oldest = s.start
		}
	}
	elapsed := now.Sub(oldest)
	full := int(elapsed / r.w.Size)
	if min := r.w.Samples - 1; full < min {
		elapsed += time.Duration(min-full) * r.w.Size
	}
	return elapsed
}

// value is the rate per second at now.
func (r *rate) value(now time.Time) float64 {
	r.purge(now)
	var sum float64
	for _, s := range r.samples {
		sum += s.value
	}
	ws := r.windowSize(now)
	if ws <= 0 {
		return 0
	}
	return sum / ws.Seconds()
}

// throttle is how long the client must wait for the rate to come back to
// bound, if no more is recorded: Kafka's QuotaUtils.throttleTime,
// (rate-bound)/bound of the window the rate was measured over. Zero when
// the rate is within the bound.
func (r *rate) throttle(bound float64, now time.Time) time.Duration {
	v := r.value(now)
	if v <= bound {
		return 0
	}
	ms := (v - bound) / bound * float64(r.windowSize(now).Milliseconds())
	return time.Duration(ms+0.5) * time.Millisecond
}

// EventRate is a rate of events against a bound that may change, safe for
// concurrent use: Kafka's connection creation rates
// (max.connection.creation.rate, connection_creation_rate).
type EventRate struct {
	mu   sync.Mutex
	r    rate
	used time.Time
}

// NewEventRate measures over w.
func NewEventRate(w Window) *EventRate { return &EventRate{r: rate{w: w}} }

// Record counts one event at now and returns how long to wait for the
// rate to come back to bound (zero: within it).
func (e *EventRate) Record(bound float64, now time.Time) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.used = now
	e.r.record(1, now)
	return e.r.throttle(bound, now)
}

// Unrecord takes back an event refused: it does not count.
func (e *EventRate) Unrecord(now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.r.record(-1, now)
}

// Idle is whether nothing was recorded since before.
func (e *EventRate) Idle(before time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.used.Before(before)
}
