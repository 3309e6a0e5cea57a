package tail

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// Kinds of rotation, the kind label of tributary_tracker_tail_rotations_total.
const (
	rotateRename   = "rename"   // a followed file left the globs (renamed or deleted)
	rotateTruncate = "truncate" // a followed file was truncated or rewritten in place
	rotateCopy     = "copy"     // a new file was recognised as a copy of truncated content
)

type metrics struct {
	read      *prometheus.CounterVec
	sent      *prometheus.CounterVec
	errors    *prometheus.CounterVec
	rotations *prometheus.CounterVec
	files     *prometheus.GaugeVec
	position  *prometheus.GaugeVec
	lag       *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		read: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_tracker_tail_lines_read_total", Help: "Complete lines read from tailed files, by input."},
			[]string{"input"}),
		sent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_tracker_tail_lines_sent_total", Help: "Records from tailed lines acknowledged by the broker (acks=all), by input; invalid lines sent to <topic>.invalid included."},
			[]string{"input"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_tracker_tail_errors_total", Help: "Tailer errors by input and reason: invalid_json, invalid_combined, line_too_long, produce, too_large, read, checkpoint."},
			[]string{"input", "reason"}),
		rotations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tributary_tracker_tail_rotations_total", Help: "Rotations seen, by input and kind: rename, truncate, copy."},
			[]string{"input", "kind"}),
		files: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tributary_tracker_tail_files", Help: "Files followed, by input (rotated files still being read included)."},
			[]string{"input"}),
		position: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tributary_tracker_tail_position_bytes", Help: "Acknowledged position in each followed file: every line before it is in the broker."},
			[]string{"input", "file"}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "tributary_tracker_tail_lag_bytes", Help: "Bytes of each followed file not yet acknowledged by the broker (size - position)."},
			[]string{"input", "file"}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.read, m.sent, m.errors, m.rotations, m.files, m.position, m.lag} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("tracker/tail: registering metrics: %w", err)
		}
	}
	return m, nil
}
