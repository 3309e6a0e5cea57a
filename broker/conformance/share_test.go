package conformance

// KIP-932 share groups with Apache Kafka's Java KafkaShareConsumer 4.4,
// against tributary or, with TRIBUTARY_GROUPS_AGAINST_KAFKA=1, a real
// Kafka 4.4.0 (groups_setup_test.go).

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

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

