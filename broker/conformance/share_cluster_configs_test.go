package conformance

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/internal/testcluster"
)

// groupConfigsCluster is TestShareGroupAdminCluster's group-config part
// (run after its offsets part, on the same cluster): group configs are in
// the metadata log. On 3
// nodes, kafka-configs.sh --entity-type groups sets a share group's
// share.auto.offset.reset=earliest and share.heartbeat.interval.ms; every
// broker describes them (GROUP_CONFIG); after a kill -9 of the group's
// coordinator the new coordinator gives members the group's heartbeat
// interval and a share consumer starts at the earliest offset (records
// produced before it joined); the killed broker, restarted, describes them
// too. Bad values are INVALID_CONFIG naming the value.
func groupConfigsCluster(t *testing.T, c *testcluster.Cluster, jvm *toolJVM) {
	bs := c.Bootstrap()
	const topic, group = "gc-q", "gc-share"
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	adm := c.Admin()
	for {
		if bl, err := adm.ListBrokers(ctx); err == nil && len(bl) == 3 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("3 brokers not registered")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	c.Leaders(topic, 15*time.Second)
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bs, ",")...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := 0; i < 5; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte{'a' + byte(i)}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}

	tool := func(args ...string) (string, error) {
		t.Helper()
		stdout, stderr, err := jvm.runTool(toolTimeout, "", "org.apache.kafka.tools.ConfigCommand", append([]string{"--bootstrap-server", bs}, args...)...)
		t.Logf("kafka-configs.sh %s: %v\n%s%s", strings.Join(args, " "), err, stdout, stderr)
		return stdout + stderr, err
	}
	if _, err := tool("--entity-type", "groups", "--entity-name", group, "--alter", "--add-config", "share.auto.offset.reset=earliest,share.heartbeat.interval.ms=7000"); err != nil {
		t.Fatal(err)
	}
	if out, _ := tool("--entity-type", "groups", "--entity-name", group, "--describe"); !strings.Contains(out, "share.auto.offset.reset=earliest") || !strings.Contains(out, "share.heartbeat.interval.ms=7000") {
		t.Errorf("kafka-configs.sh --describe does not show the group's configs")
	}
	// Refused, naming the value; nothing changes.
	if out, err := tool("--entity-type", "groups", "--entity-name", group, "--alter", "--add-config", "share.delivery.count.limit=99"); err == nil || !strings.Contains(out, "99") || !strings.Contains(out, "InvalidConfigurationException") {
		t.Errorf("share.delivery.count.limit=99: %v, want InvalidConfigurationException naming 99", err)
	}
	for _, bad := range [][2]string{{"share.auto.offset.reset", "sometimes"}, {"share.heartbeat.interval.ms", "soon"}, {"no.such.config", "1"}} {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: group,
			Configs: []kmsg.IncrementalAlterConfigsRequestResourceConfig{{Name: bad[0], Op: kmsg.IncrementalAlterConfigOpSet, Value: kmsg.StringPtr(bad[1])}}}}
		r, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if rr := r.Resources[0]; rr.ErrorCode != kerr.InvalidConfig.Code || rr.ErrorMessage == nil || !strings.Contains(*rr.ErrorMessage, bad[0]) {
			t.Errorf("%s=%s: %v %v, want INVALID_CONFIG naming it", bad[0], bad[1], kerr.ErrorForCode(rr.ErrorCode), rr.ErrorMessage)
		}
	}

	describeOn := func(id int32) map[string]kmsg.DescribeConfigsResponseResourceConfig {
		t.Helper()
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: group}}
		var out map[string]kmsg.DescribeConfigsResponseResourceConfig
		for ctx.Err() == nil {
			r, err := req.RequestWith(ctx, cl.Broker(int(id)))
			if err == nil && len(r.Resources) == 1 && r.Resources[0].ErrorCode == 0 {
				out = map[string]kmsg.DescribeConfigsResponseResourceConfig{}
				for _, e := range r.Resources[0].Configs {
					out[e.Name] = e
				}
				return out
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("DescribeConfigs on broker %d never answered", id)
		return nil
	}
	check := func(id int32) {
		t.Helper()
		cfgs := describeOn(id)
		for name, want := range map[string]string{"share.auto.offset.reset": "earliest", "share.heartbeat.interval.ms": "7000"} {
			e := cfgs[name]
			if e.Value == nil || *e.Value != want || e.Source != kmsg.ConfigSourceGroupConfig {
				t.Errorf("broker %d describes %s as %v (source %v), want %s (GROUP_CONFIG)", id, name, e.Value, e.Source, want)
			}
		}
		if e := cfgs["share.record.lock.duration.ms"]; e.Value == nil || *e.Value != "30000" || e.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("broker %d describes share.record.lock.duration.ms as %v (source %v), want the default 30000", id, e.Value, e.Source)
		}
	}
	for id := int32(1); id <= 3; id++ {
		check(id)
	}

	coordinator := func() int32 {
		t.Helper()
		for ctx.Err() == nil {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorKey, req.CoordinatorType = group, 0
			if r, err := req.RequestWith(ctx, cl); err == nil && r.ErrorCode == 0 && r.NodeID > 0 {
				return r.NodeID
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatal("no coordinator")
		return -1
	}
	old := coordinator()
	c.Node(old).Kill()
	t.Logf("killed the coordinator %d", old)

	// The new coordinator gives a joining member the group's interval.
	var interval int32
	killed := time.Now()
	for ctx.Err() == nil {
		// A new client each time: one keeps the dead coordinator it
		// found until that one answers NOT_COORDINATOR.
		var live []string
		for _, n := range c.Brokers() {
			if n.ID != old {
				live = append(live, n.Addr())
			}
		}
		fresh, err := kgo.NewClient(kgo.SeedBrokers(live...))
		if err != nil {
			t.Fatal(err)
		}
		hb := kmsg.NewPtrShareGroupHeartbeatRequest()
		hb.GroupID, hb.MemberID, hb.MemberEpoch, hb.SubscribedTopicNames = group, "gc-probe-member-0001", 0, []string{topic}
		r, err := hb.RequestWith(ctx, fresh)
		if err == nil && r.ErrorCode != 0 {
			err = kerr.ErrorForCode(r.ErrorCode)
		}
		if err != nil {
			t.Logf("ShareGroupHeartbeat %v after the kill: %v", time.Since(killed).Round(time.Millisecond), err)
		}
		if err == nil {
			interval = r.HeartbeatIntervalMillis
			leave := kmsg.NewPtrShareGroupHeartbeatRequest()
			leave.GroupID, leave.MemberID, leave.MemberEpoch = group, "gc-probe-member-0001", -1
			leave.RequestWith(ctx, fresh)
			fresh.Close()
			break
		}
		fresh.Close()
		time.Sleep(200 * time.Millisecond)
	}
	if interval != 7000 {
		t.Errorf("the new coordinator (the old, %d, was killed) gave heartbeat interval %d ms, want the group's 7000", old, interval)
	}
	sc, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bs, ",")...), kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	rctx, rcancel := context.WithTimeout(ctx, 40*time.Second)
	for got < 5 && rctx.Err() == nil {
		fs := sc.PollRecords(rctx, 10)
		got += fs.NumRecords()
		sc.MarkAcks(kgo.AckAccept)
	}
	rcancel()
	sc.FlushAcks(ctx)
	sc.Close()
	if got != 5 {
		t.Errorf("the share consumer got %d of the 5 records produced before it joined (share.auto.offset.reset=earliest)", got)
	}

	c.Node(old).Restart()
	check(old)
	if _, err := tool("--entity-type", "groups", "--entity-name", group, "--alter", "--delete-config", "share.heartbeat.interval.ms"); err != nil {
		t.Fatal(err)
	}
	// The restarted broker follows the metadata log: the delete reaches it.
	var e kmsg.DescribeConfigsResponseResourceConfig
	for i := 0; i < 50; i++ {
		if e = describeOn(old)["share.heartbeat.interval.ms"]; e.Source == kmsg.ConfigSourceDefaultConfig {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if e.Source != kmsg.ConfigSourceDefaultConfig || e.Value == nil || *e.Value != "5000" {
		t.Errorf("after --delete-config share.heartbeat.interval.ms is %v (source %v), want the default 5000", e.Value, e.Source)
	}
}
