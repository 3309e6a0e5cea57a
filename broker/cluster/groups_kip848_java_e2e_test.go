package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/testcluster"
)

// TestGroupSurvivesCoordinatorKillKIP848Java is
// TestGroupSurvivesCoordinatorKillKIP848 with Apache Kafka's Java
// KafkaConsumer 4.4 (group.protocol=consumer) as the members: three JVMs
// (java/GroupMember848.java) commit after processing while a producer
// feeds a 6-partition topic and the broker coordinating the group (found
// with FindCoordinator) is killed with kill -9 in a 3-node cluster.
// TRIBUTARY_TEST_LONG=1 (make test-long LONG=cluster) runs 30,000 records
// through three kills, the killed node restarted each time. The producer
// goes past its count until the last kill, so that every kill lands while
// records flow, however long the restarts took.
//
// What it asserts, from the members' own account of their callbacks,
// reads and returned commits (javaMembers.check):
//   - ConsumerGroupDescribe shows a consumer-protocol group of the three
//     members at positive epochs before and after each kill, the same
//     member ids (the Java client's own, KIP-1082) as the members printed;
//   - no partition assigned to a member while another owns it, and no
//     read or commit by a member not owning the partition;
//   - every produced record read, and the committed offsets sum to the
//     number produced at the end;
//   - nothing read below an offset whose commit had returned before the
//     reader took the partition: the only records read twice are ones
//     whose commit had not returned when their partition moved. That is
//     stricter than the franz-go test's count bound (which it also meets:
//     at most what was uncommitted at a kill plus a poll per member).
//
// The time from the kill until the commits go on is logged (the first
// commit every member got back after the kill, and the sum of committed
// offsets moving again); it is not asserted.
func TestGroupSurvivesCoordinatorKillKIP848Java(t *testing.T) {
	javaCoordinatorKill(t, "consumer")
}

// TestClassicJavaCoordinatorKillComparison is the same scenario with
// group.protocol=classic (the Java client's default assignors, eager
// Range first), for the comparison of the two protocols' recovery from a
// coordinator kill: the same assertions, DescribeGroups in place of
// ConsumerGroupDescribe (a Stable classic group of the same three member
// ids before and after the move). It runs in make test-long LONG=groups only:
// it is the comparison, and make test's and CI's time
// goes to the consumer protocol's.
func TestClassicJavaCoordinatorKillComparison(t *testing.T) {
	if !long() {
		t.Skip("the classic protocol's comparison runs in make test-long (TRIBUTARY_TEST_LONG=1)")
	}
	javaCoordinatorKill(t, "classic")
}

