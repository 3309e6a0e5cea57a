package share

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestExpireManyGroups (review M3): a tick in which the one member of
// each of many groups times out costs one pass over the groups and the
// share partitions, not one per member (which held the lock for seconds
// with a few thousand groups). Every member's records come back, and
// groups with state stay.
func TestExpireManyGroups(t *testing.T) {
	m, err := NewManager(Config{MaxSize: 200, SessionTimeout: time.Second, HeartbeatInterval: 100 * time.Millisecond, MaxSessions: 2000, DeliveryLimit: 5, MaxRecordLocks: 2000, LockDuration: time.Hour, AutoOffsetReset: "earliest"}, nil, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	m.now = func() time.Time { return now }
	topics := map[string]TopicMeta{"t": {ID: [16]byte{1}, Partitions: 1}}
	const groups = 6000
	for i := 0; i < groups; i++ {
		r := kmsg.NewPtrShareGroupHeartbeatRequest()
		r.GroupID, r.MemberID, r.SubscribedTopicNames = fmt.Sprint("g", i), "m", []string{"t"}
		m.Heartbeat(HeartbeatRequest{ShareGroupHeartbeatRequest: r}, topics, false)
		m.Acquire(Key{Group: r.GroupID, Topic: [16]byte{1}}, 0, "m", 1, 10, 0)
	}
	now = now.Add(2 * time.Second)
	start := time.Now()
	m.expire()
	took := time.Since(start)
	// About 10 ms here when linear, over 5 s (under -race) when each
	// expired member scanned every partition.
	if took > 2*time.Second {
		t.Errorf("one tick expiring %d members held the lock %v", groups, took)
	}
	if st, n := m.parts[Key{Group: "g7", Topic: [16]byte{1}}].State(0); st != Available || n != 1 {
		t.Errorf("g7's record after its member expired: %v, %d deliveries; want available", st, n)
	}
	if len(m.groups) != groups {
		t.Errorf("%d groups left, want %d (each has share state)", len(m.groups), groups)
	}
}

// TestGroupBound (review M3): past the broker's bound on share groups a
// new group is GROUP_MAX_SIZE_REACHED, from a heartbeat or an offsets
// reset; existing groups go on.
func TestGroupBound(t *testing.T) {
	m, err := NewManager(Config{MaxSize: 200, SessionTimeout: time.Second, HeartbeatInterval: 100 * time.Millisecond, MaxSessions: 20, DeliveryLimit: 5, MaxRecordLocks: 20, LockDuration: time.Second}, nil, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	m.maxGroups = 2
	topics := map[string]TopicMeta{"t": {ID: [16]byte{1}, Partitions: 1}}
	join := func(group, member string) int16 {
		r := kmsg.NewPtrShareGroupHeartbeatRequest()
		r.GroupID, r.MemberID, r.SubscribedTopicNames = group, member, []string{"t"}
		return m.Heartbeat(HeartbeatRequest{ShareGroupHeartbeatRequest: r}, topics, false).ErrorCode
	}
	if join("g1", "a") != 0 || join("g2", "a") != 0 {
		t.Fatal("the first two groups were refused")
	}
	if code := join("g3", "a"); code != kerr.GroupMaxSizeReached.Code {
		t.Errorf("a third group: %v, want GROUP_MAX_SIZE_REACHED", kerr.ErrorForCode(code))
	}
	if err := adminGroup(m, "g4", true); err != kerr.GroupMaxSizeReached {
		t.Errorf("a third group by AdminGroup: %v, want GROUP_MAX_SIZE_REACHED", err)
	}
	if join("g1", "b") != 0 {
		t.Error("a member joining an existing group was refused")
	}
}

// TestUnacquireWakesOnlyOnReturn (review L2): giving back nothing wakes
// no waiting fetch; giving back records does.
func TestUnacquireWakesOnlyOnReturn(t *testing.T) {
	m, err := NewManager(Config{MaxSize: 200, SessionTimeout: time.Second, HeartbeatInterval: 100 * time.Millisecond, MaxSessions: 20, DeliveryLimit: 5, MaxRecordLocks: 20, LockDuration: time.Minute, AutoOffsetReset: "earliest"}, nil, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Group: "g", Topic: [16]byte{1}}
	got, _ := m.Acquire(k, 0, "a", 2, 10, 0)
	w := m.Released(k)
	m.Unacquire(k, "b", got, 0) // b holds nothing
	select {
	case <-w:
		t.Fatal("an Unacquire that returned nothing woke the waiting fetches")
	default:
	}
	m.Unacquire(k, "a", got, 1)
	select {
	case <-w:
	default:
		t.Fatal("an Unacquire that returned a record woke nobody")
	}
}
