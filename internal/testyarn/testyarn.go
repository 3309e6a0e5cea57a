// Package testyarn gives tests a real YARN: Apache Hadoop's ResourceManager
// and NodeManager as separate JVMs on loopback, started by
// scripts/yarn-up.sh (jars from Maven Central, cached) beside the test HDFS
// of internal/testhdfs, and stopped by scripts/yarn-down.sh.
//
// One YARN per test process, shared, like testhdfs's HDFS: the first Get
// starts it (20–30 s on this machine), later calls return it. Main stops it
// (and HDFS); a watchdog given the test process's PID stops it whatever
// way the process ends.
//
// The scripts' contract (jars first, KEY=VALUE output, the owner's PID
// watchdog, the down script) is run by internal/hadoopd, as testhdfs does.
//
// Missing parts (java, curl, or mvn with the jars not cached) skip the test
// on a developer's machine and fail it under CI (testbroker.Require). A YARN
// that has its jars but does not start is always a failure.
package testyarn

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/tributary-io/tributary/internal/hadoopd"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testhdfs"
)

// Cluster is the shared YARN of this test process.
type Cluster struct {
	RM           string // http://host:port: the ResourceManager's REST API
	NodeManager  string // host:port of the NodeManager's web port
	ConfDir      string // yarn-site.xml, core-site.xml
	AppClassPath string // the CLASSPATH an ApplicationMaster needs here
	DShellJar    string // DistributedShell's jar (a local path)
	Dir          string // the instance directory (logs/, nmlogs/, local/)
	State        string
	HDFS         *testhdfs.Cluster
	// RMPrincipal is the ResourceManager's Kerberos principal (Kerberized).
	RMPrincipal string
}

var (
	mu      sync.Mutex
	shared  *Cluster
	failed  error
	skipped string

	kerberized       *Cluster
	kerberizedFailed error
)

// Get returns the process's YARN, starting it (and HDFS) on the first call.
func Get(t testing.TB) *Cluster {
	t.Helper()
	h := testhdfs.Get(t)
	mu.Lock()
	defer mu.Unlock()
	if shared != nil {
		return shared
	}
	if skipped != "" {
		testbroker.Require(t, false, "YARN", skipped)
	}
	if failed != nil {
		t.Fatalf("YARN did not start earlier in this test process: %v", failed)
	}
	if err := hadoopd.FetchJars("yarn-up.sh", "YARN_JARS_ONLY"); err != nil {
		skipped = fmt.Sprintf("%v (install Maven 3.8+ and Java 17+)", err)
		testbroker.Require(t, false, "Apache Hadoop's YARN jars", skipped)
	}
	up, err := hadoopd.Up("yarn-up.sh", "YARN_OWNER_PID", "HDFS_NAMENODE="+h.NameNode, "YARN_DIR=")
	if err != nil {
		failed = err
		t.Fatal(failed)
	}
	kv := up.KV
	if kv["YARN_RM_HTTP"] == "" || kv["YARN_STATE"] == "" {
		failed = fmt.Errorf("scripts/yarn-up.sh printed no YARN_RM_HTTP/YARN_STATE:\n%s", up.Stdout)
		t.Fatal(failed)
	}
	shared = &Cluster{RM: "http://" + kv["YARN_RM_HTTP"], NodeManager: kv["YARN_NM_HTTP"], ConfDir: kv["YARN_CONF_DIR"],
		AppClassPath: kv["YARN_APP_CLASSPATH"], DShellJar: kv["YARN_DSHELL_JAR"], Dir: kv["YARN_DIR"], State: kv["YARN_STATE"], HDFS: h}
	t.Logf("YARN at %s (dir %s): %s", shared.RM, shared.Dir, up.Took)
	return shared
}

// Kerberized returns the process's Kerberized YARN (scripts/yarn-up.sh
// with YARN_KERBEROS=1): a ResourceManager and NodeManager that log in to
// the MiniKdc of testhdfs.Kerberized, take SPNEGO only on their REST API
// (RM is http://localhost:PORT) and localize from the Kerberized HDFS with
// the applications' delegation tokens. Started on the first call, shared,
// stopped by Main or the watchdog; two more JVMs beside the Kerberized
// HDFS's three, so only the Kerberized YARN tests use it.
func Kerberized(t testing.TB) *Cluster {
	t.Helper()
	h := testhdfs.Kerberized(t)
	mu.Lock()
	defer mu.Unlock()
	if kerberized != nil {
		return kerberized
	}
	if skipped != "" {
		testbroker.Require(t, false, "YARN", skipped)
	}
	if kerberizedFailed != nil {
		t.Fatalf("the Kerberized YARN did not start earlier in this test process: %v", kerberizedFailed)
	}
	if err := hadoopd.FetchJars("yarn-up.sh", "YARN_JARS_ONLY"); err != nil {
		skipped = fmt.Sprintf("%v (install Maven 3.8+ and Java 17+)", err)
		testbroker.Require(t, false, "Apache Hadoop's YARN jars", skipped)
	}
	k := h.Kerberos
	up, err := hadoopd.Up("yarn-up.sh", "YARN_OWNER_PID", "HDFS_NAMENODE="+h.NameNode, "YARN_DIR=", "YARN_KERBEROS=1",
		"HDFS_CONF_DIR="+k.ConfDir, "KRB5_CONFIG="+k.Krb5Conf, "HDFS_KEYTAB="+k.Keytab)
	if err != nil {
		kerberizedFailed = err
		t.Fatal(err)
	}
	kv := up.KV
	if kv["YARN_RM_HTTP"] == "" || kv["YARN_STATE"] == "" || kv["YARN_RM_PRINCIPAL"] == "" {
		kerberizedFailed = fmt.Errorf("scripts/yarn-up.sh (YARN_KERBEROS=1) printed no YARN_RM_HTTP/YARN_STATE/YARN_RM_PRINCIPAL:\n%s", up.Stdout)
		t.Fatal(kerberizedFailed)
	}
	kerberized = &Cluster{RM: "http://" + kv["YARN_RM_HTTP"], NodeManager: kv["YARN_NM_HTTP"], ConfDir: kv["YARN_CONF_DIR"],
		AppClassPath: kv["YARN_APP_CLASSPATH"], DShellJar: kv["YARN_DSHELL_JAR"], Dir: kv["YARN_DIR"], State: kv["YARN_STATE"], HDFS: h,
		RMPrincipal: kv["YARN_RM_PRINCIPAL"]}
	t.Logf("Kerberized YARN at %s (dir %s): %s", kerberized.RM, kerberized.Dir, up.Took)
	return kerberized
}

// Stop stops the YARNs this process started.
func Stop() error {
	mu.Lock()
	defer mu.Unlock()
	var errs []error
	for _, c := range []**Cluster{&shared, &kerberized} {
		if *c == nil {
			continue
		}
		state := (*c).State
		*c = nil
		errs = append(errs, hadoopd.Down("yarn-down.sh", state))
	}
	return errors.Join(errs...)
}

// Main runs the package's tests, then stops YARN and HDFS:
//
//	func TestMain(m *testing.M) { testyarn.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	if err := errors.Join(Stop(), testhdfs.Stop()); err != nil {
		fmt.Fprintln(os.Stderr, "testyarn:", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
