package main

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// inProcess serializes the commands tests run in process: a command's
// flags are bound to package variables and its client properties are the
// process's (kafkacli.SetClientProps), so two at once would race, as two
// tributary processes never do.
var inProcess sync.Mutex

// runKafkaCmd runs one tributary command in process with stdin, returning
// its stdout, stderr and error.
func runKafkaCmd(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	inProcess.Lock()
	defer inProcess.Unlock()
	root := newRootCommand()
	var out, errw bytes.Buffer
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errw)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), errw.String(), err
}

// mustRun runs a command that must succeed.
func mustRunCLI(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, errOut, err := runKafkaCmd(t, stdin, args...)
	if err != nil {
		t.Fatalf("tributary %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out
}

// wantErr runs a command that must fail with an error containing each of
// want.
func wantCLIError(t *testing.T, stdin string, want []string, args ...string) {
	t.Helper()
	_, _, err := runKafkaCmd(t, stdin, args...)
	if err == nil {
		t.Errorf("tributary %s: no error, want one containing %q", strings.Join(args, " "), want)
		return
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("tributary %s: error %q does not contain %q", strings.Join(args, " "), err, w)
		}
	}
}

// tableRows parses a tabwriter table into rows of fields.
func cliTableRows(out string) [][]string {
	var rows [][]string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		rows = append(rows, strings.Fields(l))
	}
	return rows
}

