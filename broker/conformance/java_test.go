package conformance

// Apache Kafka's Java client (kafka-clients 4.4.0, from the jars that
// scripts/kafka-jars.sh fetches) against the real broker binary:
// java/Conformance.java is compiled here with javac against the jars
// (cached by content hash) and run with java. kafkatools_test.go uses the
// same helpers to run Kafka's command-line tools.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
)

const javaHow = "install Java 17+ (JDK, with javac) and Maven 3.8+, then run scripts/kafka-jars.sh " +
	"(Apache Kafka 4.4.0 from Maven Central into ~/.cache/tributary), or set TRIBUTARY_KAFKA_LIB " +
	"to a directory of the Kafka 4.4.0 jars"

// javaKafka is a JDK and the Kafka 4.4.0 jars.
type javaKafka struct {
	java, javac string
	lib         string // directory of jars
	log4j       string // log4j2.properties written by scripts/kafka-jars.sh, or ""
}

// javaSetup finds Java 17+ and the Kafka jars, or skips (fails under CI).
func javaSetup(t *testing.T) javaKafka {
	t.Helper()
	var k javaKafka
	var err error
	k.java, err = exec.LookPath("java")
	testbroker.Require(t, err == nil, "java", javaHow)
	k.javac, err = exec.LookPath("javac")
	testbroker.Require(t, err == nil, "javac", javaHow)
	out, err := exec.Command(k.java, "-version").CombinedOutput()
	testbroker.Require(t, err == nil, "a working java", fmt.Sprintf("java -version: %v: %s; %s", err, out, javaHow))
	m := regexp.MustCompile(`version "(\d+)`).FindSubmatch(out)
	v := 0
	if m != nil {
		v, _ = strconv.Atoi(string(m[1]))
	}
	testbroker.Require(t, v >= 17, "Java 17+", fmt.Sprintf("java -version says %q; %s", out, javaHow))

	if k.lib = os.Getenv("TRIBUTARY_KAFKA_LIB"); k.lib == "" {
		script := filepath.Join(testbroker.RepoRoot(), "scripts", "kafka-jars.sh")
		var stdout, stderr bytes.Buffer
		cmd := exec.Command("bash", script)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		testbroker.Require(t, err == nil, "the Kafka 4.4.0 jars", fmt.Sprintf("%s: %v: %s; %s", script, err, stderr.String(), javaHow))
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		k.lib = strings.TrimSpace(lines[len(lines)-1])
	}
	jars, _ := filepath.Glob(filepath.Join(k.lib, "kafka-clients-*.jar"))
	tools, _ := filepath.Glob(filepath.Join(k.lib, "kafka-tools-*.jar"))
	testbroker.Require(t, len(jars) > 0 && len(tools) > 0, "the Kafka 4.4.0 jars", fmt.Sprintf("no kafka-clients/kafka-tools jar in %q; %s", k.lib, javaHow))
	if conf := filepath.Join(filepath.Dir(k.lib), "config", "log4j2.properties"); extFileExists(conf) {
		k.log4j = conf
	}
	return k
}

func extFileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// jvmArgs are the flags every JVM here gets: small heap, and the client's
// log at WARN to stderr (so a client's complaint shows in the test output).
func (k javaKafka) jvmArgs(classpath string) []string {
	args := []string{"-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true", "-cp", classpath}
	if k.log4j != "" {
		args = append(args, "-Dlog4j2.configurationFile="+k.log4j, "-Dkafka.log.level=WARN")
	}
	return args
}

// classpath is dirs followed by every jar of the Kafka lib (the JVM expands
// the wildcard).
func (k javaKafka) classpath(dirs ...string) string {
	return strings.Join(append(dirs, filepath.Join(k.lib, "*")), string(os.PathListSeparator))
}

// compile compiles the .java files with javac against the Kafka jars and
// returns the class directory. The result is cached under
// ${TRIBUTARY_CACHE:-~/.cache/tributary}/javac/<hash of the sources, the
// JDK and the jar names>, since javac with 90 jars on the classpath takes
// seconds.
func (k javaKafka) compile(t *testing.T, srcs ...string) string {
	t.Helper()
	h := sha256.New()
	ver, _ := exec.Command(k.javac, "-version").CombinedOutput()
	fmt.Fprintf(h, "javac %s\nlib %s\n", bytes.TrimSpace(ver), k.lib)
	jars, _ := filepath.Glob(filepath.Join(k.lib, "*.jar"))
	sort.Strings(jars)
	for _, j := range jars {
		fmt.Fprintln(h, filepath.Base(j))
	}
	for _, src := range srcs {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%s %d\n", filepath.Base(src), len(data))
		h.Write(data)
	}
	sum := hex.EncodeToString(h.Sum(nil))[:24]

	cache := os.Getenv("TRIBUTARY_CACHE")
	if cache == "" {
		if home, err := os.UserHomeDir(); err == nil {
			cache = filepath.Join(home, ".cache", "tributary")
		}
	}
	var dir string
	if cache != "" {
		dir = filepath.Join(cache, "javac", sum)
		if extFileExists(filepath.Join(dir, ".complete")) {
			return dir
		}
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			cache = ""
		}
	}
	tmpParent := t.TempDir()
	if cache != "" {
		tmpParent = filepath.Dir(dir)
	}
	tmp, err := os.MkdirTemp(tmpParent, "tmp-"+sum+"-")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	args := append([]string{"-Xlint:all,-options,-processing", "-Werror", "-encoding", "UTF-8", "-cp", k.classpath(), "-d", tmp}, srcs...)
	out, err := exec.Command(k.javac, args...).CombinedOutput()
	if err != nil {
		os.RemoveAll(tmp)
		t.Fatalf("javac %s: %v\n%s", strings.Join(srcs, " "), err, out)
	}
	t.Logf("javac %s: %v", strings.Join(extRelPaths(srcs), " "), time.Since(start).Round(time.Millisecond))
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if cache == "" {
		return tmp
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another test process won the race (the directory exists now).
		os.RemoveAll(tmp)
		if !extFileExists(filepath.Join(dir, ".complete")) {
			t.Fatalf("javac cache %s: %v", dir, err)
		}
	}
	return dir
}

func extRelPaths(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		if r, err := filepath.Rel(testbroker.RepoRoot(), p); err == nil {
			out[i] = r
		} else {
			out[i] = p
		}
	}
	return out
}

// run runs a Java main class on classpath with args, feeding stdin (may be
// nil), and returns stdout, stderr and the error (*exec.ExitError for a
// non-zero exit). A run longer than timeout is killed.
func (k javaKafka) run(t *testing.T, timeout time.Duration, classpath string, stdin io.Reader, class string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	argv := append(append(k.jvmArgs(classpath), class), args...)
	cmd := exec.CommandContext(ctx, k.java, argv...)
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
