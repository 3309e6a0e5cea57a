package conformance

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testcluster"
)

// TestShareGroupAdminCluster: on 3 nodes, with a 6-partition topic whose
// partitions (and whose share-state partitions) are led by different
// brokers, the administrators' share-group offset calls see and change
// every partition, not only those whose state the group's coordinator
// holds: franz-go's kadm resets an unused group to offset 0 and a share
// consumer then reads all 60 records; kafka-share-groups.sh and
// `tributary share-group describe` show all 6 partitions finished (lag 0);
// a reset to the earliest offset by kafka-share-groups.sh makes the
// partitions' leaders (which still hold the old state in memory)
// deliver all 60 records again; `tributary share-group reset-offsets`
// moves every partition to offset 5; DeleteShareGroupOffsets leaves no
// state.
// The lag of partitions of a 1-replica topic comes from their leaders.
//
// Then TestGroupConfigsCluster's part runs on the same cluster (one
// cluster and one JVM for both, to keep make test short).
func TestShareGroupAdminCluster(t *testing.T) {
	k := javaSetup(t)
	jvm := startToolJVM(t, k)
	c := testcluster.Start(t, 3, "group.initial.rebalance.delay.ms=0")
	c.Controller(15 * time.Second)
	shareGroupOffsetsCluster(t, c, jvm)
	if !t.Failed() {
		groupConfigsCluster(t, c, jvm)
	}
}

