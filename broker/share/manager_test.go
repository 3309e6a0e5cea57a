package share

import (
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestManagerBounds: group.share.max.size refuses members past it, and a
// group whose members all timed out stays, empty, as Kafka keeps a share
// group until it is deleted (it was assigned partitions: expireEmpty
// keeps it).
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
	// The simple assignor spreads the 3 partitions: a alone reads all
	// 3, then b joins and gets one or two of them.
	n := func(r *kmsg.ShareGroupHeartbeatResponse) int {
		if r.Assignment == nil || len(r.Assignment.TopicPartitions) == 0 {
			return 0
		}
		return len(r.Assignment.TopicPartitions[0].Partitions)
	}
	if r := join("a"); r.ErrorCode != 0 || n(r) != 3 {
		t.Fatalf("join a: %v %+v", kerr.ErrorForCode(r.ErrorCode), r.Assignment)
	}
	if r := join("b"); r.ErrorCode != 0 || n(r) < 1 || n(r) > 2 {
		t.Fatalf("join b: %v %+v", kerr.ErrorForCode(r.ErrorCode), r.Assignment)
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
	if gs := m.Groups(); len(gs) != 1 || gs[0].State != "Empty" {
		t.Fatalf("after its members timed out: %+v, want g, Empty", gs)
	}
}
