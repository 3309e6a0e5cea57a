package share

import (
	"log/slog"
	"testing"
	"time"
)

// TestIsolationLevelLifecycle: share.isolation.level goes with its group
// (a group recreated under the same id reads read_uncommitted again, as
// its share.auto.offset.reset goes back to the default), and changing it
// wakes the group's waiting fetches, not another group's (review L2).
func TestIsolationLevelLifecycle(t *testing.T) {
	m, err := NewManager(Config{MaxSize: 200, SessionTimeout: time.Second, HeartbeatInterval: 100 * time.Millisecond, MaxSessions: 20, DeliveryLimit: 5, MaxRecordLocks: 20, LockDuration: time.Minute}, nil, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Group: "g", Topic: [16]byte{1}}
	other := Key{Group: "h", Topic: [16]byte{1}}
	m.SetReadCommitted("g", true)
	w, wo := m.Released(k), m.Released(other)
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	m.SetReadCommitted("g", false)
	if !closed(w) || closed(wo) {
		t.Fatalf("switching g to read_uncommitted woke g's fetch: %v, h's: %v; want true, false", closed(w), closed(wo))
	}
	m.SetReadCommitted("g", true)
	m.mu.Lock()
	m.groups["g"] = &group{id: "g", members: map[string]*member{}}
	m.mu.Unlock()
	if e := m.DeleteGroup("g"); e != nil {
		t.Fatal(e)
	}
	if m.ReadCommitted("g") {
		t.Fatal("a deleted group's share.isolation.level stayed read_committed")
	}
}
