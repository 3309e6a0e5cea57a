package conformance

// Apache Kafka's Java client (kafka-clients 4.4.0, from the jars that
// scripts/kafka-jars.sh fetches) against the real broker binary:
// java/Conformance.java is compiled with javac against the jars (by
// testbroker.JDK, cached by content hash) and run with java.
// kafkatools_test.go uses the same helpers to run Kafka's command-line tools.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// javaKafka is a JDK and the Kafka 4.4.0 jars (testbroker.JDK) that runs
// programs to the end.
type javaKafka struct{ testbroker.JDK }

// javaSetup finds Java 17+, javac and the Kafka jars, or skips (fails under CI).
func javaSetup(t *testing.T) javaKafka {
	t.Helper()
	return javaKafka{testbroker.FindJDK(t)}
}

// classpath and compile are the JDK's, by the names the tests here use.
func (k javaKafka) classpath(dirs ...string) string { return k.Classpath(dirs...) }

func (k javaKafka) compile(t *testing.T, srcs ...string) string {
	t.Helper()
	return k.Compile(t, srcs...)
}

// run runs a Java main class on classpath with args, feeding stdin (may be
// nil), and returns stdout, stderr and the error (*exec.ExitError for a
// non-zero exit). A run longer than timeout is killed.
func (k javaKafka) run(t *testing.T, timeout time.Duration, classpath string, stdin io.Reader, class string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	argv := append(append(k.JVMArgs(classpath), class), args...)
	cmd := exec.CommandContext(ctx, k.Java, argv...)
	var out, errOut bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &out, &errOut
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("killed after %v: %w", timeout, err)
	}
	return out.String(), errOut.String(), err
}

// extBroker starts the broker for a test of a non-Go client and prints its
// log when the test fails (or CONFORMANCE_BROKER_LOG is set).
func extBroker(t *testing.T, props ...string) *testbroker.Broker {
	t.Helper()
	b := testbroker.Start(t, props...)
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("CONFORMANCE_BROKER_LOG") != "" {
			t.Logf("broker log:\n%s", b.Log())
		}
	})
	return b
}

// extCodecs are the compression codecs each client produces, with their id
// in a record batch's attributes (the low 3 bits).
var extCodecs = []struct {
	name string
	id   int16
}{{"gzip", 1}, {"snappy", 2}, {"lz4", 3}, {"zstd", 4}}

// extCheckStoredCodec reads every record batch of partition 0 of topic from
// the broker's data directory and checks the producer's compression reached
// the log (compression.type=producer keeps what the client sent): every
// batch of 10 records or more is compressed with want (such a batch of this
// test's repetitive values always shrinks), and no batch uses another codec.
// Small batches may be plain: librdkafka sends a batch uncompressed when
// compressing does not make it smaller.
func extCheckStoredCodec(t *testing.T, b *testbroker.Broker, topic string, want int16, client string) {
	t.Helper()
	path := filepath.Join(b.DataDir(), topic+"-0", "00000000000000000000.log")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("codec check: %v", err)
		return
	}
	byCodec := map[int16]int{}     // batches
	recsByCodec := map[int16]int{} // records
	bad := 0
	for pos := 0; pos+61 <= len(data); {
		// baseOffset int64, batchLength int32, partitionLeaderEpoch int32,
		// magic int8, crc uint32, attributes int16, lastOffsetDelta int32,
		// baseTimestamp, maxTimestamp int64, producerId int64, producerEpoch
		// int16, baseSequence int32, records count int32.
		base := int64(binary.BigEndian.Uint64(data[pos:]))
		length := int(int32(binary.BigEndian.Uint32(data[pos+8:])))
		if magic := data[pos+16]; magic != 2 || length < 49 {
			t.Errorf("%s: batch at byte %d: magic %d, length %d", path, pos, magic, length)
			return
		}
		codec := int16(binary.BigEndian.Uint16(data[pos+21:])) & 7
		count := int(int32(binary.BigEndian.Uint32(data[pos+57:])))
		byCodec[codec]++
		recsByCodec[codec] += count
		if codec != want && (codec != 0 || count >= 10) {
			bad++
			if bad <= 3 {
				t.Errorf("%s: batch at offset %d (%d records) is stored with codec %d (%s), want %d (%s): %s was configured with compression.type=%s",
					path, base, count, codec, extCodecName(codec), want, extCodecName(want), client, extCodecName(want))
			}
		}
		pos += 12 + length
	}
	if byCodec[want] == 0 {
		hint := ""
		if want == 3 && len(byCodec) == 1 && byCodec[0] > 0 {
			// librdkafka's LZ4 feature is keyed on FindCoordinator v0
			// (src/rdkafka_feature.c, a proxy for Kafka 0.8.2); without
			// it rdkafka_msgset_writer.c sends the batch uncompressed,
			// logging "Broker does not support compression type lz4"
			// at most once a day.
			hint = "; librdkafka compresses with lz4 only when the broker lists FindCoordinator (API key 10) in ApiVersions"
		}
		t.Errorf("%s: no batch is %s-compressed (batches by codec %v, records by codec %v); %s was configured with compression.type=%s%s",
			path, extCodecName(want), byCodec, recsByCodec, client, extCodecName(want), hint)
	} else if bad > 0 {
		t.Errorf("%s: %d badly compressed batches (batches by codec %v, records by codec %v)", path, bad, byCodec, recsByCodec)
	}
}

func extCodecName(id int16) string {
	for _, c := range extCodecs {
		if c.id == id {
			return c.name
		}
	}
	return "none"
}

// TestJavaClient runs java/Conformance.java (Admin, an idempotent producer
// with its defaults, a consumer by assign(), and a producer per codec)
// against the broker.
func TestJavaClient(t *testing.T) {
	k := javaSetup(t)
	classes := k.compile(t, filepath.Join(testbroker.RepoRoot(), "broker", "conformance", "java", "Conformance.java"))
	b := extBroker(t)
	start := time.Now()
	stdout, stderr, err := k.run(t, 120*time.Second, k.classpath(classes), nil, "Conformance", b.Addr(), "java", "10000")
	t.Logf("java Conformance: %v", time.Since(start).Round(time.Millisecond))
	if err != nil || !strings.Contains(stdout, "CONFORMANCE OK") {
		t.Fatalf("java Conformance failed: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	if testing.Verbose() {
		t.Logf("stdout:\n%s", stdout)
	}
	if strings.TrimSpace(stderr) != "" {
		// The client logs at WARN and above; a warning is a finding.
		t.Errorf("java Conformance passed but the client logged warnings:\n%s", stderr)
	}
	for _, c := range extCodecs {
		extCheckStoredCodec(t, b, "java-"+c.name, c.id, "the Java producer")
	}
}
