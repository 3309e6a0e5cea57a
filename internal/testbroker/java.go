package testbroker

// Java programs against Apache Kafka's client, for tests that run one:
// find a JDK and the jars, compile the sources once (cached by content),
// and put together the JVM's arguments.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// JDK is Java 17+ with javac, and Apache Kafka's jars.
type JDK struct {
	Java, Javac string
	Lib         string   // directory of Kafka's jars
	Extra       []string // more jar directories, before Lib (WithKafkaStreams)
	log4j       string   // log4j2.properties written by scripts/kafka-jars.sh beside Lib, or ""
}

// howToGetJDK is HowToGetKafka for a test that also compiles.
const howToGetJDK = "a JDK is needed, not just a JRE; " + HowToGetKafka

// FindJDK finds what KafkaLib finds, javac and the kafka-clients jar.
// Without them the test is skipped, or fails under CI (Require); a test
// that must fail instead passes NoSkip(t).
func FindJDK(t testing.TB) JDK {
	t.Helper()
	var k JDK
	k.Java, k.Lib = KafkaLib(t)
	var err error
	k.Javac, err = exec.LookPath("javac")
	Require(t, err == nil, "javac", howToGetJDK)
	jars, _ := filepath.Glob(filepath.Join(k.Lib, "kafka-clients-*.jar"))
	Require(t, len(jars) > 0, "the kafka-clients jar in "+k.Lib, HowToGetKafka)
	if conf := filepath.Join(filepath.Dir(k.Lib), "config", "log4j2.properties"); fileExists(conf) {
		k.log4j = conf
	}
	return k
}

// NoSkip is t with its Skip methods failing the test instead, for a test
// whose outside parts are not optional (Require then always fails).
func NoSkip(t testing.TB) testing.TB { return noSkipTB{t} }

type noSkipTB struct{ testing.TB }

func (t noSkipTB) Skip(args ...any)                 { t.Helper(); t.Fatal(args...) }
func (t noSkipTB) Skipf(format string, args ...any) { t.Helper(); t.Fatalf(format, args...) }
func (t noSkipTB) SkipNow()                         { t.Helper(); t.FailNow() }

// JVMArgs are the flags every JVM of a test gets before its main class:
// a small heap, a quick start, the classpath, and the client's log at WARN
// to stderr (so a client's complaint shows in the test output).
func (k JDK) JVMArgs(classpath string) []string {
	args := []string{"-Xms64m", "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.awt.headless=true", "-cp", classpath}
	if k.log4j != "" {
		args = append(args, "-Dlog4j2.configurationFile="+k.log4j, "-Dkafka.log.level=WARN")
	}
	return args
}

// Classpath is dirs followed by every jar of Lib (the JVM expands the
// wildcard).
func (k JDK) Classpath(dirs ...string) string {
	for _, d := range k.Extra {
		dirs = append(dirs, filepath.Join(d, "*"))
	}
	return strings.Join(append(dirs, filepath.Join(k.Lib, "*")), string(os.PathListSeparator))
}

// Compile compiles the .java files with javac against the Kafka jars and
// returns the class directory. The result is cached under
// ${TRIBUTARY_CACHE:-~/.cache/tributary}/javac/<hash of the sources, the
// JDK and the jar names>, since javac with 90 jars on the classpath takes
// seconds; test processes compiling the same sources at once each write a
// temporary directory beside it and the first rename wins.
func (k JDK) Compile(t testing.TB, srcs ...string) string {
	t.Helper()
	h := sha256.New()
	ver, _ := exec.Command(k.Javac, "-version").CombinedOutput()
	fmt.Fprintf(h, "javac %s\nlib %s\n", bytes.TrimSpace(ver), k.Lib)
	jars, _ := filepath.Glob(filepath.Join(k.Lib, "*.jar"))
	for _, d := range k.Extra {
		more, _ := filepath.Glob(filepath.Join(d, "*.jar"))
		jars = append(jars, more...)
	}
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
	dir := "" // the cached class directory, or "" for none
	if cache != "" {
		dir = filepath.Join(cache, "javac", sum)
		if fileExists(filepath.Join(dir, ".complete")) {
			return dir
		}
		if os.MkdirAll(filepath.Dir(dir), 0o755) != nil {
			dir = ""
		}
	}
	parent := t.TempDir()
	if dir != "" {
		parent = filepath.Dir(dir)
	}
	tmp, err := os.MkdirTemp(parent, "tmp-"+sum+"-")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	args := append([]string{"-Xlint:all,-options,-processing", "-Werror", "-encoding", "UTF-8", "-cp", k.Classpath(), "-d", tmp}, srcs...)
	if out, err := exec.Command(k.Javac, args...).CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		t.Fatalf("javac %s: %v\n%s", strings.Join(srcs, " "), err, out)
	}
	rel := make([]string, len(srcs))
	for i, src := range srcs {
		if r, err := filepath.Rel(RepoRoot(), src); err == nil {
			rel[i] = r
		} else {
			rel[i] = src
		}
	}
	t.Logf("javac %s: %v", strings.Join(rel, " "), time.Since(start).Round(time.Millisecond))
	if err := os.WriteFile(filepath.Join(tmp, ".complete"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if dir == "" {
		return tmp
	}
	if err := os.Rename(tmp, dir); err != nil {
		// Another test process won the race (the directory exists now).
		os.RemoveAll(tmp)
		if !fileExists(filepath.Join(dir, ".complete")) {
			t.Fatalf("javac cache %s: %v", dir, err)
		}
	}
	return dir
}
