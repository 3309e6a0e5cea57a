package group

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCoordinatorRefusesWhileLoading checks the gate in front of the state
// machine: a group whose partition is loading is COORDINATOR_LOAD_IN_PROGRESS
// for every API, one whose partition is not led here is NOT_COORDINATOR, and
// neither reaches the state machine.
func TestCoordinatorRefusesWhileLoading(t *testing.T) {
	cfg := Config{Partitions: 10, MinSessionTimeout: time.Second, MaxSessionTimeout: time.Hour, MaxSize: 10, MaxMetadataBytes: 10}
	c := &Coordinator{gs: NewGroups(cfg), now: time.Now, loaded: map[int32]bool{}, loading: map[int32]bool{}, stop: make(chan struct{})}
	loadingGroup, otherGroup := "g", "h"
	c.loading[PartitionFor(loadingGroup, 10)] = true
	if PartitionFor(loadingGroup, 10) == PartitionFor(otherGroup, 10) {
		t.Fatal("pick groups of different partitions")
	}
	for _, tc := range []struct {
		group string
		want  *kerr.Error
	}{{loadingGroup, kerr.CoordinatorLoadInProgress}, {otherGroup, kerr.NotCoordinator}, {"", kerr.InvalidGroupID}} {
		join := kmsg.NewPtrJoinGroupRequest()
		join.Group, join.ProtocolType, join.SessionTimeoutMillis = tc.group, "consumer", 10000
		join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
		if r := c.Join(JoinRequest{JoinGroupRequest: join}, nil); r.ErrorCode != tc.want.Code {
			t.Errorf("join %q: %v, want %v", tc.group, kerr.ErrorForCode(r.ErrorCode), tc.want)
		}
		sync := kmsg.NewPtrSyncGroupRequest()
		sync.Group = tc.group
		if r := c.Sync(sync, nil); r.ErrorCode != tc.want.Code {
			t.Errorf("sync %q: %v", tc.group, kerr.ErrorForCode(r.ErrorCode))
		}
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group = tc.group
		if code := c.Heartbeat(hb); code != tc.want {
			t.Errorf("heartbeat %q: %v", tc.group, code)
		}
		if _, code := c.Committed(tc.group); code != tc.want {
			t.Errorf("offset fetch %q: %v", tc.group, code)
		}
		commit := kmsg.NewPtrOffsetCommitRequest()
		commit.Group, commit.Generation = tc.group, -1
		commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
		r := c.CommitOffsets(commit, func(string, int32) bool { return true })
		if code := r.Topics[0].Partitions[0].ErrorCode; code != tc.want.Code {
			t.Errorf("commit %q: %v", tc.group, kerr.ErrorForCode(code))
		}
		if code := c.DeleteGroup(tc.group); code != tc.want {
			t.Errorf("delete %q: %v", tc.group, code)
		}
		if d := c.Describe(tc.group); d.ErrorCode != tc.want.Code {
			t.Errorf("describe %q: %v", tc.group, kerr.ErrorForCode(d.ErrorCode))
		}
	}
	if len(c.gs.groups) != 0 || len(c.gs.writes) != 0 {
		t.Fatalf("the state machine was reached: %v groups, %v writes", len(c.gs.groups), len(c.gs.writes))
	}
	// Once loaded, the same group is served.
	delete(c.loading, PartitionFor(loadingGroup, 10))
	c.loaded[PartitionFor(loadingGroup, 10)] = true
	if code := c.Status(loadingGroup); code != nil {
		t.Fatalf("loaded group: %v", code)
	}
}

// TestPartitionForMatchesJava checks the group → partition mapping against
// values of Java's String.hashCode, Utils.abs and modulo.
func TestPartitionForMatchesJava(t *testing.T) {
	for _, tc := range []struct {
		group string
		n     int32
		want  int32
	}{
		{"g", 50, 103 % 50},
		{"polygenelubricants", 50, 0},            // hashCode is Integer.MIN_VALUE: Utils.abs gives 0
		{"ä€😀", 7, absJava(javaHash("ä€😀")) % 7}, // a surrogate pair counts as two chars
	} {
		if got := PartitionFor(tc.group, tc.n); got != tc.want {
			t.Errorf("%q: %d, want %d", tc.group, got, tc.want)
		}
	}
	if javaHash("polygenelubricants") != -1<<31 {
		t.Fatalf("hash of polygenelubricants: %d", javaHash("polygenelubricants"))
	}
}

// javaHash is String.hashCode over UTF-16 code units, written out
// independently of utf16 above.
func javaHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r > 0xffff {
			r -= 0x10000
			h = 31*h + int32(0xd800+(r>>10))
			h = 31*h + int32(0xdc00+(r&0x3ff))
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}

func absJava(h int32) int32 {
	if h == -1<<31 {
		return 0
	}
	if h < 0 {
		return -h
	}
	return h
}
