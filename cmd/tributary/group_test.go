package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/tributary-io/tributary/internal/kafkacli"
	"github.com/tributary-io/tributary/internal/testbroker"
)

// The group commands against a real Apache Kafka 4.4 broker and against
// Tributary's, with Kafka's own consumer-groups tool judging the lag numbers
// on both.
func TestGroupCommandsKafka(t *testing.T) {
	testGroupCommands(t, testbroker.StartKafka(t).Addr())
}

func TestGroupCommandsTributary(t *testing.T) {
	testGroupCommands(t, testbroker.Start(t).Addr())
}

const (
	gtTopic = "gt-orders"
	gtGroup = "gt-app"
)

// gtRecords is how many records each partition of gtTopic gets.
var gtRecords = []int{10, 20, 30}

func testGroupCommands(t *testing.T, addr string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run := func(args ...string) string {
		t.Helper()
		return mustRunCLI(t, "", append(args, "--bootstrap", addr)...)
	}
	fail := func(want []string, args ...string) {
		t.Helper()
		wantCLIError(t, "", want, append(args, "--bootstrap", addr)...)
	}

	run("topic", "create", gtTopic, "--partitions", "3", "--replication-factor", "1")
	waitTopic(t, addr, gtTopic, len(gtRecords))
	// Partition p gets gtRecords[p] records, record i stamped base+i s.
	base := time.Now().Add(-30 * time.Minute).Truncate(time.Second)
	w := &kafka.Writer{
		Addr:         kafka.TCP(addr),
		Topic:        gtTopic,
		Balancer:     kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return int(m.Key[0] - '0') }),
		RequiredAcks: kafka.RequireAll,
		BatchTimeout: time.Millisecond,
		// Its own transport: kafka-go's DefaultTransport may hold metadata
		// from before the topic was created.
		Transport: &kafka.Transport{},
	}
	var msgs []kafka.Message
	for p, n := range gtRecords {
		for i := range n {
			msgs = append(msgs, kafka.Message{Key: fmt.Appendf(nil, "%d-%d", p, i), Value: []byte("v"), Time: base.Add(time.Duration(i) * time.Second)})
		}
	}
	if err := w.WriteMessages(ctx, msgs...); err != nil {
		t.Fatalf("producing: %v", err)
	}
	w.Close()

	// A group consumer reads everything and commits part: up to offset 4
	// of partition 0, 7 of partition 1, nothing of partition 2.
	r := kafka.NewReader(kafka.ReaderConfig{
		Brokers:           []string{addr},
		GroupID:           gtGroup,
		Topic:             gtTopic,
		StartOffset:       kafka.FirstOffset,
		MaxWait:           100 * time.Millisecond,
		HeartbeatInterval: 500 * time.Millisecond,
		CommitInterval:    0, // CommitMessages commits synchronously
		// kafka-go's default client id has spaces, which no table parses.
		Dialer: &kafka.Dialer{ClientID: "gt-consumer", Timeout: 10 * time.Second, DualStack: true},
	})
	readerOpen := true
	defer func() {
		if readerOpen {
			r.Close()
		}
	}()
	commitAt := map[int]int64{0: 3, 1: 6}
	var toCommit []kafka.Message
	for seen := 0; seen < 60; seen++ {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("group consumer: %v", err)
		}
		if off, ok := commitAt[m.Partition]; ok && m.Offset == off {
			toCommit = append(toCommit, m)
		}
	}
	if err := r.CommitMessages(ctx, toCommit...); err != nil {
		t.Fatalf("commit: %v", err)
	}

	// list
	out := run("group", "list")
	if !regexp.MustCompile(`(?m)^gt-app +Stable +consumer$`).MatchString(out) {
		t.Errorf("group list:\n%s", out)
	}
	if out := run("group", "list", "--state", "empty"); strings.Contains(out, gtGroup) {
		t.Errorf("group list --state empty shows the stable group:\n%s", out)
	}
	if out := run("group", "list", "--state", "Empty,stable"); !strings.Contains(out, gtGroup) {
		t.Errorf("group list --state Empty,stable:\n%s", out)
	}
	fail([]string{`--state "running"`}, "group", "list", "--state", "running")

	// describe, with the consumer active
	out = run("group", "describe", gtGroup)
	member := regexp.MustCompile(`(?m)^(gt-consumer-\S+) +gt-consumer +127\.0\.0\.1 +gt-orders\(0,1,2\)$`).FindStringSubmatch(out)
	if member == nil || !regexp.MustCompile(`(?m)^gt-app +Stable +consumer +range +1$`).MatchString(out) {
		t.Fatalf("describe: no stable group with one member assigned gt-orders(0,1,2):\n%s", out)
	}
	checkLag(t, out, map[string]string{
		"gt-orders 0": "4 10 6 " + member[1],
		"gt-orders 1": "7 20 13 " + member[1],
		"gt-orders 2": "- 30 - " + member[1],
	})
	compareWithKafkaTool(t, addr, out)

	// Kafka refuses to reset or delete the offsets of an active group.
	fail([]string{"gt-app", "inactive", "Stable", "stop its consumers"}, "group", "reset-offsets", gtGroup, "--topic", gtTopic, "--to-earliest")
	fail([]string{"gt-app", "active members"}, "group", "delete", gtGroup)

	r.Close()
	readerOpen = false
	waitGroupState(t, addr, gtGroup, kafkacli.StateEmpty)

	out = run("group", "describe", gtGroup)
	if !strings.Contains(out, `Group "gt-app" has no active members.`) {
		t.Errorf("describe of an empty group:\n%s", out)
	}
	checkLag(t, out, map[string]string{
		"gt-orders 0": "4 10 6 -",
		"gt-orders 1": "7 20 13 -",
	})
	compareWithKafkaTool(t, addr, out)

	// reset-offsets: a dry run changes nothing.
	out = run("group", "reset-offsets", gtGroup, "--topic", gtTopic, "--to-earliest")
	checkPlan(t, out, map[string]string{"gt-orders 0": "4 0", "gt-orders 1": "7 0", "gt-orders 2": "- 0"})
	out = run("group", "reset-offsets", gtGroup, "--topic", gtTopic, "--to-earliest", "--dry-run")
	checkPlan(t, out, map[string]string{"gt-orders 0": "4 0", "gt-orders 1": "7 0", "gt-orders 2": "- 0"})
	checkLag(t, run("group", "describe", gtGroup), map[string]string{"gt-orders 0": "4 10 6 -", "gt-orders 1": "7 20 13 -"})

	// --execute commits, and describe shows it.
	out = run("group", "reset-offsets", gtGroup, "--topic", "gt-orders:0,2", "--to-offset", "5", "--execute")
	checkPlan(t, out, map[string]string{"gt-orders 0": "4 5", "gt-orders 2": "- 5"})
	out = run("group", "describe", gtGroup)
	checkLag(t, out, map[string]string{"gt-orders 0": "5 10 5 -", "gt-orders 1": "7 20 13 -", "gt-orders 2": "5 30 25 -"})
	compareWithKafkaTool(t, addr, out)

	for _, c := range []struct {
		args []string
		plan map[string]string
	}{
		{[]string{"--topic", "gt-orders:1", "--shift-by", "-2"}, map[string]string{"gt-orders 1": "7 5"}},
		{[]string{"--topic", "gt-orders:1", "--shift-by", "-100"}, map[string]string{"gt-orders 1": "5 0"}},   // clamped to the start
		{[]string{"--topic", "gt-orders:0", "--to-offset", "1000"}, map[string]string{"gt-orders 0": "5 10"}}, // clamped to the end
		{[]string{"--topic", "gt-orders:0", "--to-latest"}, map[string]string{"gt-orders 0": "10 10"}},
		{[]string{"--topic", "gt-orders:2", "--to-datetime", base.Add(3 * time.Second).UTC().Format(time.RFC3339)}, map[string]string{"gt-orders 2": "5 3"}},
		{[]string{"--topic", "gt-orders:1", "--to-datetime", time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}, map[string]string{"gt-orders 1": "0 20"}}, // no record that late: the end
	} {
		out = run(append([]string{"group", "reset-offsets", gtGroup, "--execute"}, c.args...)...)
		checkPlan(t, out, c.plan)
	}
	out = run("group", "describe", gtGroup)
	checkLag(t, out, map[string]string{"gt-orders 0": "10 10 0 -", "gt-orders 1": "20 20 0 -", "gt-orders 2": "3 30 27 -"})
	compareWithKafkaTool(t, addr, out)

	// Bad flags and unknown names.
	reset := []string{"group", "reset-offsets", gtGroup}
	fail([]string{"exactly one", "(got none)"}, append(reset, "--topic", gtTopic)...)
	fail([]string{"exactly one", "--to-earliest and --to-latest"}, append(reset, "--topic", gtTopic, "--to-earliest", "--to-latest")...)
	fail([]string{"exactly one", "--to-offset and --shift-by"}, append(reset, "--topic", gtTopic, "--to-offset", "1", "--shift-by", "1")...)
	fail([]string{"--topic is required"}, append(reset, "--to-earliest")...)
	fail([]string{`--topic "gt-orders:x"`, "TOPIC:0,1,2"}, append(reset, "--topic", "gt-orders:x", "--to-earliest")...)
	fail([]string{"--topic gt-orders:7", "3 partitions"}, append(reset, "--topic", "gt-orders:7", "--to-earliest")...)
	fail([]string{`topic "no-such-topic" does not exist`}, append(reset, "--topic", "no-such-topic", "--to-earliest")...)
	fail([]string{`--to-datetime "yesterday"`, "RFC 3339"}, append(reset, "--topic", gtTopic, "--to-datetime", "yesterday")...)
	fail([]string{"--to-offset -1"}, append(reset, "--topic", gtTopic, "--to-offset", "-1")...)
	fail([]string{"--execute and --dry-run"}, append(reset, "--topic", gtTopic, "--to-earliest", "--execute", "--dry-run")...)
	fail([]string{"cannot shift", "no committed offset"}, "group", "reset-offsets", "gt-new", "--topic", gtTopic, "--shift-by", "1")
	fail([]string{"accepts 1 arg"}, "group", "describe")
	fail([]string{`group "no-such-group" does not exist`}, "group", "describe", "no-such-group")
	fail([]string{`group "no-such-group"`, "does not exist"}, "group", "delete", "no-such-group")

	// delete
	out = run("group", "delete", gtGroup)
	if !regexp.MustCompile(`(?m)^gt-app +OK$`).MatchString(out) {
		t.Errorf("delete:\n%s", out)
	}
	if out := run("group", "list"); strings.Contains(out, gtGroup) {
		t.Errorf("group list after delete:\n%s", out)
	}
	fail([]string{`group "gt-app" does not exist`}, "group", "describe", gtGroup)
}

