package share

import (
	"log/slog"
	"testing"
	"time"

	"github.com/tributary-io/tributary/broker/config"
)

// TestIsolationLevelChangeWakes: share.isolation.level comes from the
// group configs of the metadata log, and changing it wakes the group's
// waiting fetches, not another group's (review L2): one waiting at the
// last stable offset may have records to take now.
func TestIsolationLevelChangeWakes(t *testing.T) {
	m, err := NewManager(Config{MaxSize: 200, SessionTimeout: time.Second, HeartbeatInterval: 100 * time.Millisecond, MaxSessions: 20, DeliveryLimit: 5, MaxRecordLocks: 20, LockDuration: time.Minute, IsolationLevel: "read_uncommitted"}, nil, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Group: "g", Topic: [16]byte{1}}
	other := Key{Group: "h", Topic: [16]byte{1}}
	committed := config.GroupSettings{ShareIsolationLevel: "read_committed"}
	m.SetGroupSettings(map[string]config.GroupSettings{"g": committed})
	if !m.ReadCommitted("g") || m.ReadCommitted("h") {
		t.Fatalf("read_committed: g %v, h %v; want true, false", m.ReadCommitted("g"), m.ReadCommitted("h"))
	}
	w, wo := m.Released(k), m.Released(other)
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	m.SetGroupSettings(map[string]config.GroupSettings{})
	if !closed(w) || closed(wo) {
		t.Fatalf("switching g back to read_uncommitted woke g's fetch: %v, h's: %v; want true, false", closed(w), closed(wo))
	}
	if m.ReadCommitted("g") {
		t.Fatal("g still reads read_committed once its config is gone")
	}
}
