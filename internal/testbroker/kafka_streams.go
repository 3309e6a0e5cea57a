package testbroker

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// WithKafkaStreams is k with Apache Kafka Streams 4.4's jar on the
// classpath, from TRIBUTARY_KAFKA_STREAMS_LIB or else
// scripts/kafka-streams-jars.sh (Maven Central into the cache beside
// Kafka's jars). Without it the test is skipped, or fails
// under CI (Require).
func (k JDK) WithKafkaStreams(t testing.TB) JDK {
	t.Helper()
	dir := os.Getenv("TRIBUTARY_KAFKA_STREAMS_LIB")
	if dir == "" {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command("bash", filepath.Join(RepoRoot(), "scripts", "kafka-streams-jars.sh"))
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		Require(t, err == nil, "Apache Kafka Streams' jar", fmt.Sprintf("install Maven 3.8+, then run scripts/kafka-streams-jars.sh, or set TRIBUTARY_KAFKA_STREAMS_LIB to a directory holding kafka-streams-4.4.0.jar (scripts/kafka-streams-jars.sh: %v: %s)", err, stderr.String()))
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		dir = strings.TrimSpace(lines[len(lines)-1])
	}
	jars, _ := filepath.Glob(filepath.Join(dir, "kafka-streams-*.jar"))
	Require(t, len(jars) > 0, "the kafka-streams jar in "+dir, "run scripts/kafka-streams-jars.sh")
	k.Extra = append(append([]string(nil), k.Extra...), dir)
	return k
}
