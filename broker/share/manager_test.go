package share

import (
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestManagerBounds: group.share.max.size refuses members past it, and a
// group whose members all timed out, with no state, is forgotten.
func TestManagerBounds(t *testing.T) {
	m, err := NewManager(Config{MaxSize: 2, SessionTimeout: time.Second, HeartbeatInterval: 100 * time.Millisecond, MaxSessions: 1, DeliveryLimit: 5, MaxRecordLocks: 10, LockDuration: time.Second}, nil, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	m.now = func() time.Time { return now }
	topics := map[string]TopicMeta{"t": {ID: [16]byte{1}, Partitions: 3}}
	join := func(id string) *kmsg.ShareGroupHeartbeatResponse {
		r := kmsg.NewPtrShareGroupHeartbeatRequest()
		r.GroupID, r.MemberID, r.SubscribedTopicNames = "g", id, []string{"t"}
		return m.Heartbeat(HeartbeatRequest{ShareGroupHeartbeatRequest: r}, topics, false)
	}
	for _, id := range []string{"a", "b"} {
		if r := join(id); r.ErrorCode != 0 || len(r.Assignment.TopicPartitions[0].Partitions) != 3 {
			t.Fatalf("join %s: %v %+v", id, kerr.ErrorForCode(r.ErrorCode), r.Assignment)
		}
	}
	if r := join("c"); r.ErrorCode != kerr.GroupMaxSizeReached.Code {
		t.Fatalf("third member: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	if _, code := m.Session(1, "g", "a", 0, nil, nil, false); code != nil {
		t.Fatal(code)
	}
	if _, code := m.Session(2, "g", "b", 0, nil, nil, false); code != kerr.ShareSessionLimitReached {
		t.Fatalf("second session: %v", code)
	}
	now = now.Add(2 * time.Second)
	m.expire()
	if m.Has("g") {
		t.Fatal("a group with no members and no state is still there")
	}
}
