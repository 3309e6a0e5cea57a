// Package testhdfs gives tests a real HDFS: Apache Hadoop's NameNode and
// DataNode as separate JVMs on loopback, started by scripts/hdfs-up.sh
// (jars from Maven Central, cached) and stopped by scripts/hdfs-down.sh.
//
// One cluster per test process, shared by every test in it: the first Start
// starts it (about 10–25 s on this machine), later calls return the same
// address at once. A cluster costs two JVMs, so tests share it and keep to
// their own directories (Dir gives each test one).
//
// Stopping. A package that uses HDFS should have
//
//	func TestMain(m *testing.M) { testhdfs.Main(m) }
//
// which stops the cluster after the last test. The cluster does not depend on
// it: hdfs-up.sh is given the test process's PID (HDFS_OWNER_PID), and a
// watchdog stops the daemons and removes their directory within a second or
// two after the process ends, however it ends (a panic, -timeout, SIGKILL).
// A t.Cleanup in the first caller would stop the cluster under the tests
// that come after it, so Start registers none.
//
// Missing parts. Without java or curl, or without mvn while the jars are not
// cached yet, or when the jars cannot be fetched, the test is skipped on a
// developer's machine and fails under CI (testbroker.Require). A cluster that
// has its jars but does not start is always a failure.
//
// Someone else's cluster. With TRIBUTARY_HDFS_NAMENODE=host:port set, Start
// starts nothing and returns it; TRIBUTARY_HDFS_USER names the user that
// tests write as there (default tributary), who needs a writable
// /user/<user> and /tmp.
package testhdfs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tributary-io/tributary/internal/hadoopd"
	"github.com/tributary-io/tributary/internal/testbroker"
)

// HowTo says how to get what Start needs.
const HowTo = "install Java 17+, Maven 3.8+ and curl; scripts/hdfs-up.sh fetches Apache Hadoop from Maven Central (docs/hdfs.md)"

// DefaultUser is the HDFS user tests write as; it owns /user/tributary.
const DefaultUser = "tributary"

// Cluster is the shared HDFS of this test process.
type Cluster struct {
	NameNode string // host:port of the NameNode's RPC (ClientProtocol) port
	HTTP     string // host:port of the NameNode's HTTP port (JMX, WebHDFS); empty for an outside cluster
	User     string // the HDFS user tests write as
	Dir      string // the instance directory (conf, name, data, logs); empty for an outside cluster
	State    string // the state file hdfs-down.sh takes; empty for an outside cluster
	// Kerberos is set for a Kerberized cluster (Kerberized).
	Kerberos *Kerberos
}

// Kerberos is what a client of a Kerberized cluster needs.
type Kerberos struct {
	ConfDir           string // the cluster's Hadoop configuration: a client's HADOOP_CONF_DIR
	Krb5Conf          string // the MiniKdc's krb5.conf: a client's KRB5_CONFIG
	Keytab            string // the keys of Principal (and of the services)
	Principal         string // the test user's principal, tributary@EXAMPLE.COM
	NameNodePrincipal string // hdfs/localhost@EXAMPLE.COM
}

var (
	mu      sync.Mutex
	shared  *Cluster
	failed  error // a start that failed is not retried by later tests
	skipped string
)

// Start returns the NameNode address (127.0.0.1:PORT) of the process's HDFS,
// starting it on the first call.
func Start(t testing.TB) (namenode string) {
	t.Helper()
	return Get(t).NameNode
}

// Get is Start with everything known about the cluster.
func Get(t testing.TB) *Cluster {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	if shared != nil {
		return shared
	}
	if skipped != "" {
		testbroker.Require(t, false, "HDFS", skipped)
	}
	if failed != nil {
		t.Fatalf("HDFS did not start earlier in this test process: %v", failed)
	}
	if nn := os.Getenv("TRIBUTARY_HDFS_NAMENODE"); nn != "" {
		user := os.Getenv("TRIBUTARY_HDFS_USER")
		if user == "" {
			user = DefaultUser
		}
		shared = &Cluster{NameNode: nn, User: user}
		return shared
	}

	shared = start(t, &skipped, &failed)
	return shared
}

