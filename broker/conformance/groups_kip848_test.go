package conformance

// The KIP-848 consumer group protocol (group.protocol=consumer) with Apache
// Kafka's Java client. See groups_setup_test.go for which broker this runs
// against.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/kafkacli"
	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestGroupsKIP848 runs, on one broker:
//
//   - rebalance: GroupsConformance's rebalance scenario with
//     group.protocol=consumer: three KafkaConsumers commit after process on
//     a 6-partition topic under a live producer, one leaves, one joins;
//     every record is processed and none twice, no partition ever has two
//     owners, no member loses partitions or has any revoked when another
//     leaves, and the broker describes and lists a Stable CONSUMER group
//     with the uniform assignor whose assignments are what the members own.
//   - restart: kill -9 of the broker and a restart on the same data: the
//     group is still a consumer group with its group epoch, and its
//     committed offsets are those acknowledged before the crash.
func TestGroupsKIP848(t *testing.T) {
	k := javaSetup(t)
	classes := k.compile(t, filepath.Join(testbroker.RepoRoot(), "broker", "conformance", "java", "GroupsConformance.java"))
	var b groupsBroker
	if groupsAgainstKafka() {
		kb := testbroker.StartKafka(t)
		groupsWarmUp(t, kb.Addr())
		b = kb
	} else {
		// A short heartbeat interval (bounds lowered with it): a member
		// learns of a partition its peer released at its next heartbeat.
		eb := extBroker(t, "group.initial.rebalance.delay.ms=0",
			"group.consumer.heartbeat.interval.ms=500", "group.consumer.min.heartbeat.interval.ms=500")
		if !toolBrokerListsAPI(t, eb.Addr(), 68) {
			t.Fatal("the broker does not list ConsumerGroupHeartbeat (key 68) in ApiVersions")
		}
		groupsWarmUp(t, eb.Addr())
		b = eb
	}
	const topic, group = "groups-kip848", "java-kip848"
	t.Run("rebalance", func(t *testing.T) {
		groupsJava(t, k, classes, "rebalance", b.Addr(), topic, group, "consumer")
	})
	t.Run("static", func(t *testing.T) {
		// Two static members (group.instance.id), each closed and started
		// again: the successor gets the same partitions and epoch, and the
		// other member sees no callback.
		groupsJava(t, k, classes, "static", b.Addr(), "groups-kip848-static", "java-kip848-static", "consumer")
	})
	t.Run("librdkafka", func(t *testing.T) {
		// Two confluent-kafka Consumers with group.protocol=consumer
		// (python/groups.py): every record, none processed again after
		// its commit, no partition with two owners, and the committed
		// offsets at the end offsets.
		py := pythonSetup(t)
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		script := filepath.Join(testbroker.RepoRoot(), "broker", "conformance", "python", "groups.py")
		cmd := exec.CommandContext(ctx, py, script, b.Addr(), "groups-kip848-rdkafka", "rdkafka-kip848", "consumer")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.WaitDelay = 5 * time.Second
		start := time.Now()
		err := cmd.Run()
		t.Logf("python groups.py consumer: %v", time.Since(start).Round(time.Millisecond))
		if err != nil || !strings.Contains(stdout.String(), "GROUPS OK") {
			t.Fatalf("python groups.py failed: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
		}
		if testing.Verbose() {
			t.Logf("stdout:\n%s", stdout.String())
		}
		if s := strings.TrimSpace(stderr.String()); s != "" {
			t.Errorf("python groups.py passed but wrote to stderr:\n%s", s)
		}
	})
	t.Run("describe", func(t *testing.T) {
		// A franz-go member (kgo.ServerSideBalancer) alone in a group:
		// the CLI's describe and list (internal/kafkacli, as tributary
		// group describe/list) show a Stable consumer group, the member's
		// epoch, and all 6 partitions owned and targeted.
		const g = "kip848-describe"
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()), kgo.ConsumerGroup(g), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		kc, err := kafkacli.Connect(ctx, b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer kc.Close()
		var d *kafkacli.GroupDescription
		for {
			cl.PollRecords(ctx, 100)
			if d, err = kc.DescribeGroup(ctx, g); err == nil && d.State == "Stable" && len(d.Members) == 1 && len(d.Members[0].Assignment[topic]) == 6 {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("describe %s: %+v, %v; want Stable with one member owning 6 partitions", g, d, err)
			}
		}
		m := d.Members[0]
		if d.ProtocolType != "consumer" || d.Protocol != "uniform" || m.Epoch != d.Epoch || len(m.Target[topic]) != 6 || m.Classic {
			t.Errorf("describe %s: protocol type %q, assignor %q, group epoch %d, member epoch %d, target %v", g, d.ProtocolType, d.Protocol, d.Epoch, m.Epoch, m.Target)
		}
		ls, err := kc.ListGroups(ctx)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, l := range ls {
			found = found || l.ID == g && l.State == "Stable" && l.ProtocolType == "consumer"
		}
		if !found {
			t.Errorf("group list: %+v, want %s Stable consumer", ls, g)
		}
	})
	t.Run("restart", func(t *testing.T) {
		before := groupsCommitted(t, b.Addr(), group, topic)
		epoch := kip848Describe(t, b.Addr(), group)
		if len(before) != 6 || epoch < 1 {
			t.Fatalf("before the crash: committed %v, group epoch %d; want 6 partitions and an epoch", before, epoch)
		}
		b.Kill()
		b.Restart()
		if after := groupsCommitted(t, b.Addr(), group, topic); !reflect.DeepEqual(after, before) {
			t.Errorf("committed offsets after kill -9 and restart: %v, before: %v", after, before)
		}
		if got := kip848Describe(t, b.Addr(), group); got != epoch {
			t.Errorf("group epoch after kill -9 and restart: %d, before: %d", got, epoch)
		}
	})
}

// kip848Describe is ConsumerGroupDescribe of an empty consumer group: its
// epoch. It fails the test unless the group is an Empty consumer group.
func kip848Describe(t *testing.T, addr, group string) int32 {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	for {
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Groups) != 1 {
			t.Fatalf("ConsumerGroupDescribe %s: %v", group, err)
		}
		g := resp.Groups[0]
		switch {
		case g.ErrorCode == 0 && g.State == "Empty":
			return g.Epoch
		case g.ErrorCode == 0:
			t.Fatalf("ConsumerGroupDescribe %s: state %s with %d members, want Empty", group, g.State, len(g.Members))
		case ctx.Err() == nil && (g.ErrorCode == 14 || g.ErrorCode == 15 || g.ErrorCode == 16): // loading, not available, not coordinator
			time.Sleep(50 * time.Millisecond)
		default:
			t.Fatalf("ConsumerGroupDescribe %s: error %d", group, g.ErrorCode)
		}
	}
}

// TestGroupsKIP848Crash is TestGroupsCrash with franz-go's KIP-848 members
// (kgo.ServerSideBalancer): kill -9 of the broker while two members
// consume and commit, a restart, the members go on (their group, epochs
// and assignments loaded back from __consumer_offsets), then two new
// members resume exactly from the committed offsets; no committed record
// is processed again. A long test (TRIBUTARY_TEST_LONG=1, make test-long).
func TestGroupsKIP848Crash(t *testing.T) {
	if os.Getenv("TRIBUTARY_TEST_LONG") == "" {
		t.Skip("long test: TRIBUTARY_TEST_LONG=1 (make test-long)")
	}
	var b groupsBroker
	if groupsAgainstKafka() {
		kb := testbroker.StartKafka(t)
		groupsWarmUp(t, kb.Addr())
		b = kb
	} else {
		eb := extBroker(t, "group.consumer.heartbeat.interval.ms=500", "group.consumer.min.heartbeat.interval.ms=500")
		groupsWarmUp(t, eb.Addr())
		b = eb
	}
	groupsCrash(t, b, "groups-kip848-crash", "kip848-crash-group", kgo.ServerSideBalancer())
}
