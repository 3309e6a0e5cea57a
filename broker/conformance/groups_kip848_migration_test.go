package conformance

import (
	"path/filepath"
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
	if groupsAgainstKafka() {
		kb := testbroker.StartKafka(t)
		groupsWarmUp(t, kb.Addr())
		b = kb
	} else {
		eb := extBroker(t, "group.initial.rebalance.delay.ms=0",
			"group.consumer.heartbeat.interval.ms=500", "group.consumer.min.heartbeat.interval.ms=500")
		groupsWarmUp(t, eb.Addr())
		b = eb
	}
	groupsJava(t, k, classes, "migrate", b.Addr(), "groups-kip848-migrate", "java-kip848-migrate")
}
