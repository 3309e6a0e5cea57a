package server

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestShareFetchStranger: a client that never joined sends ShareFetch
// under 300 made-up group ids, and under a real group with a made-up
// member. Each is refused (GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID) and
// leaves no share partition and no wake channel behind (review M1); a
// member that long-polls an empty partition leaves no wake channel
// either once its fetch returns.
func TestShareFetchStranger(t *testing.T) {
	t.Parallel()
	s := startAdminBroker(t, shareProps)
	id := admCreateTopic(t, s, "strange", 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := admClient(t, s).ProduceSync(ctx, &kgo.Record{Topic: "strange", Partition: 0, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	conn := admClient(t, s).Broker(1)
	fetch := func(g, m string, wait int32) *kmsg.ShareFetchResponse {
		t.Helper()
		r := kmsg.NewPtrShareFetchRequest()
		r.GroupID, r.MemberID, r.MaxWaitMillis, r.MaxBytes, r.MaxRecords = &g, &m, wait, 1<<20, 10
		r.Topics = []kmsg.ShareFetchRequestTopic{{TopicID: id, Partitions: []kmsg.ShareFetchRequestTopicPartition{kmsg.NewShareFetchRequestTopicPartition()}}}
		resp, err := r.RequestWith(ctx, conn)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for i := 0; i < 300; i++ {
		f := fetch(fmt.Sprintf("never-joined-%d", i), "m", 0)
		admWantCode(t, "a made-up group", f.ErrorCode, f.ErrorMessage, kerr.GroupIDNotFound)
	}
	shareJoin(t, s, "real", "m1", "strange")
	f := fetch("real", "stranger", 0)
	admWantCode(t, "a made-up member", f.ErrorCode, f.ErrorMessage, kerr.UnknownMemberID)
	if n, w := s.shares.LoadedPartitions(), s.shares.Waiting(); n != 0 || w != 0 {
		t.Fatalf("after the strangers: %d share partitions, %d wake channels; want none", n, w)
	}
	// The member reads from the latest offset: nothing to acquire, so it
	// waits, and its wake channel goes when the wait ends.
	f = fetch("real", "m1", 200)
	admWantCode(t, "the member's long poll", f.ErrorCode, f.ErrorMessage, nil)
	if w := s.shares.Waiting(); w != 0 {
		t.Fatalf("%d wake channels after the member's fetch returned, want 0", w)
	}
}
