package config

import (
	"strings"
	"testing"
)

// TestConsumerGroupBounds: group.consumer.* timeouts outside their min/max,
// or a heartbeat interval not below the session timeout, refuse to start,
// as Kafka's GroupCoordinatorConfig; lowered bounds let them through.
func TestConsumerGroupBounds(t *testing.T) {
	for _, tc := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"group.consumer.heartbeat.interval.ms": "500"}, "group.consumer.heartbeat.interval.ms=500 must be between group.consumer.min.heartbeat.interval.ms=5000 and group.consumer.max.heartbeat.interval.ms=15000"},
		{map[string]string{"group.consumer.session.timeout.ms": "70000"}, "group.consumer.session.timeout.ms=70000 must be between"},
		{map[string]string{"group.consumer.min.session.timeout.ms": "70000"}, "group.consumer.min.session.timeout.ms=70000 is larger than group.consumer.max.session.timeout.ms=60000"},
		{map[string]string{"group.consumer.heartbeat.interval.ms": "15000", "group.consumer.session.timeout.ms": "15000", "group.consumer.min.session.timeout.ms": "1000"},
			"group.consumer.heartbeat.interval.ms=15000 must be less than group.consumer.session.timeout.ms=15000"},
		{map[string]string{"group.consumer.assignors": "uniform,sticky"}, `"sticky" must be one of uniform, range`},
	} {
		_, err := ParseBroker(tc.props)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one saying %q", tc.props, err, tc.want)
		}
	}
	if _, err := ParseBroker(map[string]string{"group.consumer.heartbeat.interval.ms": "500", "group.consumer.min.heartbeat.interval.ms": "500"}); err != nil {
		t.Errorf("a 500 ms interval with its minimum lowered: %v", err)
	}
}
