package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// describePartitions asks for topics (all when none), at most limit
// partitions, from cursor ("topic/partition", or "" for none), and prints
// the answer as "topic:0,1 other:0 next=other/1".
func describePartitions(t *testing.T, s *Server, limit int32, cursor string, topics ...string) string {
	t.Helper()
	req := kmsg.NewPtrDescribeTopicPartitionsRequest()
	req.ResponsePartitionLimit = limit
	for _, n := range topics {
		rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
		rt.Topic = n
		req.Topics = append(req.Topics, rt)
	}
	if cursor != "" {
		var c kmsg.DescribeTopicPartitionsRequestCursor
		name, p, _ := strings.Cut(cursor, "/")
		c.Topic = name
		fmt.Sscan(p, &c.Partition)
		req.Cursor = &c
	}
	resp := admSend[*kmsg.DescribeTopicPartitionsResponse](t, s, req, 0)
	var out []string
	img := s.ctrl.Image()
	for _, mt := range resp.Topics {
		if mt.ErrorCode != 0 {
			out = append(out, fmt.Sprintf("%s:%s", *mt.Topic, kerr.ErrorForCode(mt.ErrorCode).(*kerr.Error).Message))
			continue
		}
		if it := img.Topics[*mt.Topic]; it == nil || it.ID != mt.TopicID || mt.IsInternal {
			t.Errorf("topic %s: id %x, internal %v", *mt.Topic, mt.TopicID, mt.IsInternal)
		}
		var ps []string
		for _, p := range mt.Partitions {
			ps = append(ps, fmt.Sprint(p.Partition))
			if p.LeaderID != s.nodeID || len(p.Replicas) != 1 || len(p.ISR) != 1 || p.ErrorCode != 0 {
				t.Errorf("%s-%d: %+v", *mt.Topic, p.Partition, p)
			}
		}
		out = append(out, *mt.Topic+":"+strings.Join(ps, ","))
	}
	if resp.NextCursor != nil {
		out = append(out, fmt.Sprintf("next=%s/%d", resp.NextCursor.Topic, resp.NextCursor.Partition))
	}
	return strings.Join(out, " ")
}

func TestDescribeTopicPartitions(t *testing.T) {
	s := startAdminBroker(t, nil)
	admCreateTopic(t, s, "b", 2, nil)
	admCreateTopic(t, s, "a", 3, nil)
	admCreateTopic(t, s, "c", 1, nil)
	for _, tc := range []struct {
		limit  int32
		cursor string
		topics []string
		want   string
	}{
		{2000, "", nil, "a:0,1,2 b:0,1 c:0"},
		{4, "", nil, "a:0,1,2 b:0 next=b/1"},
		{4, "b/1", nil, "b:1 c:0"},
		{3, "", nil, "a:0,1,2 next=b/0"}, // a limit ending with a topic
		{0, "", nil, "next=a/0"},
		{2000, "", []string{"c", "missing", "a"}, "a:0,1,2 c:0 missing:UNKNOWN_TOPIC_OR_PARTITION"},
		{2000, "", []string{"bad topic!"}, "bad topic!:INVALID_TOPIC_EXCEPTION"},
		{2, "a/1", []string{"a", "c"}, "a:1,2 next=c/0"},
		{2000, "b/0", []string{"a", "c"}, "a:INVALID_REQUEST c:INVALID_REQUEST"}, // the cursor's topic must be listed
	} {
		if got := describePartitions(t, s, tc.limit, tc.cursor, tc.topics...); got != tc.want {
			t.Errorf("limit %d cursor %q topics %v:\n got %s\nwant %s", tc.limit, tc.cursor, tc.topics, got, tc.want)
		}
	}
}
