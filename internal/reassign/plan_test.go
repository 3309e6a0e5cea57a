package reassign

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

func TestParse(t *testing.T) {
	got, err := Parse("p.json", []byte(`{"version":1,"partitions":[
		{"topic":"b","partition":1,"replicas":[3,1]},
		{"topic":"a","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Topic != "b" || got[0].Partition != 1 || JoinIDs(got[0].Replicas) != "3,1" || got[1].Topic != "a" {
		t.Errorf("got %+v", got)
	}
	// Printed sorted, on one line, and read back the same.
	line := JSON(got)
	if want := `{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1,2]},{"topic":"b","partition":1,"replicas":[3,1]}]}`; line != want {
		t.Errorf("JSON = %s\nwant       %s", line, want)
	}
	if again, err := Parse("again", []byte(line)); err != nil || JSON(again) != line {
		t.Errorf("round trip: %v, %v", again, err)
	}

	for _, c := range []struct{ in, want string }{
		{`{"partitions":[]}`, `p.json: no "version"`},
		{`{"version":2,"partitions":[]}`, "p.json: version 2: only version 1 is known"},
		{`{"version":1,"partitions":[]}`, `p.json: "partitions" is empty`},
		{`{"version":1}`, `p.json: "partitions" is empty`},
		{`not json`, "p.json: not a reassignment plan"},
		{`{"version":1,"partitions":[{"topic":"a","partition":0,"replica":[1]}]}`, `unknown field "replica"`},
		{`{"version":1,"partitions":[{"partition":0,"replicas":[1]}]}`, `p.json: partitions[0]: no "topic"`},
		{`{"version":1,"partitions":[{"topic":"a","replicas":[1]}]}`, `p.json: partitions[0] (topic "a"): no "partition"`},
		{`{"version":1,"partitions":[{"topic":"a","partition":-3,"replicas":[1]}]}`, "partition -3: must be >= 0"},
		{`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[]}]}`, `partitions[0] (a/0): "replicas" is empty`},
		{`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1,-1]}]}`, "replica -1: a broker id is >= 0"},
		{`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1,2,1]}]}`, "(a/0): replica 1 listed twice"},
		{`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1]},{"topic":"a","partition":0,"replicas":[2]}]}`, "partitions[1] (a/0): the same partition as partitions[0]"},
		{`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1,2],"log_dirs":["any"]}]}`, `1 "log_dirs" for 2 replicas`},
		{`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1],"log_dirs":["/data/1"]}]}`, `log dir "/data/1": only "any"`},
		{`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1]}]} {}`, "more than one JSON value"},
	} {
		if _, err := Parse("p.json", []byte(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.in, err, c.want)
		}
	}
}

func TestPropose(t *testing.T) {
	cur := []Partition{
		{Topic: "b", Partition: 0, Replicas: []int32{1}},
		{Topic: "a", Partition: 1, Replicas: []int32{1, 2}},
		{Topic: "a", Partition: 0, Replicas: []int32{2, 1}},
		{Topic: "a", Partition: 2, Replicas: []int32{1, 2}},
		{Topic: "b", Partition: 1, Replicas: []int32{2, 1, 3}},
	}
	got, err := Propose(cur, []int32{4, 5, 6})
	if err != nil {
		t.Fatal(err)
	}
	// Round-robin in topic, partition order, running on across topics;
	// each partition keeps its replication factor.
	want := `{"version":1,"partitions":[` +
		`{"topic":"a","partition":0,"replicas":[4,5]},` +
		`{"topic":"a","partition":1,"replicas":[5,6]},` +
		`{"topic":"a","partition":2,"replicas":[6,4]},` +
		`{"topic":"b","partition":0,"replicas":[4]},` +
		`{"topic":"b","partition":1,"replicas":[5,6,4]}]}`
	if line := JSON(got); line != want {
		t.Errorf("got  %s\nwant %s", line, want)
	}
	if cur[0].Topic != "b" {
		t.Error("Propose reordered its input")
	}
	if _, err := Propose(cur, []int32{4, 5}); err == nil || !strings.Contains(err.Error(), "b/1 has 3 replicas but only 2 brokers are given (4,5)") {
		t.Errorf("too few brokers: err = %v", err)
	}
}

func TestStatus(t *testing.T) {
	want := Partition{Topic: "a", Partition: 0, Replicas: []int32{2, 3}}
	for _, c := range []struct {
		name    string
		cur     []int32
		ongoing *kadm.ListPartitionReassignmentsResponse
		status  string
		done    bool
	}{
		{"complete", []int32{2, 3}, nil, "complete", true},
		{"leader order differs", []int32{3, 2}, nil, "differs: replicas are 3,2, the plan says 2,3", false},
		{"not started", []int32{1, 2}, nil, "differs: replicas are 1,2, the plan says 2,3", false},
		{"running", []int32{1, 2, 3}, &kadm.ListPartitionReassignmentsResponse{Replicas: []int32{1, 2, 3}, AddingReplicas: []int32{3}, RemovingReplicas: []int32{1}}, "in progress (adding 3; removing 1)", false},
		{"no such partition", nil, nil, "missing: the cluster has no such partition", false},
	} {
		status, done := Status(want, c.cur, c.ongoing)
		if status != c.status || done != c.done {
			t.Errorf("%s: got %q %v, want %q %v", c.name, status, done, c.status, c.done)
		}
	}
}
