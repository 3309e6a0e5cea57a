package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/kafkacli"
)

// A real Apache Kafka 4.4.0 broker for the tests, run from the jars of
// scripts/kafka-jars.sh (or TRIBUTARY_KAFKA_LIB) as docs/kafka-reference.md
// describes: single-node KRaft on loopback, data in the test's temporary
// directory. Without Java or the jars the test is skipped, or fails under CI.

// javaKafka runs Kafka's broker and tools.
type javaKafka struct {
	java, lib string
	log4j     string // log4j2.properties, "" if absent
}

func (k javaKafka) args(class string, args ...string) []string {
	a := []string{"-Xshare:auto", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}
	if k.log4j != "" {
		a = append(a, "-Dlog4j2.configurationFile="+k.log4j, "-Dkafka.log.level=WARN")
	}
	return append(append(a, "-cp", filepath.Join(k.lib, "*"), class), args...)
}

// run runs one Kafka tool to its end.
func (k javaKafka) run(t *testing.T, class string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, k.java, k.args(class, args...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

func loopbackPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startKafka starts a single-node Kafka 4.4 broker and returns its
// bootstrap address; it is stopped (SIGTERM, then SIGKILL) when the test
// ends.
func startKafka(t *testing.T, k javaKafka) string {
	t.Helper()
	dir := t.TempDir()
	port, cport := loopbackPort(t), loopbackPort(t)
	props := filepath.Join(dir, "server.properties")
	os.WriteFile(props, fmt.Appendf(nil, `process.roles=broker,controller
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
group.initial.rebalance.delay.ms=0
`, port, cport, filepath.Join(dir, "data")), 0o644)
	if out, errOut, err := k.run(t, "kafka.tools.StorageTool", "format", "-t", "q1Sh-9_ISia_zwGINzRvyQ", "-c", props); err != nil {
		t.Fatalf("StorageTool format: %v\n%s%s", err, out, errOut)
	}

	var log syncBuffer
	a := []string{"-Xms256m", "-Xmx512m", "-XX:+UseG1GC"}
	if k.log4j != "" {
		a = append(a, "-Dlog4j2.configurationFile="+k.log4j, "-Dkafka.log.level=WARN")
	}
	cmd := exec.Command(k.java, append(a, "-cp", filepath.Join(k.lib, "*"), "kafka.Kafka", props)...)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("Kafka's log:\n%s", log.String())
		}
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(90 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		cl, err := kafkacli.Connect(ctx, addr)
		cancel()
		if err == nil {
			cl.Close()
			return addr
		}
		select {
		case <-done:
			t.Fatalf("Kafka exited before it started:\n%s", log.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("Kafka not answering after 90s (%v):\n%s", err, log.String())
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
