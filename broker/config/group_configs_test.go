package config

import (
	"strings"
	"testing"
	"time"
)

// TestGroupConfigs: a group's configs are checked by name, type, the
// broker's bounds and the session/heartbeat order, each error naming the
// value; settings fall back to the broker's and are capped by its bounds.
func TestGroupConfigs(t *testing.T) {
	b, err := ParseBroker(map[string]string{"group.share.record.lock.duration.ms": "20000"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		values map[string]string
		want   string
	}{
		{map[string]string{"share.delivery.count.limit": "99"}, "Invalid value 99 for configuration share.delivery.count.limit: must be in the range 2 to 10 inclusive"},
		{map[string]string{"share.record.lock.duration.ms": "soon"}, "Invalid value soon for configuration share.record.lock.duration.ms: Not a number"},
		{map[string]string{"share.auto.offset.reset": "by_duration:PT1H"}, "Invalid value by_duration:PT1H for configuration share.auto.offset.reset: must be one of latest, earliest"},
		{map[string]string{"share.isolation.level": "serializable"}, "Invalid value serializable for configuration share.isolation.level"},
		{map[string]string{"streams.session.timeout.ms": "45000"}, "Unknown group config name: streams.session.timeout.ms"},
		{map[string]string{"consumer.session.timeout.ms": "45000", "consumer.heartbeat.interval.ms": "15000"}, ""},
		{map[string]string{"share.heartbeat.interval.ms": "15000", "share.session.timeout.ms": "45000"}, ""},
	} {
		err := b.ValidateGroupConfigs(tc.values)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.values, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want one saying %q", tc.values, err, tc.want)
		}
	}
	// The session timeout must stay above the heartbeat interval, the one
	// not set counting at its default.
	lowB, err := ParseBroker(map[string]string{"group.share.min.session.timeout.ms": "1000", "group.share.min.heartbeat.interval.ms": "1000"})
	if err != nil {
		t.Fatal(err)
	}
	if err := lowB.ValidateGroupConfigs(map[string]string{"share.session.timeout.ms": "4000"}); err == nil || !strings.Contains(err.Error(), "Invalid value 4000 for configuration share.session.timeout.ms: share.session.timeout.ms must be greater than share.heartbeat.interval.ms (5000)") {
		t.Errorf("a session timeout below the default heartbeat interval: %v", err)
	}

	s := b.GroupSettingsOf(map[string]string{"share.auto.offset.reset": "earliest", "share.delivery.count.limit": "3"})
	if s.ShareAutoOffsetReset != "earliest" || s.ShareDeliveryLimit != 3 || s.ShareLockDuration != 20*time.Second || s.ShareIsolationLevel != "read_uncommitted" || s.ConsumerSessionTimeout != 45*time.Second {
		t.Errorf("settings %+v", s)
	}
	// A value stored before the broker's bounds were narrowed is capped.
	if s := b.GroupSettingsOf(map[string]string{"share.record.lock.duration.ms": "3600000"}); s.ShareLockDuration != time.Minute {
		t.Errorf("a lock duration above group.share.max.record.lock.duration.ms: %v, want it capped to 1m", s.ShareLockDuration)
	}
	if got := b.GroupDefault("share.record.lock.duration.ms"); got != "20000" {
		t.Errorf("default %s, want the broker's 20000", got)
	}
}