// partitionTable is the TOPIC PARTITION ... table of describe or of a
// reset plan: "topic partition" to the rest of the row's fields.
func partitionTable(t *testing.T, out string) map[string]string {
	t.Helper()
	rows := map[string]string{}
	in := false
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 0 && f[0] == "TOPIC":
			in = true
		case in && len(f) >= 3:
			rows[f[0]+" "+f[1]] = strings.Join(f[2:], " ")
		}
	}
	return rows
}

func checkLag(t *testing.T, out string, want map[string]string) {
	t.Helper()
	checkTable(t, "describe (CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID)", out, want)
}

func checkPlan(t *testing.T, out string, want map[string]string) {
	t.Helper()
	checkTable(t, "reset plan (CURRENT-OFFSET NEW-OFFSET)", out, want)
}

func checkTable(t *testing.T, what, out string, want map[string]string) {
	t.Helper()
	got := partitionTable(t, out)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s:\n got %v\nwant %v\noutput:\n%s", what, got, want, out)
	}
}

// compareWithKafkaTool checks describe's rows against Apache Kafka's
// kafka-consumer-groups.sh --describe (ConsumerGroupCommand) on the same
// cluster: the same partitions, committed offsets, log end offsets, lags
// and consumers.
func compareWithKafkaTool(t *testing.T, addr, ours string) {
	t.Helper()
	out, errOut, err := testbroker.RunKafkaTool(t, "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "--bootstrap-server", addr, "--describe", "--group", gtGroup)
	if err != nil {
		t.Fatalf("ConsumerGroupCommand --describe: %v\n%s%s", err, out, errOut)
	}
	kafkaRows := map[string]string{}
	in := false
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) > 1 && f[0] == "GROUP" && f[1] == "TOPIC":
			in = true
		case in && len(f) >= 7 && f[0] == gtGroup:
			// GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID
			kafkaRows[f[1]+" "+f[2]] = strings.Join(f[3:7], " ")
		}
	}
	if len(kafkaRows) == 0 {
		t.Fatalf("no rows in ConsumerGroupCommand's output:\n%s%s", out, errOut)
	}
	if got := partitionTable(t, ours); fmt.Sprint(got) != fmt.Sprint(kafkaRows) {
		t.Errorf("describe differs from Kafka's ConsumerGroupCommand:\n ours  %v\n kafka %v\nours:\n%s\nkafka:\n%s", got, kafkaRows, ours, out)
	} else {
		t.Logf("Kafka's ConsumerGroupCommand --describe agrees: %v", kafkaRows)
	}
}

