package conformance

// Consumer groups with Apache Kafka's Java client (java/GroupsConformance.java)
// and Kafka's consumer-groups tool. See groups_setup_test.go for which broker
// these run against.

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// groupsJava runs GroupsConformance with args and fails the test unless it
// prints "GROUPS OK". As in TestJavaClient, anything the client logs (at
// WARN and above, on stderr) is a finding and fails the test: against
// Kafka 4.4.0 these runs log nothing, rebalances and refused commits
// included.
func groupsJava(t *testing.T, k javaKafka, classes string, args ...string) {
	t.Helper()
	start := time.Now()
	stdout, stderr, err := k.run(t, 150*time.Second, k.classpath(classes), nil, "GroupsConformance", args...)
	t.Logf("java GroupsConformance %s: %v", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	if err != nil || !strings.Contains(stdout, "GROUPS OK") {
		t.Fatalf("java GroupsConformance failed: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	if testing.Verbose() {
		t.Logf("stdout:\n%s", stdout)
	}
	if s := strings.TrimSpace(stderr); s != "" {
		t.Errorf("java GroupsConformance passed but the client logged warnings:\n%s", s)
	}
}

// TestGroupsJavaRebalance: three KafkaConsumers (subscribe, commit after
// process) in one group on a 6-partition topic under a live producer; one
// leaves, then one joins; every record is processed, none that was
// committed is processed again, no partition has two owners, each
// assignment is balanced, and the committed offsets end at the end offsets.
// Once with the default assignors (eager Range), once with
// CooperativeStickyAssignor alone.
func TestGroupsJavaRebalance(t *testing.T) {
	k := javaSetup(t)
	classes := k.compile(t, filepath.Join(testbroker.RepoRoot(), "broker", "conformance", "java", "GroupsConformance.java"))
	b := groupsStart(t)
	for _, strategy := range []string{"default", "cooperative-sticky"} {
		t.Run(strategy, func(t *testing.T) {
			groupsJava(t, k, classes, "rebalance", b.Addr(), "groups-java-"+strategy, "java-"+strategy, strategy)
		})
	}
}

// TestGroupsJavaStaticMember: two static members (group.instance.id); one
// is closed and started again within the session timeout and gets its
// partitions back with no rebalance (same generation, no callbacks on the
// other member).
func TestGroupsJavaStaticMember(t *testing.T) {
	k := javaSetup(t)
	classes := k.compile(t, filepath.Join(testbroker.RepoRoot(), "broker", "conformance", "java", "GroupsConformance.java"))
	b := groupsStart(t)
	groupsJava(t, k, classes, "static", b.Addr(), "groups-java-static", "java-static")
}
