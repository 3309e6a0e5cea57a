package testbroker

// The Java reference reader of Iceberg tables
// (formats/iceberg/testdata/java/ReadIceberg.java): Apache Iceberg's own
// library reading a table Tributary wrote.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// HowToGetIceberg says how to get the reference reader's jars.
const HowToGetIceberg = "install Java 17+ (a JDK) and Maven 3.8+, then run scripts/iceberg-jars.sh " +
	"(Apache Iceberg 1.10.1 from Maven Central into ~/.cache/tributary), or set TRIBUTARY_ICEBERG_LIB to a directory of its jars"

// IcebergJDK finds Java, javac and the jars of scripts/iceberg-jars.sh
// (TRIBUTARY_ICEBERG_LIB, or the script fetches them with Maven). A
// missing part skips the test, or fails it under CI=true.
func IcebergJDK(t testing.TB) JDK {
	t.Helper()
	var k JDK
	var err error
	k.Java, err = exec.LookPath("java")
	Require(t, err == nil, "java", HowToGetIceberg)
	k.Javac, err = exec.LookPath("javac")
	Require(t, err == nil, "javac", HowToGetIceberg)
	if k.Lib = os.Getenv("TRIBUTARY_ICEBERG_LIB"); k.Lib == "" {
		cmd := exec.Command("bash", filepath.Join(RepoRoot(), "scripts", "iceberg-jars.sh"))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		Require(t, err == nil, "Apache Iceberg's jars", HowToGetIceberg+" (scripts/iceberg-jars.sh: "+stderr.String()+")")
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		k.Lib = lines[len(lines)-1]
	}
	jars, _ := filepath.Glob(filepath.Join(k.Lib, "iceberg-core-*.jar"))
	Require(t, len(jars) > 0, "the iceberg-core jar in "+k.Lib, HowToGetIceberg)
	return k
}

// ReadIcebergJava runs the reference reader on the table at location
// (file:///...) and returns its JSON: the format version, the schema with
// field ids, the partition spec, the snapshots with their summaries, the
// history, the [partition, offset] pairs of the current and of the first
// snapshot, and how many files a scan plans in all and for _event_time
// below beforeMicros. env is added to the JVM's environment
// (HADOOP_USER_NAME for an hdfs:// location).
func ReadIcebergJava(t testing.TB, location, beforeMicros string, env ...string) []byte {
	t.Helper()
	return ReadIcebergJavaArgs(t, []string{location, beforeMicros}, env...)
}

// ReadIcebergJavaArgs is ReadIcebergJava with all of ReadIceberg's
// arguments (a column=value to count the files planned for, a jdbc:
// table of a SQL catalog: ReadIceberg.java).
func ReadIcebergJavaArgs(t testing.TB, readerArgs []string, env ...string) []byte {
	t.Helper()
	location := readerArgs[0]
	jdk := IcebergJDK(t)
	classes := jdk.Compile(t, filepath.Join(RepoRoot(), "formats", "iceberg", "testdata", "java", "ReadIceberg.java"))
	start := time.Now()
	args := append(jdk.JVMArgs(jdk.Classpath(classes)), append([]string{"ReadIceberg"}, readerArgs...)...)
	cmd := exec.Command(jdk.Java, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ReadIceberg %s: %v\n%s", location, err, stderr.String())
	}
	t.Logf("ReadIceberg %s: %v", location, time.Since(start).Round(time.Millisecond))
	return out
}