// waitTopic waits until every partition of the new topic has a leader, so
// that producing to it cannot fail half-way.
func waitTopic(t *testing.T, addr, topic string, partitions int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kafkacli.Connect(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for {
		ti, err := cl.Topic(ctx, topic)
		ready := err == nil && ti.Err == nil && len(ti.Partitions) == partitions
		for i := 0; ready && i < len(ti.Partitions); i++ {
			ready = ti.Partitions[i].Leader >= 0 && ti.Partitions[i].Err == nil
		}
		if ready {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("topic %q not ready after 60s: %+v, %v", topic, ti, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// waitGroupState waits until the group is in state.
func waitGroupState(t *testing.T, addr, group, state string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := kafkacli.Connect(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for {
		d, err := cl.DescribeGroup(ctx, group)
		if err == nil && d.State == state {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group %q not %s after 60s: %+v, %v", group, state, d, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func TestParseTopicPartitions(t *testing.T) {
	for in, want := range map[string]string{
		"orders":       "orders []",
		"orders:0,2":   "orders [0 2]",
		"orders: 1 ,3": "orders [1 3]",
		"orders:":      "error",
		"orders:x":     "error",
		"orders:-1":    "error",
		":0":           "error",
	} {
		name, ps, err := parseTopicPartitions(in)
		got := fmt.Sprintf("%s %v", name, ps)
		if err != nil {
			got = "error"
		}
		if got != want {
			t.Errorf("%q: %s, want %s", in, got, want)
		}
	}
}

// Flag errors need no cluster: they are found before connecting.
func TestGroupFlagErrors(t *testing.T) {
	nowhere := "127.0.0.1:1"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"group", "list", "--state", "bogus"}, `--state "bogus"`},
		{[]string{"group", "describe"}, "accepts 1 arg"},
		{[]string{"group", "delete"}, "requires at least 1 arg"},
		{[]string{"group", "reset-offsets", "g", "--topic", "t"}, "(got none)"},
		{[]string{"group", "reset-offsets", "g", "--topic", "t", "--to-latest", "--to-datetime", "2024-05-01T00:00:00Z"}, "--to-latest and --to-datetime"},
		{[]string{"group", "reset-offsets", "g", "--to-latest"}, "--topic is required"},
		{[]string{"group", "reset-offsets", "g", "--topic", "t:1,a", "--to-latest"}, `"a" is not a partition number`},
		{[]string{"group", "reset-offsets", "g", "--topic", "t", "--to-offset", "x"}, "invalid argument"},
	} {
		_, _, err := runKafkaCmd(t, "", append(c.args, "--bootstrap", nowhere)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("tributary %s: err %v, want %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}
