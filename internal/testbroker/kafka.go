package testbroker

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// HowToGetKafka says how to provide Apache Kafka's jars to the tests.
const HowToGetKafka = "install Java 17+ and Maven 3.8+, then run scripts/kafka-jars.sh " +
	"(Apache Kafka 4.4.0 from Maven Central into ~/.cache/tributary), or set TRIBUTARY_KAFKA_LIB to a directory of its jars"

// KafkaLib returns the java binary and the directory of Apache Kafka's jars,
// running scripts/kafka-jars.sh unless TRIBUTARY_KAFKA_LIB names the
// directory. Without them the test is skipped, or fails under CI (Require).
func KafkaLib(t testing.TB) (java, lib string) {
	t.Helper()
	java, err := exec.LookPath("java")
	Require(t, err == nil, "java", HowToGetKafka)
	out, err := exec.Command(java, "-version").CombinedOutput()
	Require(t, err == nil, "a working java", fmt.Sprintf("java -version: %v: %s", err, out))
	m := regexp.MustCompile(`version "(\d+)`).FindSubmatch(out)
	v := 0
	if m != nil {
		v, _ = strconv.Atoi(string(m[1]))
	}
	Require(t, v >= 17, "Java 17+", fmt.Sprintf("Kafka 4.4 needs Java 17 or newer; java -version says %q", strings.TrimSpace(string(out))))
	if lib = os.Getenv("TRIBUTARY_KAFKA_LIB"); lib == "" {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command("bash", filepath.Join(RepoRoot(), "scripts", "kafka-jars.sh"))
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		Require(t, err == nil, "Apache Kafka's jars", fmt.Sprintf("%s (scripts/kafka-jars.sh: %v: %s)", HowToGetKafka, err, stderr.String()))
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		lib = strings.TrimSpace(lines[len(lines)-1])
	}
	jars, _ := filepath.Glob(filepath.Join(lib, "kafka-tools-*.jar"))
	Require(t, len(jars) > 0, "the kafka-tools jar in "+lib, HowToGetKafka)
	return java, lib
}