// shareGroupOffsetsCluster is TestShareGroupAdminCluster's offsets part.
func shareGroupOffsetsCluster(t *testing.T, c *testcluster.Cluster, jvm *toolJVM) {
	bs := c.Bootstrap()
	const topic, group, parts, per = "adm-q", "adm-share", 6, 10
	adm := c.Admin()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	for {
		if bl, err := adm.ListBrokers(ctx); err == nil && len(bl) == 3 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("3 brokers not registered")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if _, err := adm.CreateTopic(ctx, parts, 3, nil, topic); err != nil {
		t.Fatal(err)
	}
	leaders := c.Leaders(topic, 15*time.Second)
	distinct := map[int32]bool{}
	for _, l := range leaders {
		distinct[l] = true
	}
	t.Logf("leaders of %s: %v", topic, leaders)
	if len(distinct) < 2 {
		t.Fatalf("all partitions led by one broker (%v): the test needs several", leaders)
	}

	pr, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bs, ",")...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	for p := int32(0); p < parts; p++ {
		for i := 0; i < per; i++ {
			if err := pr.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: p, Value: fmt.Appendf(nil, "%d-%d", p, i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}

	// An unused group reset to 0 (kadm): created empty, its state
	// initialized at every partition's share coordinator.
	zero := kadm.Offsets{}
	for p := int32(0); p < parts; p++ {
		zero.Add(kadm.Offset{Topic: topic, Partition: p, At: 0})
	}
	// The group coordinator may still be loading __consumer_offsets just
	// after start-up (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS).
	var ar kadm.AlterShareGroupOffsetsResponses
	for {
		ar, err = adm.AlterShareGroupOffsets(ctx, group, zero)
		if !errors.Is(err, kerr.NotCoordinator) && !errors.Is(err, kerr.CoordinatorLoadInProgress) && !errors.Is(err, kerr.CoordinatorNotAvailable) || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < parts; p++ {
		if e, ok := ar.Lookup(topic, p); !ok || e != nil {
			t.Fatalf("AlterShareGroupOffsets %s-%d: answered %v, error %v", topic, p, ok, e)
		}
	}
	describe := func(wantStart, wantLag int64) {
		t.Helper()
		ds, err := adm.DescribeShareGroupOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		d := ds[group]
		if d.Err != nil {
			t.Fatalf("DescribeShareGroupOffsets: %v", d.Err)
		}
		for p := int32(0); p < parts; p++ {
			o, ok := d.Offsets.Lookup(topic, p)
			if !ok || o.Err != nil || o.StartOffset != wantStart || o.Lag != wantLag {
				t.Errorf("%s-%d (leader %d): %+v (listed %v), want start offset %d lag %d", topic, p, leaders[p], o, ok, wantStart, wantLag)
			}
		}
	}
	describe(0, per)

	// A topic with one replica per partition, on each broker: the lag of
	// a partition the coordinator has no replica of comes from its leader.
	const r1 = "adm-r1"
	if _, err := adm.CreateTopic(ctx, 3, 1, nil, r1); err != nil {
		t.Fatal(err)
	}
	r1Leaders := c.Leaders(r1, 15*time.Second)
	r1Offsets := kadm.Offsets{}
	for p := int32(0); p < 3; p++ {
		for i := 0; i < 4; i++ {
			if err := pr.ProduceSync(ctx, &kgo.Record{Topic: r1, Partition: p, Value: []byte{byte(i)}}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		r1Offsets.Add(kadm.Offset{Topic: r1, Partition: p, At: 1})
	}
	if _, err := adm.AlterShareGroupOffsets(ctx, group, r1Offsets); err != nil {
		t.Fatal(err)
	}
	ds, err := adm.DescribeShareGroupOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 3; p++ {
		if o, ok := ds[group].Offsets.Lookup(r1, p); !ok || o.StartOffset != 1 || o.Lag != 3 {
			t.Errorf("%s-%d (its only replica on %d): %+v (listed %v), want start offset 1 lag 3", r1, p, r1Leaders[p], o, ok)
		}
	}
	if _, err := adm.DeleteShareGroupOffsets(ctx, group, r1); err != nil {
		t.Fatal(err)
	}

	consumeAll := func(round string) {
		t.Helper()
		sc, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(bs, ",")...), kgo.ShareGroup(group), kgo.ConsumeTopics(topic))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		rctx, rcancel := context.WithTimeout(ctx, 45*time.Second)
		defer rcancel()
		for len(got) < parts*per && rctx.Err() == nil {
			fs := sc.PollRecords(rctx, 100)
			fs.EachRecord(func(r *kgo.Record) { got[string(r.Value)]++ })
			sc.MarkAcks(kgo.AckAccept)
		}
		if err := sc.FlushAcks(ctx); err != nil {
			t.Fatal(err)
		}
		sc.Close()
		if len(got) != parts*per {
			t.Fatalf("%s: %d of %d records delivered", round, len(got), parts*per)
		}
		for v, n := range got {
			if n != 1 {
				t.Errorf("%s: %s delivered %d times", round, v, n)
			}
		}
	}
	consumeAll("after the reset to 0")
	describe(per, 0)

	tool := func(args ...string) string {
		t.Helper()
		stdout, stderr, err := jvm.runTool(toolTimeout, "", shareGroupCommandClass, append([]string{"--bootstrap-server", bs}, args...)...)
		t.Logf("kafka-share-groups.sh %s:\n%s%s", strings.Join(args, " "), stdout, stderr)
		if err != nil {
			t.Fatalf("kafka-share-groups.sh %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, stderr)
		}
		return stdout
	}
	lags := func(want string) {
		t.Helper()
		rows := groupsToolTable(tool("--describe", "--group", group))
		if len(rows) != parts {
			t.Errorf("--describe shows %d partitions, want %d: %v", len(rows), parts, rows)
		}
		for _, r := range rows {
			if r["LAG"] != want {
				t.Errorf("--describe row %v, want lag %s", r, want)
			}
		}
	}
	lags("0")
	out, err := exec.Command(testbroker.Binary(t), "share-group", "describe", group, "--bootstrap", bs).CombinedOutput()
	t.Logf("tributary share-group describe:\n%s", out)
	if err != nil {
		t.Fatalf("tributary share-group describe: %v", err)
	}
	if n := strings.Count(string(out), topic+" "); n != parts {
		t.Errorf("tributary share-group describe lists %d partitions of %s, want %d", n, topic, parts)
	}

	tool("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
	lags(fmt.Sprint(per))
	// The leaders hold the finished state in memory: the reset must
	// reach them (a new state epoch, checked when a share session opens).
	consumeAll("after the reset to the earliest offset")
	describe(per, 0)
	out, err = exec.Command(testbroker.Binary(t), "share-group", "reset-offsets", group, "--topic", topic, "--to-offset", "5", "--execute", "--bootstrap", bs).CombinedOutput()
	t.Logf("tributary share-group reset-offsets --to-offset 5:\n%s", out)
	if err != nil {
		t.Fatalf("tributary share-group reset-offsets: %v", err)
	}
	describe(5, per-5)

	dr, err := adm.DeleteShareGroupOffsets(ctx, group, topic)
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := dr.Lookup(topic); !ok || e != nil {
		t.Fatalf("DeleteShareGroupOffsets: answered %v, error %v", ok, e)
	}
	ds, err = adm.DescribeShareGroupOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(ds[group].Offsets[topic]) + len(ds[group].Offsets[r1]); n != 0 {
		t.Errorf("after DeleteShareGroupOffsets %d partitions still have state: %v", n, ds[group].Offsets)
	}
}
