package share

import (
	"log/slog"
	"testing"
	"time"
)

// TestReleaseWakesOnlyItsPartition: records released in one share
// partition wake the fetches waiting on it, not those waiting on another
// partition of the same group or on the same partition of another group;
// a member leaving wakes only the partitions where it held records.
func TestReleaseWakesOnlyItsPartition(t *testing.T) {
	m, err := NewManager(Config{MaxSize: 200, SessionTimeout: time.Second, HeartbeatInterval: 100 * time.Millisecond, MaxSessions: 20, DeliveryLimit: 5, MaxRecordLocks: 20, LockDuration: time.Minute, AutoOffsetReset: "earliest"}, nil, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	k1 := Key{Group: "g", Topic: [16]byte{1}, Partition: 0}
	k2 := Key{Group: "g", Topic: [16]byte{1}, Partition: 1}
	k3 := Key{Group: "h", Topic: [16]byte{1}, Partition: 0}
	got, _ := m.Acquire(k1, 0, "a", 3, 10, 0)
	m.Acquire(k2, 0, "b", 3, 10, 0)
	m.Acquire(k3, 0, "a", 3, 10, 0)
	w1, w2, w3 := m.Released(k1), m.Released(k2), m.Released(k3)
	woke := func(w <-chan struct{}) bool {
		select {
		case <-w:
			return true
		default:
			return false
		}
	}
	if e := m.Acknowledge(k1, 0, "a", []AckBatch{{First: got[0].First, Last: got[0].First, Types: []int8{AckRelease}}}); e != nil {
		t.Fatal(e)
	}
	if !woke(w1) || woke(w2) || woke(w3) {
		t.Fatalf("a release in %v woke: own %v, other partition %v, other group %v", k1, woke(w1), woke(w2), woke(w3))
	}
	// b leaves group g: only k2, where it held records, wakes.
	w1 = m.Released(k1)
	m.CloseSession("g", "b")
	if woke(w1) || !woke(w2) || woke(w3) {
		t.Fatalf("b leaving woke: k1 %v, k2 %v, k3 %v", woke(w1), woke(w2), woke(w3))
	}
}