// start starts a cluster with hdfs-up.sh, its environment added to env. A
// missing part is recorded in *skipped (and skips, or fails under CI); a
// start that failed in *failed.
func start(t testing.TB, skipped *string, failed *error, env ...string) *Cluster {
	t.Helper()
	if why := missing(); why != "" {
		*skipped = why
		testbroker.Require(t, false, "HDFS", why)
	}
	// The jars first: failing to fetch them is a missing part, not a bug.
	if err := hadoopd.FetchJars("hdfs-up.sh", "HDFS_JARS_ONLY", env...); err != nil {
		*skipped = fmt.Sprintf("%s (%v)", HowTo, err)
		testbroker.Require(t, false, "Apache Hadoop's jars", *skipped)
	}
	up, err := hadoopd.Up("hdfs-up.sh", "HDFS_OWNER_PID", append(env,
		"HDFS_USER="+DefaultUser,
		"HDFS_DIR=", // always a fresh temporary dir, never a caller's
	)...)
	if err != nil {
		*failed = err
		t.Fatal(*failed)
	}
	c, err := parse(up.Stdout)
	if err != nil {
		*failed = fmt.Errorf("scripts/hdfs-up.sh: %v\nstdout:\n%s", err, up.Stdout)
		t.Fatal(*failed)
	}
	t.Logf("HDFS at %s (user %s, dir %s): %s", c.NameNode, c.User, c.Dir, up.Took)
	return c
}

// missing names the first tool Start needs that this machine lacks.
func missing() string {
	for _, tool := range []string{"bash", "java", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Sprintf("%s not found: %s", tool, HowTo)
		}
	}
	if _, err := exec.LookPath("mvn"); err != nil {
		cache := os.Getenv("TRIBUTARY_CACHE")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache", "tributary")
		}
		if stamps, _ := filepath.Glob(filepath.Join(cache, "hadoop-*", ".complete")); len(stamps) == 0 {
			return "mvn not found and Hadoop's jars are not cached: " + HowTo
		}
	}
	out, err := exec.Command("java", "-version").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("java -version: %v: %s", err, out)
	}
	// "17.0.15", "11.0.2", "1.8.0_392"
	major := 0
	if m := regexp.MustCompile(`version "(\d+)(?:\.(\d+))?`).FindSubmatch(out); m != nil {
		major, _ = strconv.Atoi(string(m[1]))
		if major == 1 && m[2] != nil {
			major, _ = strconv.Atoi(string(m[2]))
		}
	}
	if major < 8 {
		return fmt.Sprintf("Hadoop 3.4 needs Java 8+ (tested on 17); java -version says %q", strings.TrimSpace(string(out)))
	}
	return ""
}

// parse reads hdfs-up.sh's KEY=VALUE stdout.
func parse(out string) (*Cluster, error) {
	kv := map[string]string{}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			kv[k] = v
		}
	}
	c := &Cluster{NameNode: kv["HDFS_NAMENODE"], HTTP: kv["HDFS_NAMENODE_HTTP"], User: kv["HDFS_USER"], Dir: kv["HDFS_DIR"], State: kv["HDFS_STATE"]}
	if kv["HDFS_KERBEROS"] == "1" {
		c.Kerberos = &Kerberos{ConfDir: kv["HDFS_CONF_DIR"], Krb5Conf: kv["KRB5_CONFIG"], Keytab: kv["HDFS_KEYTAB"],
			Principal: kv["HDFS_PRINCIPAL"], NameNodePrincipal: kv["HDFS_NAMENODE_PRINCIPAL"]}
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if last := lines[len(lines)-1]; !strings.HasPrefix(last, "HDFS_NAMENODE=") || c.NameNode == "" {
		return nil, fmt.Errorf("last stdout line is %q, want HDFS_NAMENODE=host:port", last)
	}
	if c.State == "" {
		return nil, fmt.Errorf("no HDFS_STATE in the output")
	}
	return c, nil
}

// Dir returns a fresh HDFS directory for the calling test, /tmp/<test name>-<n>,
// writable by the cluster's user. It is not removed: the cluster's data dir
// goes away with the cluster.
func Dir(t testing.TB) string {
	t.Helper()
	Get(t)
	return dirName(t)
}

func dirName(t testing.TB) string {
	mu.Lock()
	dirSeq++
	n := dirSeq
	mu.Unlock()
	name := regexp.MustCompile(`[^A-Za-z0-9_.-]+`).ReplaceAllString(t.Name(), "_")
	return fmt.Sprintf("/tmp/%s-%d-%d", name, os.Getpid(), n)
}

var dirSeq int

// Stop stops the shared clusters now, if this process started any. Main calls it.
func Stop() error {
	mu.Lock()
	defer mu.Unlock()
	var errs []error
	for _, c := range []*Cluster{shared, kerberized} {
		if c == nil || c.State == "" {
			continue
		}
		if err := hadoopd.Down("hdfs-down.sh", c.State); err != nil {
			errs = append(errs, err)
		}
	}
	shared, kerberized = nil, nil
	return errors.Join(errs...)
}

// Main runs the package's tests, then stops the cluster if one was started:
//
//	func TestMain(m *testing.M) { testhdfs.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	if err := Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "testhdfs:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
