package collect

import "github.com/prometheus/client_golang/prometheus"

// Reasons an event is rejected, the reason label of
// tributary_tracker_events_rejected_total.
const (
	ReasonMalformed    = "malformed_json"
	ReasonTooLarge     = "too_large"
	ReasonUnauthorized = "unauthorized"
	ReasonOrigin       = "origin_not_allowed"
	ReasonType         = "type_not_allowed"
	ReasonSchema       = "schema"
	ReasonRegistry     = "registry_schema" // the registry's JSON schema refused it
	ReasonUnavailable  = "unavailable"
	ReasonTimeout      = "read_timeout"
)

type metrics struct {
	requests   *prometheus.CounterVec
	duration   *prometheus.HistogramVec
	received   *prometheus.CounterVec
	accepted   *prometheus.CounterVec
	rejected   *prometheus.CounterVec
	duplicates *prometheus.CounterVec
	privacy    *prometheus.CounterVec
	invalidOut *prometheus.CounterVec
	unchecked  *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_tracker_requests_total", Help: "HTTP requests to the collector by endpoint and status code.",
		}, []string{"endpoint", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tributary_tracker_request_duration_seconds", Help: "Time to answer a collector request, Sink included.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"endpoint"}),
		received: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_tracker_events_received_total", Help: "Events received, by source (\"unknown\" before a write key is known).",
		}, []string{"source"}),
		accepted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_tracker_events_accepted_total", Help: "Events accepted by the Sink and acknowledged, by source.",
		}, []string{"source"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_tracker_events_rejected_total", Help: "Events refused, by source and reason.",
		}, []string{"source", "reason"}),
		duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_tracker_events_duplicate_total", Help: "Retried events dropped as duplicates of an accepted messageId.",
		}, []string{"source"}),
		privacy: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_tracker_events_privacy_dropped_total", Help: "Events dropped because they carried DNT or GPC and the tracker honours it.",
		}, []string{"source"}),
		invalidOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_tracker_invalid_forwarded_total", Help: "Invalid events sent raw to the source's invalid topic, by result (ok or error).",
		}, []string{"source", "result"}),
		unchecked: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_tracker_registry_unchecked_total", Help: "Events of a permissive source accepted without a check because the schema registry could not be asked.",
		}, []string{"source"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration, m.received, m.accepted, m.rejected, m.duplicates, m.privacy, m.invalidOut, m.unchecked)
	}
	return m
}
