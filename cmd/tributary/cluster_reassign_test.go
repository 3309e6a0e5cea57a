package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/tributary-io/tributary/internal/reassign"
	"github.com/tributary-io/tributary/internal/testbroker"
)

func TestReassignParseBrokerIDs(t *testing.T) {
	if ids, err := parseBrokerIDs("3, 1,2"); err != nil || joinInts(ids) != "3,1,2" {
		t.Errorf("got %v, %v", ids, err)
	}
	for in, want := range map[string]string{
		"1,x":         `--brokers "1,x": "x" is not a broker id`,
		"1,-2":        `"-2" is not a broker id`,
		"1,,2":        `"" is not a broker id`,
		"1,2,1":       `--brokers "1,2,1": broker 1 listed twice`,
		"99999999999": `"99999999999" is not a broker id`,
	} {
		if _, err := parseBrokerIDs(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", in, err, want)
		}
	}
}

func TestReassignVerify(t *testing.T) {
	want := reassign.Partition{Topic: "a", Partition: 0, Replicas: []int32{2, 3}}
	md := kadm.Metadata{Topics: kadm.TopicDetails{"a": {Topic: "a", Partitions: kadm.PartitionDetails{
		0: {Topic: "a", Partition: 0, Replicas: []int32{2, 3}},
		1: {Topic: "a", Partition: 1, Replicas: []int32{1, 2, 3}},
	}}}}
	ongoing := kadm.ListPartitionReassignmentsResponses{"a": {1: {Topic: "a", Partition: 1, Replicas: []int32{1, 2, 3}, AddingReplicas: []int32{3}, RemovingReplicas: []int32{1}}}}
	plan := []reassign.Partition{{Topic: "a", Partition: 1, Replicas: []int32{2, 3}}, want}
	var out bytes.Buffer
	err := reportVerify(&out, plan, md, ongoing)
	if err == nil || !strings.Contains(err.Error(), "not complete: 1 of 2 partitions") {
		t.Errorf("err = %v", err)
	}
	if !regexp.MustCompile(`(?s)a +0 +complete\n.*a +1 +in progress \(adding 3; removing 1\)\n`).MatchString(out.String()) {
		t.Errorf("report:\n%s", out.String())
	}
	out.Reset()
	if err := reportVerify(&out, []reassign.Partition{want}, md, nil); err != nil {
		t.Errorf("all complete: %v\n%s", err, out.String())
	}
}

// Flag and plan errors are found before connecting, and name the bad
// value. elect-leaders' are here too: they share the cluster commands'
// conventions and this file.
func TestReassignAndElectFlagErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"version":1,"partitions":[{"topic":"a","partition":0,"replicas":[1,1]}]}`), 0o644)
	noBroker := "127.0.0.1:1" // nothing listens: reaching it would be a different error
	for _, c := range []struct {
		want []string
		args []string
	}{
		{[]string{"--partition -3: must be >= 0"}, []string{"cluster", "elect-leaders", "--topic", "a", "--partition", "-3"}},
		{[]string{"--partition 1: needs exactly one --topic (got 0)"}, []string{"cluster", "elect-leaders", "--partition", "1"}},
		{[]string{"--partition 0,1: needs exactly one --topic (got 2)"}, []string{"cluster", "elect-leaders", "-t", "a", "-t", "b", "-p", "0,1"}},
		{[]string{`--type "clean": want preferred or unclean`}, []string{"cluster", "elect-leaders", "--type", "clean"}},
		{[]string{"--topics: required"}, []string{"cluster", "reassign", "generate", "--brokers", "1"}},
		{[]string{"--brokers: required"}, []string{"cluster", "reassign", "generate", "--topics", "a"}},
		{[]string{`--brokers "1,x": "x" is not a broker id`}, []string{"cluster", "reassign", "generate", "--topics", "a", "--brokers", "1,x"}},
		{[]string{"--file: required"}, []string{"cluster", "reassign", "execute"}},
		{[]string{"--file:", "missing.json", "no such file"}, []string{"cluster", "reassign", "verify", "--file", filepath.Join(dir, "missing.json")}},
		{[]string{bad, "replica 1 listed twice"}, []string{"cluster", "reassign", "execute", "--file", bad}},
	} {
		wantCLIError(t, "", c.want, append(c.args, "-b", noBroker)...)
	}
}

// generate needs only the metadata, which one broker has today.
func TestReassignGenerateSingleBroker(t *testing.T) {
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "moved", 2)
	out := mustRunCLI(t, "", "cluster", "reassign", "generate", "-b", b.Addr(), "--topics", "moved", "--brokers", "1")
	plan := `{"version":1,"partitions":[{"topic":"moved","partition":0,"replicas":[1]},{"topic":"moved","partition":1,"replicas":[1]}]}`
	want := "Current partition replica assignment\n" + plan + "\n\nProposed partition reassignment configuration\n" + plan + "\n"
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
	wantCLIError(t, "", []string{`--brokers "1,7": broker 7 is not in the cluster (brokers: 1)`}, "cluster", "reassign", "generate", "-b", b.Addr(), "--topics", "moved", "--brokers", "1,7")
	wantCLIError(t, "", []string{`topic "nope" does not exist`}, "cluster", "reassign", "generate", "-b", b.Addr(), "--topics", "moved,nope", "--brokers", "1")

	// execute refuses a plan naming a partition or broker the cluster
	// lacks before it sends anything.
	dir := t.TempDir()
	for name, p := range map[string]string{
		"moved/5: topic \"moved\" has 2 partitions":            `{"version":1,"partitions":[{"topic":"moved","partition":5,"replicas":[1]}]}`,
		"moved/0: broker 4 is not in the cluster (brokers: 1)": `{"version":1,"partitions":[{"topic":"moved","partition":0,"replicas":[1,4]}]}`,
	} {
		f := filepath.Join(dir, "plan.json")
		os.WriteFile(f, []byte(p), 0o644)
		wantCLIError(t, "", []string{f, name}, "cluster", "reassign", "execute", "-b", b.Addr(), "--file", f)
	}
}