// javaCoordinatorKill runs the scenario with the members' group.protocol.
func javaCoordinatorKill(t *testing.T, protocol string) {
	total, kills := 3000, 1
	if long() {
		total, kills = 30000, 3
	}
	group := "g848java"
	if protocol == "classic" {
		group = "gclassicjava"
	}
	start := time.Now()
	c := testcluster.Start(t, 3, "group.consumer.heartbeat.interval.ms=500", "group.consumer.min.heartbeat.interval.ms=500")
	// The members' ids as the group's description shows them, once it
	// shows all three.
	members := func(wait time.Duration) string {
		if protocol == "classic" {
			return classicGroupOf(t, c, group, wait)
		}
		return consumerGroupOf(t, c, group, wait)
	}
	c.Controller(15 * time.Second)
	adm := c.Admin()
	waitBrokers(t, adm, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(kills)*3*time.Minute)
	defer cancel()
	if _, err := adm.CreateTopic(ctx, 6, 3, map[string]*string{"min.insync.replicas": kadm.StringPtr("2")}, "q"); err != nil {
		t.Fatal(err)
	}
	c.Leaders("q", 10*time.Second)
	t.Logf("cluster up %v", time.Since(start).Round(time.Millisecond))

	ms := startJavaMembers(t, 3, c.Bootstrap(), group, "q", protocol)
	members(150 * time.Second) // three JVMs start slowly on a loaded machine (50 s seen)
	t.Logf("three Java members in the group %v after the start", time.Since(start).Round(time.Millisecond))

	var produced atomic.Int64
	var killsDone atomic.Bool
	prodDone := make(chan struct{})
	go func() {
		defer close(prodDone)
		cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(c.Bootstrap(), ",")...), kgo.DefaultProduceTopic("q"),
			kgo.RetryTimeout(60*time.Second))
		if err != nil {
			t.Error(err)
			return
		}
		defer cl.Close()
		const batch = 100
		// Past total until the last kill: each kill lands while records
		// are produced, however long the restarts before it took.
		for i := 0; (i < total || !killsDone.Load()) && ctx.Err() == nil; i += batch {
			var rs []*kgo.Record
			for j := i; j < i+batch; j++ {
				rs = append(rs, &kgo.Record{Key: []byte(fmt.Sprint(j)), Value: []byte(fmt.Sprintf("record-%d", j))})
			}
			if err := cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
				t.Errorf("produce: %v", err)
				return
			}
			produced.Add(int64(len(rs)))
			time.Sleep(20 * time.Millisecond)
		}
	}()
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for !ok() {
			if ctx.Err() != nil {
				t.Fatalf("%s: consumed %d, produced %d of %d records", what, ms.consumed(), produced.Load(), total)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	allowed := int64(0)
	for k := 0; k < kills; k++ {
		at := int64(total * (k + 1) / (kills + 1))
		waitFor("before the kill", func() bool { return produced.Load() >= at && int64(ms.consumed()) >= at/2 })
		coord := coordinatorOf(t, adm, group)
		ids := members(20 * time.Second)
		if printed := ms.memberIDs(); printed != ids {
			t.Errorf("the group's description shows members %s, the Java members say %s", ids, printed)
		}
		before := committedOf(t, adm, group)
		n := ms.consumed()
		c.Node(coord).Kill()
		killed := time.Now()
		allowed += int64(n) - before + 300
		t.Logf("kill %d: coordinator %d killed; %d records produced, %d consumed, %d committed", k+1, coord, produced.Load(), n, before)
		waitFor("after the kill", func() bool { n, ok := committedNow(t, c, group); return ok && n > before+100 })
		resumed := time.Since(killed)
		waitFor("a commit by each member", func() bool { return len(ms.commitsAfter(killed.UnixMicro())) == 3 || ms.consumed() >= total })
		var per []string
		for m, us := range ms.commitsAfter(killed.UnixMicro()) {
			per = append(per, fmt.Sprintf("member %d %v", m, (time.Duration(us)*time.Microsecond).Round(time.Millisecond)))
		}
		t.Logf("%s kill %d: committed offsets move again %v after it (first commit returned: %s); new coordinator %d",
			protocol, k+1, resumed.Round(time.Millisecond), strings.Join(per, ", "), coordinatorOf(t, c.Admin(), group))
		if after := members(30 * time.Second); after != ids {
			t.Errorf("kill %d: members %s before, %s after the coordinator moved", k+1, ids, after)
		}
		if k < kills-1 {
			c.Node(coord).Restart()
			waitBrokers(t, c.Admin(), 3)
		}
	}
	killsDone.Store(true)
	<-prodDone
	total = int(produced.Load())
	waitFor("at the end", func() bool { return ms.consumed() >= total })
	t.Logf("all %d records consumed %v after the start", total, time.Since(start).Round(time.Millisecond))
	waitFor("the last commits", func() bool { n, _ := committedNow(t, c, group); return n >= int64(total) })
	ms.stop()
	after, answered := int64(0), false
	for i := 0; i < 40 && !answered; i++ {
		after, answered = committedNow(t, c, group)
	}
	if after != int64(total) {
		t.Fatalf("committed offsets sum to %d at the end, want %d (answered: %v)", after, total, answered)
	}
	bad, dups := ms.check()
	for _, b := range bad[:min(len(bad), 20)] {
		t.Error(b)
	}
	if len(bad) > 20 {
		t.Errorf("... and %d more", len(bad)-20)
	}
	if n := ms.consumed(); n != total {
		t.Errorf("%d distinct records read, want %d", n, total)
	}
	if int64(dups) > allowed {
		t.Errorf("%d records read twice: more than were uncommitted at the kills (%d)", dups, allowed)
	}
	t.Logf("read twice: %d (uncommitted at the kills: at most %d); %d commits failed, %d lost events, %d revocations",
		dups, allowed, ms.countKind("commitfail"), ms.countKind("lost"), ms.countKind("revoked"))
}
