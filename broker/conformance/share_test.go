package conformance

// KIP-932 share groups with Apache Kafka's Java KafkaShareConsumer 4.4,
// against tributary or, with TRIBUTARY_GROUPS_AGAINST_KAFKA=1, a real
// Kafka 4.4.0 (groups_setup_test.go).

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestShareGroupsJava runs java/ShareConformance.java: five
// KafkaShareConsumers share a 1-partition topic (every record finished
// once, released ones redelivered with delivery count 2, rejected ones
// never again, one always-released record delivered exactly
// group.share.delivery.count.limit times and then archived); then the
// broker is killed with kill -9 and restarted, and the same group reads
// new records without being given any record it had finished; then the
// same after a SIGTERM restart.
func TestShareGroupsJava(t *testing.T) {
	k := javaSetup(t)
	classes := k.compile(t, filepath.Join(testbroker.RepoRoot(), "broker", "conformance", "java", "ShareConformance.java"))
	var b groupsBroker
	var stop func()
	if groupsAgainstKafka() {
		kb := testbroker.StartKafka(t)
		groupsWarmUp(t, kb.Addr())
		b = kb
		stop = func() { kb.Kill() } // Kafka's helper stops only by kill
	} else {
		eb := extBroker(t, "group.share.heartbeat.interval.ms=5000")
		if !toolBrokerListsAPI(t, eb.Addr(), 78) {
			t.Fatal("the broker does not list ShareFetch (key 78) in ApiVersions")
		}
		groupsWarmUp(t, eb.Addr())
		b = eb
		stop = eb.Stop
	}
	const topic, group, limit = "share-java", "java-share", "5"
	run := func(t *testing.T, first, count string) {
		t.Helper()
		start := time.Now()
		stdout, stderr, err := k.run(t, 150*time.Second, k.classpath(classes), nil, "ShareConformance", "work", b.Addr(), topic, group, first, count, limit)
		t.Logf("java ShareConformance %s..+%s: %v\n%s", first, count, time.Since(start).Round(time.Millisecond), stdout)
		if err != nil || !strings.Contains(stdout, "SHARE OK") {
			t.Fatalf("java ShareConformance failed: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
		}
		if !groupsAgainstKafka() {
			// Tributary hands each fetch at most max.poll.records (20)
			// records, so five consumers polling 100+ records share them.
			busy := 0
			for _, n := range strings.Fields(strings.Trim(strings.SplitN(strings.SplitN(stdout, "per consumer [", 2)[1], "]", 2)[0], " ")) {
				if strings.TrimSuffix(n, ",") != "0" {
					busy++
				}
			}
			if busy < 2 {
				t.Errorf("only %d of 5 consumers got records", busy)
			}
		}
	}
	t.Run("work", func(t *testing.T) { run(t, "0", "200") })
	t.Run("kill -9", func(t *testing.T) {
		b.Kill()
		b.Restart()
		groupsWarmUp(t, b.Addr())
		run(t, "200", "100")
	})
	t.Run("SIGTERM", func(t *testing.T) {
		stop()
		b.Restart()
		groupsWarmUp(t, b.Addr())
		run(t, "300", "100")
	})
}

const shareGroupCommandClass = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"

// TestShareGroupsKafkaTool runs Kafka's kafka-share-groups.sh
// (ShareGroupCommand) against the broker: a share group that consumed a
// 10-record topic is listed, described with lag 0, still listed and
// described (Empty, lag 0) after kill -9 of the broker and a restart, as
// Kafka keeps it in __consumer_offsets, reset to the earliest offset
// (lag 10) and deleted.
func TestShareGroupsKafkaTool(t *testing.T) {
	k := javaSetup(t)
	jvm := startToolJVM(t, k)
	b := groupsStart(t)
	bs := b.Addr()
	const topic, group = "share-tool", "tool-share"
	groupsCreateTopic(t, bs, topic, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(bs))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := 0; i < 10; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte{byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	alter := kmsg.NewPtrIncrementalAlterConfigsRequest()
	alter.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{
		ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: group,
		Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: "share.auto.offset.reset", Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr("earliest")}},
	}}
	if r, err := alter.RequestWith(ctx, cl); err != nil || r.Resources[0].ErrorCode != 0 {
		t.Fatalf("share.auto.offset.reset: %v %+v", err, r)
	}
	sc, err := kgo.NewClient(kgo.SeedBrokers(bs), kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for got < 10 && ctx.Err() == nil {
		fs := sc.PollRecords(ctx, 10)
		got += fs.NumRecords()
		sc.MarkAcks(kgo.AckAccept)
	}
	if err := sc.FlushAcks(ctx); err != nil {
		t.Fatal(err)
	}
	sc.Close()
	tool := func(args ...string) string {
		t.Helper()
		stdout, stderr, err := jvm.runTool(toolTimeout, "", shareGroupCommandClass, append([]string{"--bootstrap-server", bs}, args...)...)
		t.Logf("ShareGroupCommand %s:\n%s%s", strings.Join(args, " "), stdout, stderr)
		if err != nil {
			t.Fatalf("ShareGroupCommand %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, stderr)
		}
		return stdout
	}
	if out := tool("--list"); !strings.Contains(out, group) {
		t.Errorf("--list does not show %s", group)
	}
	// Kafka and Tributary agree on the lag; the start offset they show
	// after everything was acknowledged differs (Kafka's persisted SPSO
	// may stay at 0 while the acknowledged records are in flight above
	// it), so the lag is what is checked.
	// poll runs the tool until ok holds of its output, for at most two
	// minutes (a hang detector: after a restart the tool errs until the
	// groups and the share state are loaded, and a JVM start on a busy
	// CI machine takes seconds), and returns the last output.
	poll := func(ok func(stdout string) bool, args ...string) string {
		t.Helper()
		var stdout, stderr string
		var err error
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
			stdout, stderr, err = jvm.runTool(toolTimeout, "", shareGroupCommandClass, append([]string{"--bootstrap-server", bs}, args...)...)
			if err == nil && ok(stdout) {
				return stdout
			}
		}
		t.Logf("ShareGroupCommand %s, last: %v\n%s%s", strings.Join(args, " "), err, stdout, stderr)
		return stdout
	}
	lag := func(want string) {
		t.Helper()
		// The state may take a moment to settle after the consumer
		// closed (Kafka writes it through its share coordinator).
		one := func(out string) bool {
			rows := groupsToolTable(out)
			return len(rows) == 1 && rows[0]["LAG"] == want
		}
		if out := poll(one, "--describe", "--group", group); !one(out) {
			t.Errorf("--describe %v, want one row with lag %s", groupsToolTable(out), want)
		}
	}
	lag("0")
	b.Kill()
	b.Restart()
	// Until the broker has loaded its groups the tool reports an error
	// (COORDINATOR_LOAD_IN_PROGRESS).
	empty := func(out string) bool {
		rows := groupsToolTable(out)
		return len(rows) == 1 && rows[0]["STATE"] == "Empty"
	}
	if out := poll(empty, "--describe", "--state", "--group", group); !empty(out) {
		t.Errorf("--describe --state after the restart: %v, want %s Empty", groupsToolTable(out), group)
	}
	listed := func(out string) bool { return strings.Contains(out, group) }
	if out := poll(listed, "--list"); !listed(out) {
		t.Errorf("--list does not show %s after the restart", group)
	}
	lag("0")
	tool("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
	lag("10")
	tool("--delete", "--group", group)
	if out := tool("--list"); strings.Contains(out, group) {
		t.Errorf("--list still shows %s after --delete", group)
	}
}
