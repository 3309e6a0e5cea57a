package server

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// metrics are the broker's Prometheus series, named as Kafka's JMX metrics
// are known to operators where an equivalent exists.
type metrics struct {
	requests       *prometheus.CounterVec
	requestErrors  *prometheus.CounterVec
	latency        *prometheus.HistogramVec
	connections    prometheus.Gauge
	rejectedFrames prometheus.Counter
	bytesIn        prometheus.Counter
	bytesOut       prometheus.Counter
	messagesIn     prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_broker_requests_total", Help: "Requests served, by API."}, []string{"api"}),
		requestErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_broker_request_failures_total", Help: "Requests that closed their connection, by API."}, []string{"api"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tributary_broker_request_seconds", Help: "Time to handle a request, by API (long-polling fetches included).",
			Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"api"}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tributary_broker_connections", Help: "Open client connections."}),
		rejectedFrames: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_broker_rejected_frames_total", Help: "Frames refused for their size."}),
		bytesIn: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_broker_bytes_in_total", Help: "Record bytes appended by producers."}),
		bytesOut: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_broker_bytes_out_total", Help: "Record bytes sent to fetchers."}),
		messagesIn: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tributary_broker_messages_in_total", Help: "Records appended by producers."}),
	}
	reg.MustRegister(m.requests, m.requestErrors, m.latency, m.connections, m.rejectedFrames, m.bytesIn, m.bytesOut, m.messagesIn)
	return m
}

func (m *metrics) observe(key int16, d time.Duration, err error) {
	api := kmsg.NameForKey(key)
	m.requests.WithLabelValues(api).Inc()
	m.latency.WithLabelValues(api).Observe(d.Seconds())
	if err != nil {
		m.requestErrors.WithLabelValues(api).Inc()
	}
}
