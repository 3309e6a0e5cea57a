package cluster_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testcluster"
)

// Apache Kafka 4.4's own tools against a three-node cluster, on one start:
// kafka-configs alters and describes per-broker and cluster-default dynamic
// configs (KIP-226), through a broker that is not the active controller;
// kafka-reassign-partitions --execute --throttle moves a replica at the
// throttle's rate and --verify removes the throttles; the dynamic configs
// survive a controller failover and a restart.
//
// The throttled move copies 12 MB at 3 MB/s; TRIBUTARY_TEST_LONG=1 copies
// the 200 MB at 1 MB/s (about 200 s).
func TestDynamicConfigsAndThrottledReassignment(t *testing.T) {
	testbroker.KafkaLib(testbroker.NoSkip(t))
	c := testcluster.Start(t, 3)
	ctrl := c.Controller(15 * time.Second)
	adm := c.Admin()
	waitBrokers(t, adm, 3)
	// other is a broker that is not the active controller: its configs
	// are forwarded, which Kafka's tools met with "unexpected broker id".
	other := ctrl%3 + 1
	bs := c.Node(other).Addr()

	tool := func(t *testing.T, class string, args ...string) (string, error) {
		t.Helper()
		began := time.Now()
		stdout, stderr, err := testbroker.RunKafkaTool(t, class, append([]string{"--bootstrap-server", bs}, args...)...)
		t.Logf("%s %s: %v (err %v)", class[strings.LastIndex(class, ".")+1:], strings.Join(args, " "), time.Since(began).Round(time.Millisecond), err)
		return stdout + stderr, err
	}
	mustTool := func(t *testing.T, class string, args ...string) string {
		t.Helper()
		out, err := tool(t, class, args...)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return out
	}
	const configCommand = "org.apache.kafka.tools.ConfigCommand"
	const reassignCommand = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand"
	broker := func(id int32) []string { return []string{"--entity-type", "brokers", "--entity-name", fmt.Sprint(id)} }

	t.Run("kafka-configs", func(t *testing.T) {
		out := mustTool(t, configCommand, append(broker(other), "--alter", "--add-config", "log.cleaner.threads=2")...)
		if !strings.Contains(out, fmt.Sprintf("Completed updating config for broker %d.", other)) {
			t.Errorf("alter broker %d:\n%s", other, out)
		}
		out = mustTool(t, configCommand, "--entity-type", "brokers", "--entity-default", "--alter", "--add-config", "log.retention.ms=7200000")
		if !strings.Contains(out, "Completed updating default config for brokers in the cluster.") {
			t.Errorf("alter the cluster default:\n%s", out)
		}
		out = mustTool(t, configCommand, append(broker(other), "--describe")...)
		for _, want := range []string{
			fmt.Sprintf("Dynamic configs for broker %d are:", other),
			"log.cleaner.threads=2 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2, DEFAULT_CONFIG:log.cleaner.threads=1}",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("describe broker %d: no %q in\n%s", other, want, out)
			}
		}
		out = mustTool(t, configCommand, "--entity-type", "brokers", "--entity-default", "--describe")
		for _, want := range []string{
			"Default configs for brokers in the cluster are:",
			"log.retention.ms=7200000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=7200000}",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("describe the cluster default: no %q in\n%s", want, out)
			}
		}
		out = mustTool(t, configCommand, append(broker(other), "--describe", "--all")...)
		for _, want := range []string{
			fmt.Sprintf("All configs for broker %d are:", other),
			"log.retention.ms=7200000 sensitive=false synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=7200000, DEFAULT_CONFIG:log.retention.hours=168}",
			"num.partitions=1 sensitive=false synonyms={DEFAULT_CONFIG:num.partitions=1}",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("describe --all broker %d: no %q in\n%s", other, want, out)
			}
		}
		// A static property refused is broker/server's TestAlterConfigsErrors:
		// a JVM start is dear in make test.
	})

	t.Run("alter-another-broker", func(t *testing.T) {
		// A broker refuses, before forwarding, a BROKER resource that names
		// another broker (Kafka's ConfigAdminManager.preprocess): the
		// controller cannot tell whom the client meant. The rest of the
		// request is forwarded and the answers merged in order.
		cl, err := kgo.NewClient(kgo.SeedBrokers(bs))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		const key = "log.cleaner.delete.retention.ms"
		res := func(name, value string) kmsg.IncrementalAlterConfigsRequestResource {
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeBroker, name
			c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
			c.Name, c.Op, c.Value = key, kmsg.IncrementalAlterConfigOpSet, kmsg.StringPtr(value)
			rr.Configs = append(rr.Configs, c)
			return rr
		}
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Resources = append(req.Resources, res(fmt.Sprint(ctrl), "1000"), res(fmt.Sprint(other), "2000"))
		r, err := req.RequestWith(ctx, cl.Broker(int(other)))
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Resources) != 2 {
			t.Fatalf("%d resources answered, want 2", len(r.Resources))
		}
		wantMsg := fmt.Sprintf("unexpected broker id, expected %d or empty string, but received %d", other, ctrl)
		if got := r.Resources[0]; got.ResourceName != fmt.Sprint(ctrl) || got.ErrorCode != kerr.InvalidRequest.Code || got.ErrorMessage == nil || !strings.EqualFold(*got.ErrorMessage, wantMsg) {
			t.Errorf("alter broker %d through broker %d: %s code %d %q, want INVALID_REQUEST %q", ctrl, other, got.ResourceName, got.ErrorCode, deref(got.ErrorMessage), wantMsg)
		}
		if got := r.Resources[1]; got.ResourceName != fmt.Sprint(other) || got.ErrorCode != 0 {
			t.Errorf("alter broker %d through itself: %s code %d %v", other, got.ResourceName, got.ErrorCode, deref(got.ErrorMessage))
		}
		waitBrokerConfig(t, adm, other, key, "2000", kmsg.ConfigSourceDynamicBrokerConfig)
		rcs, err := adm.DescribeBrokerConfigs(ctx, ctrl)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := rcs.On(fmt.Sprint(ctrl), nil); err != nil {
			t.Fatal(err)
		} else if cfg, ok := findConfig(v.Configs, key); ok && cfg.Source == kmsg.ConfigSourceDynamicBrokerConfig {
			t.Errorf("broker %d took %s=%s from a request sent to broker %d", ctrl, key, cfg.MaybeValue(), other)
		}
		// The legacy AlterConfigs, with nothing left to forward.
		legacy := kmsg.NewPtrAlterConfigsRequest()
		lr := kmsg.NewAlterConfigsRequestResource()
		lr.ResourceType, lr.ResourceName = kmsg.ConfigResourceTypeBroker, fmt.Sprint(ctrl)
		lc := kmsg.NewAlterConfigsRequestResourceConfig()
		lc.Name, lc.Value = key, kmsg.StringPtr("1000")
		lr.Configs = append(lr.Configs, lc)
		legacy.Resources = append(legacy.Resources, lr)
		lresp, err := legacy.RequestWith(ctx, cl.Broker(int(other)))
		if err != nil {
			t.Fatal(err)
		}
		if len(lresp.Resources) != 1 || lresp.Resources[0].ErrorCode != kerr.InvalidRequest.Code {
			t.Errorf("legacy alter broker %d through broker %d: %+v, want INVALID_REQUEST", ctrl, other, lresp.Resources)
		}
		if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: key}}, other); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("reassign-throttle", func(t *testing.T) {
		size, rate := 12<<20, int64(3_000_000)
		if long() {
			size, rate = 200<<20, 1_000_000
		}
		throttledMove(t, c, mustTool, reassignCommand, size, rate)
	})

	t.Run("tributary-reassign-throttle", func(t *testing.T) {
		tributaryThrottledMove(t, c, adm)
	})

	t.Run("failover-and-restart", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// A config of the active controller itself, then its death.
		if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "log.cleaner.threads", Value: kadm.StringPtr("3")}}, ctrl); err != nil {
			t.Fatal(err)
		}
		waitBrokerConfig(t, adm, ctrl, "log.cleaner.threads", "3", kmsg.ConfigSourceDynamicBrokerConfig)
		c.Node(ctrl).Kill()
		next := c.Controller(15 * time.Second)
		// A change through the broker that is neither: forwarded to the
		// new controller, and answered only once the forwarding broker's
		// own metadata shows it.
		target := 6 - ctrl - next
		if _, err := adm.AlterBrokerConfigs(ctx, []kadm.AlterConfig{{Name: "producer.id.expiration.ms", Value: kadm.StringPtr("600000")}}, target); err != nil {
			t.Fatal(err)
		}
		rcs, err := adm.DescribeBrokerConfigs(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := rcs.On(fmt.Sprint(target), nil); err != nil {
			t.Fatal(err)
		} else if cfg, ok := findConfig(v.Configs, "producer.id.expiration.ms"); !ok || cfg.MaybeValue() != "600000" || cfg.Source != kmsg.ConfigSourceDynamicBrokerConfig {
			t.Errorf("right after the alter broker %d describes producer.id.expiration.ms as %s (%s)", target, cfg.MaybeValue(), cfg.Source)
		}
		// What the old controller committed, the new one holds.
		waitBrokerConfig(t, adm, next, "log.retention.ms", "7200000", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
		waitBrokerConfig(t, adm, other, "log.cleaner.threads", "2", kmsg.ConfigSourceDynamicBrokerConfig)
		waitBrokerConfig(t, adm, other, "log.retention.ms", "7200000", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
		t.Logf("controller %d killed, %d took over", ctrl, next)
		// The killed node comes back with its own and the cluster's.
		c.Node(ctrl).Restart()
		waitBrokers(t, adm, 3)
		waitBrokerConfig(t, adm, ctrl, "log.cleaner.threads", "3", kmsg.ConfigSourceDynamicBrokerConfig)
		waitBrokerConfig(t, adm, ctrl, "log.retention.ms", "7200000", kmsg.ConfigSourceDynamicDefaultBrokerConfig)
	})
}