func TestTopicCommands(t *testing.T) {
	b := testbroker.Start(t)
	// The cluster address comes from the environment here, from
	// --bootstrap in the other tests: both must work.
	t.Setenv("TRIBUTARY_BOOTSTRAP", b.Addr())

	out := mustRunCLI(t, "", "topic", "create", "orders", "orders-eu", "--partitions", "3", "-c", "retention.ms=3600000", "-c", "cleanup.policy=compact")
	if rows := cliTableRows(out); len(rows) != 3 || strings.Join(rows[1], " ") != "orders OK" || strings.Join(rows[2], " ") != "orders-eu OK" {
		t.Errorf("create:\n%s", out)
	}
	mustRunCLI(t, "", "topic", "create", "payments")

	out, _, err := runKafkaCmd(t, "", "topic", "create", "orders", "refunds")
	if err == nil || !strings.Contains(err.Error(), `topic "orders"`) || !strings.Contains(err.Error(), "Topic Already Exists") {
		t.Errorf("create of an existing topic: err = %v", err)
	}
	if !regexp.MustCompile(`(?m)^refunds +OK$`).MatchString(out) || !regexp.MustCompile(`(?m)^orders +\[36\] Topic Already Exists`).MatchString(out) {
		t.Errorf("create with one existing topic: the table does not show both outcomes:\n%s", out)
	}

	// list: everything, then whole-name regex filters (KAFKA-1186).
	out = mustRunCLI(t, "", "topic", "list")
	want := "NAME PARTITIONS REPLICAS\norders 3 1\norders-eu 3 1\npayments 1 1\nrefunds 1 1"
	if got := cliTable(out); got != want {
		t.Errorf("list:\n%s\nwant\n%s", got, want)
	}
	if got := cliTable(mustRunCLI(t, "", "topic", "list", "orders.*")); got != "NAME PARTITIONS REPLICAS\norders 3 1\norders-eu 3 1" {
		t.Errorf("list orders.*:\n%s", got)
	}
	if got := cliTable(mustRunCLI(t, "", "topic", "list", "orders", "pay.*")); got != "NAME PARTITIONS REPLICAS\norders 3 1\npayments 1 1" {
		t.Errorf("list orders pay.*:\n%s", got)
	}
	if got := cliTable(mustRunCLI(t, "", "topic", "list", "nothing.*")); got != "NAME PARTITIONS REPLICAS" {
		t.Errorf("list nothing.*:\n%s", got)
	}

	// describe: id, counts, the configs set at creation, a partition table.
	out = mustRunCLI(t, "", "topic", "describe", "orders")
	for _, re := range []string{
		`(?m)^NAME +orders$`,
		`(?m)^ID +[A-Za-z0-9_-]{22}$`,
		`(?m)^PARTITIONS +3$`,
		`(?m)^REPLICAS +1$`,
		`(?m)^CONFIGS +cleanup\.policy=compact +\(DYNAMIC_TOPIC_CONFIG\)$`,
		`(?m)^ +retention\.ms=3600000 +\(DYNAMIC_TOPIC_CONFIG\)$`,
		`(?m)^PARTITION +LEADER +EPOCH +REPLICAS +ISR +OFFLINE +LOG-START-OFFSET +HIGH-WATERMARK +LAST-STABLE-OFFSET$`,
		`(?m)^0 +1 +\d+ +1 +1 +- +0 +0 +0$`,
		`(?m)^2 +1 +\d+ +1 +1 +- +0 +0 +0$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("describe orders: no line matching %s in\n%s", re, out)
		}
	}
	if strings.Contains(out, "orders-eu") {
		t.Errorf("describe orders also describes orders-eu:\n%s", out)
	}
	out = mustRunCLI(t, "", "topic", "describe", "orders.*", "payments")
	if n := strings.Count(out, "\nNAME "); n != 2 || !strings.HasPrefix(out, "NAME ") {
		t.Errorf("describe orders.* payments: want 3 topics:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^CONFIGS +\(all defaults\)$`).MatchString(out) {
		t.Errorf("describe payments: no '(all defaults)':\n%s", out)
	}

	// alter-config: set one, delete one, keep the rest.
	out = mustRunCLI(t, "", "topic", "alter-config", "orders", "--set", "retention.ms=60000", "--set", "max.message.bytes=2000000", "--delete", "cleanup.policy")
	if cliTable(out) != "TOPIC STATUS\norders OK" {
		t.Errorf("alter-config:\n%s", out)
	}
	out = mustRunCLI(t, "", "topic", "describe", "orders")
	if !regexp.MustCompile(`(?m)^CONFIGS +max\.message\.bytes=2000000 .*\n +retention\.ms=60000 +\(DYNAMIC_TOPIC_CONFIG\)$`).MatchString(out) || strings.Contains(out, "cleanup.policy") {
		t.Errorf("describe after alter-config:\n%s", out)
	}

	// add-partitions: --count adds, --total sets the total.
	out = mustRunCLI(t, "", "topic", "add-partitions", "orders", "--count", "2")
	if cliTable(out) != "TOPIC PARTITIONS STATUS\norders 3 -> 5 OK" {
		t.Errorf("add-partitions --count 2:\n%s", out)
	}
	mustRunCLI(t, "", "topic", "add-partitions", "payments", "--total", "4")
	if got := cliTable(mustRunCLI(t, "", "topic", "list", "orders|payments")); got != "NAME PARTITIONS REPLICAS\norders 5 1\npayments 4 1" {
		t.Errorf("list after add-partitions:\n%s", got)
	}
	if out := mustRunCLI(t, "", "topic", "describe", "orders"); !regexp.MustCompile(`(?m)^4 +1 +\d+ +1 +1 +- +0 +0 +0$`).MatchString(out) {
		t.Errorf("describe after add-partitions: no partition 4:\n%s", out)
	}

	// delete.
	out = mustRunCLI(t, "", "topic", "delete", "orders-eu", "refunds")
	if cliTable(out) != "TOPIC STATUS\norders-eu OK\nrefunds OK" {
		t.Errorf("delete:\n%s", out)
	}
	if got := cliTable(mustRunCLI(t, "", "topic", "list")); got != "NAME PARTITIONS REPLICAS\norders 5 1\npayments 4 1" {
		t.Errorf("list after delete:\n%s", got)
	}

	// Errors name what was wrong.
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"topic", "list", "orders("}, []string{`topic regex "orders("`, "missing closing )"}},
		{[]string{"topic", "describe", "a[b"}, []string{`topic regex "a[b"`}},
		{[]string{"topic", "describe", "nope.*"}, []string{`topic "nope.*" does not exist`}},
		{[]string{"topic", "describe", "orders", "gone"}, []string{`topic "gone" does not exist`}},
		{[]string{"topic", "delete", "gone"}, []string{`topic "gone"`, "Unknown Topic Or Partition"}},
		{[]string{"topic", "create", "x", "--partitions", "0"}, []string{"--partitions 0"}},
		{[]string{"topic", "create", "x", "--replication-factor", "-3"}, []string{"--replication-factor -3"}},
		{[]string{"topic", "create", "x", "-c", "retention.ms"}, []string{`--topic-config "retention.ms": want key=value`}},
		{[]string{"topic", "create", "x", "-c", "no.such.config=1"}, []string{`topic "x"`, "no.such.config"}},
		{[]string{"topic", "create", "bad/name"}, []string{`topic "bad/name"`, "Invalid Topic"}},
		{[]string{"topic", "alter-config", "orders", "--set", "retention.ms=soon"}, []string{`topic "orders"`, "Invalid Config", "soon"}},
		{[]string{"topic", "alter-config", "orders", "--set", "no.such.config=1"}, []string{`topic "orders"`, "no.such.config"}},
		{[]string{"topic", "alter-config", "gone", "--set", "retention.ms=1"}, []string{`topic "gone"`, "Unknown Topic"}},
		{[]string{"topic", "alter-config", "orders", "--set", "a"}, []string{`--set "a": want key=value`}},
		{[]string{"topic", "alter-config", "orders", "--set", "a=1", "--delete", "a"}, []string{"--delete a"}},
		{[]string{"topic", "alter-config", "orders"}, []string{"nothing to change"}},
		{[]string{"topic", "add-partitions", "orders", "--total", "3"}, []string{"--total 3", `topic "orders" already has 5 partitions`}},
		{[]string{"topic", "add-partitions", "orders", "--count", "-1"}, []string{"--count -1"}},
		{[]string{"topic", "add-partitions", "orders"}, []string{"--count", "--total"}},
		{[]string{"topic", "add-partitions", "gone", "--count", "1"}, []string{`topic "gone" does not exist`}},
	} {
		wantCLIError(t, "", c.want, c.args...)
	}
	// A bad address, from the flag over the environment.
	wantCLIError(t, "", []string{`--bootstrap "localhost:http0"`}, "topic", "list", "--bootstrap", "localhost:http0")
	wantCLIError(t, "", []string{"cannot reach a broker at 127.0.0.1:1"}, "topic", "list", "--bootstrap", "127.0.0.1:1")
}

// normalize collapses a table's column padding, for comparing.
func cliTable(out string) string {
	var lines []string
	for _, r := range cliTableRows(out) {
		lines = append(lines, strings.Join(r, " "))
	}
	return strings.Join(lines, "\n")
}
