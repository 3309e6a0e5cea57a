package share

import (
	"log/slog"
	"testing"
	"time"
)

// TestUnwatchLeavesNothing: wake channels taken and handed back, for 10,000
// share partitions, leave no entry; a channel taken twice stays until both
// fetches hand it back; and handing back a channel a release already
// closed does not drop the next fetch's channel.
func TestUnwatchLeavesNothing(t *testing.T) {
	m, err := NewManager(Config{MaxSize: 200, SessionTimeout: time.Second, HeartbeatInterval: 100 * time.Millisecond, MaxSessions: 20, DeliveryLimit: 5, MaxRecordLocks: 20, LockDuration: time.Minute}, nil, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10000; i++ {
		k := Key{Group: "g", Topic: [16]byte{1}, Partition: int32(i)}
		m.Unwatch(k, m.Released(k))
	}
	if n := m.Waiting(); n != 0 {
		t.Fatalf("%d wake channels left, want 0", n)
	}
	k := Key{Group: "g", Topic: [16]byte{1}}
	a, b := m.Released(k), m.Released(k)
	m.Unwatch(k, a)
	if m.Waiting() != 1 {
		t.Fatal("the second fetch's wake channel went with the first's")
	}
	m.Unwatch(k, b)
	old := m.Released(k)
	m.mu.Lock()
	m.signal(k)
	m.mu.Unlock()
	next := m.Released(k)
	m.Unwatch(k, old)
	if m.Waiting() != 1 {
		t.Fatal("handing back a closed channel dropped the next fetch's")
	}
	m.Unwatch(k, next)
	if m.Waiting() != 0 {
		t.Fatal("an entry is left")
	}
}
