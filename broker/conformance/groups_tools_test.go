package conformance

// Apache Kafka 4.4.0's consumer-groups tool (kafka-consumer-groups.sh, main
// class org.apache.kafka.tools.consumer.group.ConsumerGroupCommand in the
// kafka-tools jar) lists and describes our groups. See groups_setup_test.go
// for which broker this runs against.

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const consumerGroupCommandClass = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"

// groupsToolTable parses the tool's table output: lines of
// whitespace-separated columns under a header line starting with "GROUP".
// It returns one map per row, keyed by the header's column names.
func groupsToolTable(out string) []map[string]string {
	var head []string
	var rows []map[string]string
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if f[0] == "GROUP" {
			head = f
			continue
		}
		if head == nil || len(f) != len(head) {
			continue
		}
		row := map[string]string{}
		for i, h := range head {
			row[h] = f[i]
		}
		rows = append(rows, row)
	}
	return rows
}

// TestGroupsKafkaTool: a group with a live franz-go member that consumed
// and committed everything (lag 0), and a group with committed offsets but
// no member (committed by kadm without a generation, as a simple consumer
// does), lagging 5, 10 and 15 records behind. ConsumerGroupCommand --list
// shows both; --describe shows each partition's committed offset, log end
// offset and lag, and the member (consumer id, host, client id) where
// there is one; --members and --state agree.
func TestGroupsKafkaTool(t *testing.T) {
	k := javaSetup(t)
	jvm := startToolJVM(t, k) // every tool run in one JVM
	b := groupsStart(t)
	const topic, active, lagging = "groups-tools", "tools-active", "tools-lagging"
	bs := b.Addr()
	groupsCreateTopic(t, bs, topic, 3)
	prod := newGroupsProducer(t, bs, topic)
	prod.produce(300)
	end := prod.ends()
	if len(end) != 3 {
		t.Fatalf("records went to partitions %v, want all 3", end)
	}

	// The lagging group: offsets committed without a member.
	kcl, err := kgo.NewClient(kgo.SeedBrokers(bs))
	if err != nil {
		t.Fatal(err)
	}
	defer kcl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	lagOffs := kadm.Offsets{}
	wantLag := map[int32]int64{}
	for p := int32(0); p < 3; p++ {
		wantLag[p] = int64(5 * (p + 1))
		lagOffs.Add(kadm.Offset{Topic: topic, Partition: p, At: end[p] - wantLag[p], LeaderEpoch: -1})
	}
	resp, err := kadm.NewClient(kcl).CommitOffsets(ctx, lagging, lagOffs)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		t.Fatalf("commit offsets of %s without a member: %v", lagging, err)
	}

	// The active group: one member, caught up and committed.
	tr := newGroupsTracker()
	mctx, mcancel := context.WithCancel(context.Background())
	memberDone := make(chan struct{})
	go func() {
		defer close(memberDone)
		franzGroupMember(mctx, bs, topic, active, "tools-active-member", tr.rec("m"), tr.errf("m"))
	}()
	defer func() {
		mcancel()
		<-memberDone
	}()
	groupsWait(t, "the active member caught up and committed", groupsDeadline, func() bool {
		c := groupsCommitted(t, bs, active, topic)
		for p, e := range end {
			if c[p] != e {
				return false
			}
		}
		return true
	}, func() string { return fmt.Sprintf("processed %v, errors %q", tr.members(), tr.clientErr) })
	// Wait for the group to be stable (the tool's member view).
	groupsWait(t, "the active group Stable with one member", 30*time.Second, func() bool {
		state, _, members := groupsDescribe(t, bs, active)
		return state == "Stable" && len(members) == 1
	}, func() string { s, p, m := groupsDescribe(t, bs, active); return fmt.Sprintf("%s %s %v", s, p, m) })

	// tool runs ConsumerGroupCommand; for a group without members Kafka's
	// tool also prints "Consumer group '<g>' has no active members." on
	// stderr, which noMembers expects.
	tool := func(noMembers string, args ...string) string {
		t.Helper()
		began := time.Now()
		stdout, stderr, err := jvm.runTool(toolTimeout, "", consumerGroupCommandClass, append([]string{"--bootstrap-server", bs}, args...)...)
		t.Logf("ConsumerGroupCommand %s: %v\n%s", strings.Join(args, " "), time.Since(began).Round(time.Millisecond), stdout)
		if err != nil {
			t.Fatalf("ConsumerGroupCommand %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, stderr)
		}
		if noMembers != "" {
			line := fmt.Sprintf("Consumer group '%s' has no active members.", noMembers)
			if !strings.Contains(stderr, line) {
				t.Errorf("ConsumerGroupCommand %s: stderr lacks %q:\n%s", strings.Join(args, " "), line, stderr)
			}
			stderr = strings.ReplaceAll(stderr, line, "")
		}
		if bad := toolStderrProblems(stderr); len(bad) > 0 {
			t.Errorf("ConsumerGroupCommand %s wrote to stderr:\n%s", strings.Join(args, " "), strings.Join(bad, "\n"))
		}
		return stdout
	}

	t.Run("list", func(t *testing.T) {
		out := tool("", "--list")
		got := strings.Fields(out)
		sort.Strings(got)
		if want := []string{active, lagging}; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("--list printed %q, want the groups %q", got, want)
		}
	})

	describe := func(t *testing.T, group string, wantLag map[int32]int64, member bool) {
		noMembers := group
		if member {
			noMembers = ""
		}
		rows := groupsToolTable(tool(noMembers, "--describe", "--group", group))
		if len(rows) != 3 {
			t.Fatalf("--describe %s: %d partition rows, want 3: %v", group, len(rows), rows)
		}
		for _, r := range rows {
			p, _ := strconv.Atoi(r["PARTITION"])
			want := map[string]string{
				"GROUP": group, "TOPIC": topic,
				"CURRENT-OFFSET": strconv.FormatInt(end[int32(p)]-wantLag[int32(p)], 10),
				"LOG-END-OFFSET": strconv.FormatInt(end[int32(p)], 10),
				"LAG":            strconv.FormatInt(wantLag[int32(p)], 10),
			}
			if member {
				want["HOST"] = "/127.0.0.1"
				want["CLIENT-ID"] = "tools-active-member"
				if r["CONSUMER-ID"] == "-" || r["CONSUMER-ID"] == "" {
					t.Errorf("--describe %s partition %d: no consumer id: %v", group, p, r)
				}
			} else {
				want["CONSUMER-ID"], want["HOST"], want["CLIENT-ID"] = "-", "-", "-"
			}
			for col, w := range want {
				if r[col] != w {
					t.Errorf("--describe %s partition %d: %s is %q, want %q (row %v)", group, p, col, r[col], w, r)
				}
			}
		}
	}
	t.Run("describe-active", func(t *testing.T) { describe(t, active, map[int32]int64{}, true) })
	t.Run("describe-lagging", func(t *testing.T) { describe(t, lagging, wantLag, false) })

	t.Run("members", func(t *testing.T) {
		rows := groupsToolTable(tool("", "--describe", "--group", active, "--members"))
		if len(rows) != 1 {
			t.Fatalf("--members: %d rows, want 1: %v", len(rows), rows)
		}
		if r := rows[0]; r["CLIENT-ID"] != "tools-active-member" || r["HOST"] != "/127.0.0.1" || r["#PARTITIONS"] != "3" {
			t.Errorf("--members row %v: want CLIENT-ID tools-active-member, HOST /127.0.0.1, #PARTITIONS 3", r)
		}
	})

	t.Run("state", func(t *testing.T) {
		for group, want := range map[string][2]string{active: {"Stable", "1"}, lagging: {"Empty", "0"}} {
			noMembers := ""
			if group == lagging {
				noMembers = lagging
			}
			rows := groupsToolTable(tool(noMembers, "--describe", "--group", group, "--state"))
			if len(rows) != 1 {
				t.Fatalf("--state %s: %d rows, want 1: %v", group, len(rows), rows)
			}
			// The header's "COORDINATOR (ID)" is two words, and so is the
			// value "host:port  (id)": the columns still line up.
			if r := rows[0]; r["STATE"] != want[0] || r["#MEMBERS"] != want[1] {
				t.Errorf("--state %s: row %v, want STATE %s and #MEMBERS %s", group, r, want[0], want[1])
			}
		}
	})
}
