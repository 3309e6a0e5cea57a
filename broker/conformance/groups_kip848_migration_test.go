package conformance

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestGroupsKIP848Migration: KIP-848's online migration with Java 4.4
// KafkaConsumers (GroupsConformance migrate). A classic group of three
// members under a live producer, committing after processing, is upgraded
// member by member to group.protocol=consumer (a CONSUMER group from the
// first consumer-protocol member on, classic members served through
// JoinGroup/SyncGroup/Heartbeat meanwhile), then downgraded member by
// member back to a CLASSIC group: every record processed, none twice, no
// partition with two owners, the committed offsets at the end offsets.
// The same test passes against Apache Kafka 4.4
// (TRIBUTARY_GROUPS_AGAINST_KAFKA=1).
func TestGroupsKIP848Migration(t *testing.T) {
	k := javaSetup(t)
	classes := k.compile(t, filepath.Join(testbroker.RepoRoot(), "broker", "conformance", "java", "GroupsConformance.java"))
	var b groupsBroker
	var trib interface{ AdminAddr() string }
	if groupsAgainstKafka() {
		kb := testbroker.StartKafka(t)
		groupsWarmUp(t, kb.Addr())
		b = kb
	} else {
		eb := extBroker(t, "group.initial.rebalance.delay.ms=0",
			"group.consumer.heartbeat.interval.ms=500", "group.consumer.min.heartbeat.interval.ms=500")
		groupsWarmUp(t, eb.Addr())
		b, trib = eb, eb
	}
	groupsJava(t, k, classes, "migrate", b.Addr(), "groups-kip848-migrate", "java-kip848-migrate")
	if os.Getenv("TRIBUTARY_TEST_LONG") != "" {
		// Classic members with CooperativeStickyAssignor: they keep
		// what they own when they rejoin, and revoke only what the
		// consumer group takes back.
		groupsJava(t, k, classes, "migrate", b.Addr(), "groups-kip848-migrate-coop", "java-kip848-migrate-coop", "cooperative-sticky")
	}
	if trib != nil {
		// The consumer-protocol members used OffsetCommit and OffsetFetch
		// v10 (topic ids), the versions the broker advertises.
		for _, api := range []string{"OffsetCommit", "OffsetFetch"} {
			if n := requestsByVersion(t, trib.AdminAddr(), api, 10); n == 0 {
				t.Errorf("no %s v10 request served: the Java 4.4 consumer-protocol members did not use topic ids", api)
			}
		}
	}
}

// requestsByVersion is how many requests of api at version the broker
// served (tributary_broker_requests_by_version_total).
func requestsByVersion(t *testing.T, adminAddr, api string, version int) float64 {
	t.Helper()
	resp, err := http.Get("http://" + adminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^tributary_broker_requests_by_version_total\{api="` + api + `",version="` + strconv.Itoa(version) + `"\} (\S+)$`)
	m := re.FindSubmatch(body)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseFloat(string(m[1]), 64)
	return n
}
