package server

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkObserve is what the request metrics cost every request: the
// API's count, its version's count and its latency.
func BenchmarkObserve(b *testing.B) {
	m := newMetrics(prometheus.NewRegistry())
	b.ReportAllocs()
	for i := range b.N {
		m.observe(kmsg.Produce.Int16(), int16(9+i%3), time.Millisecond, nil)
	}
}