// waitBrokerConfig waits until broker id describes name with value from src.
func waitBrokerConfig(t *testing.T, adm *kadm.Client, id int32, name, value string, src kmsg.ConfigSource) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		rcs, err := adm.DescribeBrokerConfigs(ctx, id)
		cancel()
		last = fmt.Sprint(err)
		if err == nil && len(rcs) == 1 {
			for _, cfg := range rcs[0].Configs {
				if cfg.Key == name {
					last = fmt.Sprintf("%s=%s (%s)", name, cfg.MaybeValue(), cfg.Source)
					if cfg.MaybeValue() == value && cfg.Source == src {
						return
					}
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("broker %d: want %s=%s (%s), last saw %s", id, name, value, src, last)
}

// throttledMove writes size bytes to a partition on brokers 1 and 2, moves
// it to 2 and 3 with kafka-reassign-partitions --execute --throttle rate,
// measures how fast broker 3 catches up, then --verify: complete, throttles
// removed, every record still there.
func throttledMove(t *testing.T, c *testcluster.Cluster, tool func(*testing.T, string, ...string) string, class string, size int, rate int64) {
	const topic = "moved"
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerBatchMaxBytes(1<<20), kgo.RequiredAcks(kgo.AllISRAcks()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, -1, -1
	ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
	ra.Partition, ra.Replicas = 0, []int32{1, 2}
	ct.ReplicaAssignment = append(ct.ReplicaAssignment, ra)
	create.Topics = append(create.Topics, ct)
	create.TimeoutMillis = 30000
	resp, err := create.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		t.Fatal(err)
	}
	c.Leaders(topic, 15*time.Second)

	const recordSize = 100_000
	n := size / recordSize
	began := time.Now()
	for i := 0; i < n; i += 50 {
		var rs []*kgo.Record
		for j := i; j < min(i+50, n); j++ {
			v := make([]byte, recordSize)
			rand.Read(v)
			rs = append(rs, &kgo.Record{Topic: topic, Partition: 0, Key: []byte(fmt.Sprint(j)), Value: v})
		}
		if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("producing: %v", err)
		}
	}
	total := logSize(t, ctx, cl, 1, topic)
	t.Logf("%d records (%d bytes on disk) acknowledged in %v", n, total, time.Since(began).Round(time.Millisecond))

	plan := filepath.Join(t.TempDir(), "move.json")
	if err := os.WriteFile(plan, []byte(`{"version":1,"partitions":[{"topic":"`+topic+`","partition":0,"replicas":[2,3]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out := tool(t, class, "--reassignment-json-file", plan, "--execute", "--throttle", fmt.Sprint(rate))
	if !strings.Contains(out, "Successfully started partition reassignment") || !strings.Contains(out, fmt.Sprintf("The inter-broker throttle limit was set to %d B/s", rate)) {
		t.Errorf("--execute --throttle:\n%s", out)
	}

	// Broker 3's copy between 20 % and 90 % of the partition: the rate
	// without the first fetch, which the quota lets through whole.
	var t20, t90 time.Time
	var s20, s90 int64
	for deadline := time.Now().Add(time.Duration(float64(total)/float64(rate)*3*float64(time.Second)) + 60*time.Second); ; {
		if time.Now().After(deadline) {
			t.Fatalf("broker 3 did not catch up: %d of %d bytes", s90, total)
		}
		got, now := logSize(t, ctx, cl, 3, topic), time.Now()
		if t20.IsZero() && got >= total/5 {
			t20, s20 = now, got
		}
		if got >= total*9/10 {
			t90, s90 = now, got
			break
		}
		time.Sleep(20 * time.Millisecond) // the copy grows by a fetch (1 MiB) at a time
	}
	measured := float64(s90-s20) / t90.Sub(t20).Seconds()
	t.Logf("follower catch-up: %.0f B/s under a throttle of %d B/s (%.0f%%), %d bytes in %v",
		measured, rate, 100*measured/float64(rate), s90-s20, t90.Sub(t20).Round(time.Millisecond))
	if measured < 0.8*float64(rate) || measured > 1.2*float64(rate) {
		t.Errorf("follower caught up at %.0f B/s, not within 20%% of the throttle %d B/s", measured, rate)
	}

	// --verify once the move is done: complete, and the throttles go.
	adm := kadm.NewClient(cl)
	for deadline := time.Now().Add(60 * time.Second); ; {
		l, err := adm.ListPartitionReassignments(ctx, kadm.TopicsSet{topic: {0: {}}})
		if err == nil && len(l) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reassignment did not finish: %v %v", l, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	out = tool(t, class, "--reassignment-json-file", plan, "--verify")
	for _, want := range []string{"Reassignment of partition " + topic + "-0 is completed.", "Clearing broker-level throttles on brokers 1,2,3", "Clearing topic-level throttles on topic " + topic} {
		if !strings.Contains(out, want) {
			t.Errorf("--verify: no %q in\n%s", want, out)
		}
	}
	tcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range tcs[0].Configs {
		if strings.HasSuffix(cfg.Key, ".replication.throttled.replicas") && cfg.MaybeValue() != "" {
			t.Errorf("after --verify the topic still has %s=%s", cfg.Key, cfg.MaybeValue())
		}
	}
	for id := int32(1); id <= 3; id++ {
		rcs, err := adm.DescribeBrokerConfigs(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, cfg := range rcs[0].Configs {
			if strings.HasSuffix(cfg.Key, ".replication.throttled.rate") {
				t.Errorf("after --verify broker %d still has %s=%s", id, cfg.Key, cfg.MaybeValue())
			}
		}
	}

	// Nothing acknowledged was lost: every record, in order, from the new
	// replicas.
	consumer, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}), kgo.FetchMaxBytes(8<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	for next := 0; next < n; {
		fs := consumer.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consuming after the move: %v", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Key) != fmt.Sprint(next) {
				t.Fatalf("record %d has key %s", next, r.Key)
			}
			next++
		})
	}
}

// logSize is the size of topic's partition 0 in broker id's log dirs.
func logSize(t *testing.T, ctx context.Context, cl *kgo.Client, id int32, topic string) int64 {
	t.Helper()
	req := kmsg.NewPtrDescribeLogDirsRequest()
	rt := kmsg.NewDescribeLogDirsRequestTopic()
	rt.Topic, rt.Partitions = topic, []int32{0}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.Broker(int(id)))
	if err != nil {
		t.Fatalf("DescribeLogDirs on broker %d: %v", id, err)
	}
	var size int64
	for _, d := range resp.Dirs {
		for _, dt := range d.Topics {
			for _, p := range dt.Partitions {
				size += p.Size
			}
		}
	}
	return size
}

// tributaryThrottledMove moves the partition throttledMove made back with
// tributary cluster reassign execute --throttle (fast: what is checked is
// which throttles it sets), then verify, which removes them.
func tributaryThrottledMove(t *testing.T, c *testcluster.Cluster, adm *kadm.Client) {
	const topic = "moved"
	plan := filepath.Join(t.TempDir(), "back.json")
	if err := os.WriteFile(plan, []byte(`{"version":1,"partitions":[{"topic":"`+topic+`","partition":0,"replicas":[3,1]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		out, err := exec.Command(testbroker.Binary(t), append([]string{"cluster", "reassign", "--bootstrap", c.Bootstrap()}, args...)...).CombinedOutput()
		return string(out), err
	}
	out, err := run("execute", "--file", plan, "--throttle", "50000000")
	if err != nil || !strings.Contains(out, "The inter-broker throttle limit was set to 50000000 B/s") {
		t.Fatalf("execute --throttle: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	lists := map[string]string{}
	for _, cfg := range tcs[0].Configs {
		lists[cfg.Key] = cfg.MaybeValue()
	}
	// From [2,3] to [3,1]: 2 and 3 may lead, 1 is the new follower.
	if l, f := lists["leader.replication.throttled.replicas"], lists["follower.replication.throttled.replicas"]; l != "0:2,0:3" || f != "0:1" {
		t.Errorf("throttled replicas: leader %q follower %q, want \"0:2,0:3\" and \"0:1\"", l, f)
	}
	waitBrokerConfig(t, adm, 1, "follower.replication.throttled.rate", "50000000", kmsg.ConfigSourceDynamicBrokerConfig)
	for deadline := time.Now().Add(time.Minute); ; {
		if out, err = run("verify", "--file", plan); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("verify: %v\n%s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !strings.Contains(out, "Throttles removed from brokers 1,2,3 and topics "+topic) {
		t.Errorf("verify:\n%s", out)
	}
	rcs, err := adm.DescribeBrokerConfigs(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range rcs[0].Configs {
		if strings.HasSuffix(cfg.Key, ".replication.throttled.rate") {
			t.Errorf("after verify broker 1 still has %s=%s", cfg.Key, cfg.MaybeValue())
		}
	}
}

func findConfig(cfgs []kadm.Config, key string) (kadm.Config, bool) {
	for _, c := range cfgs {
		if c.Key == key {
			return c, true
		}
	}
	return kadm.Config{}, false
}

func deref(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}
