package replica

import (
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker/cluster"
)

// TestQuotaHoldsTheRate drives a quota as a throttled follower does (fetch
// while nothing is owed, charge what came) over a simulated minute: the
// bytes moved stay within one fetch of rate × time.
func TestQuotaHoldsTheRate(t *testing.T) {
	const rate, fetch = 1_000_000, 1 << 20
	var q quota
	now := time.Unix(0, 0)
	var moved int64
	for end := now.Add(time.Minute); now.Before(end); {
		if w := q.wait(rate, now); w > 0 {
			now = now.Add(w)
			continue
		}
		q.record(rate, fetch, now)
		moved += fetch
		now = now.Add(10 * time.Millisecond) // the round trip
	}
	if want := int64(rate * 60); moved < want-fetch || moved > want+fetch {
		t.Errorf("moved %d bytes in a minute at %d B/s, want %d ± one fetch", moved, rate, want)
	}
	if w := q.wait(unlimited, now); w != 0 {
		t.Errorf("an unlimited rate waits %v", w)
	}
}

func TestThrottlesOf(t *testing.T) {
	topic := func(leader, follower string) *cluster.Topic {
		return &cluster.Topic{Configs: map[string]string{
			"leader.replication.throttled.replicas":   leader,
			"follower.replication.throttled.replicas": follower,
		}}
	}
	for _, tc := range []struct {
		leader, follower string
		partition, self  int32
		want             throttles
	}{
		{"0:1,0:2", "0:3", 0, 1, throttles{leader: true}},
		{"0:1,0:2", "0:3", 0, 3, throttles{follower: true}},
		{"0:1,0:2", "0:3", 1, 3, throttles{}},
		{"*", "*", 7, 9, throttles{leader: true, follower: true}},
		{"", "", 0, 1, throttles{}},
		{"bad", "0:x", 0, 1, throttles{}},
	} {
		if got := throttlesOf(topic(tc.leader, tc.follower), tc.partition, tc.self); got != tc.want {
			t.Errorf("leader %q follower %q, partition %d on %d: %+v, want %+v", tc.leader, tc.follower, tc.partition, tc.self, got, tc.want)
		}
	}
}
