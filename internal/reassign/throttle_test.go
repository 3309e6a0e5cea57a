package reassign

import (
	"reflect"
	"testing"
)

func TestPlanThrottles(t *testing.T) {
	cur := []Partition{
		{Topic: "a", Partition: 0, Replicas: []int32{1, 2}},
		{Topic: "a", Partition: 1, Replicas: []int32{2, 3}},
		{Topic: "b", Partition: 0, Replicas: []int32{4}},
	}
	plan := []Partition{
		{Topic: "a", Partition: 1, Replicas: []int32{3, 4}}, // moves
		{Topic: "a", Partition: 0, Replicas: []int32{1, 2}}, // stays
		{Topic: "b", Partition: 0, Replicas: []int32{5, 4}}, // grows
	}
	got := PlanThrottles(cur, plan)
	want := Throttles{
		Topics: map[string]TopicThrottle{
			"a": {Leader: "1:2,1:3", Follower: "1:4"},
			"b": {Leader: "0:4", Follower: "0:5"},
		},
		Brokers: []int32{2, 3, 4, 5},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if got := PlanThrottles(cur, cur); len(got.Topics) != 0 || len(got.Brokers) != 0 {
		t.Errorf("a plan that moves nothing throttles %+v", got)
	}
}
