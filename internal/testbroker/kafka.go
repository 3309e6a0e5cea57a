package testbroker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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

// Kafka is a real Apache Kafka 4.4 broker for tests that compare with it:
// one process in KRaft combined mode on two free loopback ports, its data in
// the test's temporary directory, stopped when the test ends.
type Kafka struct {
	t         testing.TB
	java, lib string
	props     string
	port      int
	saslPort  int // StartKafkaAuthorizer's SASL listener
	cmd       *exec.Cmd
	done      chan struct{}
	logMu     sync.Mutex
	log       bytes.Buffer
	logFrom   int // where the current process's log starts
}

// kafkaJVM is the JVM arguments for a Kafka class, logging through the
// log4j2 configuration scripts/kafka-jars.sh writes beside the jars.
func kafkaJVM(lib string, level string, heap ...string) []string {
	args := append([]string{"-Djava.awt.headless=true"}, heap...)
	if conf := filepath.Join(filepath.Dir(lib), "config", "log4j2.properties"); fileExists(conf) {
		args = append(args, "-Dlog4j2.configurationFile="+conf, "-Dkafka.log.level="+level)
	}
	return append(args, "-cp", filepath.Join(lib, "*"))
}

func fileExists(path string) bool { _, err := os.Stat(path); return err == nil }

// RunKafkaTool runs one of Kafka's command-line tools (its main class) to
// the end and returns what it printed; it is killed after 2 minutes.
func RunKafkaTool(t testing.TB, class string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	return RunKafkaToolWithin(t, 2*time.Minute, class, args...)
}

// RunKafkaToolWithin is RunKafkaTool killed after d instead: a long
// test's tool reads gigabytes.
func RunKafkaToolWithin(t testing.TB, d time.Duration, class string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	java, lib := KafkaLib(t)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, java, append(append(kafkaJVM(lib, "WARN", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"), class), args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// StartKafka formats a KRaft log dir and starts Kafka on it. Beyond the
// defaults it has no initial rebalance delay and a __consumer_offsets of 3
// partitions, which Kafka creates faster, as a test broker should.
func StartKafka(t testing.TB) *Kafka {
	t.Helper()
	return StartKafkaWith(t)
}

// StartKafkaWith is StartKafka with extra server.properties lines
// ("name=value"), e.g. the group.consumer.* settings a comparison gives
// both brokers.
func StartKafkaWith(t testing.TB, extra ...string) *Kafka {
	t.Helper()
	java, lib := KafkaLib(t)
	dir := t.TempDir()
	k := &Kafka{t: t, java: java, lib: lib, port: freePort(t), props: filepath.Join(dir, "server.properties")}
	cport := freePort(t)
	props := fmt.Sprintf(`process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:%[2]d
listeners=PLAINTEXT://127.0.0.1:%[1]d,CONTROLLER://127.0.0.1:%[2]d
advertised.listeners=PLAINTEXT://127.0.0.1:%[1]d
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=%[3]s
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
`, k.port, cport, filepath.Join(dir, "data"))
	for _, e := range extra {
		props += e + "\n"
	}
	if err := os.WriteFile(k.props, []byte(props), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, err := RunKafkaTool(t, "kafka.tools.StorageTool", "format", "-t", randomClusterID(), "-c", k.props); err != nil {
		t.Fatalf("kafka StorageTool format: %v\n%s%s", err, out, errOut)
	}
	k.start()
	t.Cleanup(k.stop)
	return k
}

func (k *Kafka) start() {
	k.t.Helper()
	k.cmd = exec.Command(k.java, append(kafkaJVM(k.lib, "INFO", "-Xms256m", "-Xmx512m", "-XX:+UseG1GC"), "kafka.Kafka", k.props)...)
	k.cmd.Stdout, k.cmd.Stderr = (*kafkaLog)(k), (*kafkaLog)(k)
	k.done = make(chan struct{})
	k.logMu.Lock()
	k.logFrom = k.log.Len()
	k.logMu.Unlock()
	if err := k.cmd.Start(); err != nil {
		k.t.Fatal(err)
	}
	go func() { k.cmd.Wait(); close(k.done) }()
	deadline := time.After(180 * time.Second)
	for !strings.Contains(k.currentLog(), "Kafka Server started") {
		select {
		case <-k.done:
			k.t.Fatalf("kafka exited before it started:\n%s", k.Tail())
		case <-deadline:
			k.cmd.Process.Kill()
			<-k.done
			k.t.Fatalf("kafka not started after 180 s:\n%s", k.Tail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

type kafkaLog Kafka

func (w *kafkaLog) Write(p []byte) (int, error) {
	w.logMu.Lock()
	defer w.logMu.Unlock()
	return w.log.Write(p)
}

func (k *Kafka) currentLog() string {
	k.logMu.Lock()
	defer k.logMu.Unlock()
	return k.log.String()[k.logFrom:]
}

// Addr is the bootstrap address.
func (k *Kafka) Addr() string { return fmt.Sprintf("127.0.0.1:%d", k.port) }

// Log is everything Kafka printed, across restarts.
func (k *Kafka) Log() string {
	k.logMu.Lock()
	defer k.logMu.Unlock()
	return k.log.String()
}

// Tail is the log's warnings and errors, the last 60.
func (k *Kafka) Tail() string {
	var keep []string
	for _, l := range strings.Split(k.Log(), "\n") {
		if strings.Contains(l, "WARN") || strings.Contains(l, "ERROR") || strings.Contains(l, "Exception") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep[max(0, len(keep)-60):], "\n")
}

func (k *Kafka) running() bool {
	select {
	case <-k.done:
		return false
	default:
		return true
	}
}

// Kill is kill -9.
func (k *Kafka) Kill() {
	k.cmd.Process.Kill()
	<-k.done
}

// Restart starts Kafka again on the same ports and data.
func (k *Kafka) Restart() {
	k.t.Helper()
	if k.running() {
		k.t.Fatal("Restart of a running kafka")
	}
	k.start()
}

func (k *Kafka) stop() {
	if !k.running() {
		return
	}
	k.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-k.done:
	case <-time.After(30 * time.Second):
		k.cmd.Process.Kill()
		<-k.done
	}
	if k.t.Failed() {
		k.t.Logf("kafka log (warnings and errors):\n%s", k.Tail())
	}
}

// randomClusterID is a Kafka Uuid: 16 random bytes, base64url unpadded. Like
// Kafka's Uuid.randomUuid it never starts with '-', which kafka-storage's
// argument parser would take for a flag (one id in 64 did, and failed CI).
func randomClusterID() string {
	id := make([]byte, 16)
	for {
		rand.Read(id)
		if s := base64.RawURLEncoding.EncodeToString(id); s[0] != '-' {
			return s
		}
	}
}
