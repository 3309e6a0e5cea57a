package config

import (
	"strings"
	"testing"
)

func TestRequestPoolAndConnectionLimitsConfig(t *testing.T) {
	for _, c := range []struct {
		props map[string]string
		pool  int64
		err   string
	}{
		{props: nil, pool: 512 << 20},
		// Raising the frame limit alone raises the default pool with it.
		{props: map[string]string{"socket.request.max.bytes": "1073741824"}, pool: 1 << 30},
		{props: map[string]string{"queued.max.request.bytes": "-1"}, pool: -1},
		{props: map[string]string{"queued.max.request.bytes": "1048576"}, err: "queued.max.request.bytes=1048576 must be -1 or at least socket.request.max.bytes=104857600"},
		{props: map[string]string{"queued.max.request.bytes": "0"}, err: "must be -1 (unbounded) or at least 1"},
		{props: map[string]string{"max.connections.per.ip.overrides": "10.0.0.1:5,[::1]:2"}, pool: 512 << 20},
		{props: map[string]string{"max.connections.per.ip.overrides": "10.0.0.1"}, err: `"10.0.0.1" is not host:count`},
		{props: map[string]string{"max.connections.per.ip.overrides": "10.0.0.1:-2"}, err: "the count must be a number of at least 0"},
	} {
		b, err := ParseBroker(c.props)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: error %v, want one saying %q", c.props, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", c.props, err)
			continue
		}
		if got := b.QueuedMaxRequestBytes(); got != c.pool {
			t.Errorf("%v: pool %d, want %d", c.props, got, c.pool)
		}
	}
	b, err := ParseBroker(map[string]string{"max.connections.per.ip.overrides": "10.0.0.1:5, [::1]:2,db.internal:0"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.ConnectionsPerIPOverrides()
	if err != nil || len(got) != 3 || got["10.0.0.1"] != 5 || got["::1"] != 2 || got["db.internal"] != 0 {
		t.Errorf("overrides parsed as %v, %v", got, err)
	}
}
