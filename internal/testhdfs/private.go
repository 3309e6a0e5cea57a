package testhdfs

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// Private is an HDFS of one test alone, for tests that stop it: the shared
// cluster cannot be stopped under the other tests of the process. It costs
// two more JVMs and 10–25 s to start, so only tests of HDFS failures use
// one.
type Private struct {
	Cluster
	t testing.TB
}

// StartPrivate starts an HDFS for the calling test, stopped when the test
// ends (and, like the shared one, by a watchdog if the test process dies).
// Its instance directory is the test's, so Stop and Start keep the data,
// the ports and the NameNode's namespace.
func StartPrivate(t testing.TB) *Private {
	t.Helper()
	if nn := os.Getenv("TRIBUTARY_HDFS_NAMENODE"); nn != "" {
		t.Skip("an outside cluster (TRIBUTARY_HDFS_NAMENODE) cannot be stopped by a test")
	}
	Get(t) // the same checks, and the jars cached
	p := &Private{t: t}
	p.Dir = t.TempDir() // removed after the cleanup below stopped the JVMs
	t.Cleanup(func() {
		if p.State != "" {
			if out, err := p.script("hdfs-down.sh", nil, "--keep", p.State); err != nil {
				t.Errorf("stopping the private HDFS: %v\n%s", err, out)
			}
		}
	})
	p.Start()
	return p
}

// Start starts the cluster's NameNode and DataNode (or the DataNode alone,
// after KillDataNode) and waits until HDFS takes writes.
func (p *Private) Start() {
	p.t.Helper()
	start := time.Now()
	var stderr bytes.Buffer
	cmd := exec.Command("bash", filepath.Join(testbroker.RepoRoot(), "scripts", "hdfs-up.sh"))
	cmd.Env = append(os.Environ(),
		fmt.Sprintf("HDFS_OWNER_PID=%d", os.Getpid()),
		"HDFS_USER="+DefaultUser,
		"HDFS_DIR="+p.Dir,
	)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		p.t.Fatalf("scripts/hdfs-up.sh (private, %s): %v\n%s", p.Dir, err, stderr.String())
	}
	c, err := parse(string(out))
	if err != nil {
		p.t.Fatalf("scripts/hdfs-up.sh (private): %v\n%s", err, stderr.String())
	}
	p.NameNode, p.HTTP, p.User, p.State = c.NameNode, c.HTTP, c.User, c.State
	p.t.Logf("private HDFS at %s up in %v", p.NameNode, time.Since(start).Round(100*time.Millisecond))
}

// Stop stops the NameNode and the DataNode (SIGTERM), keeping their data.
// Clients get connection errors until Start.
func (p *Private) Stop() {
	p.t.Helper()
	if out, err := p.script("hdfs-down.sh", nil, "--keep", p.State); err != nil {
		p.t.Fatalf("stopping the private HDFS: %v\n%s", err, out)
	}
	p.t.Logf("private HDFS at %s stopped", p.NameNode)
}

// KillDataNode kills the DataNode with SIGKILL, as a machine that dies
// would: writes in flight fail, the NameNode keeps running. Start brings a
// DataNode back on the same storage.
func (p *Private) KillDataNode() {
	p.t.Helper()
	pid := p.statePID("HDFS_DATANODE_PID")
	if pid == 0 {
		p.t.Fatal("the private HDFS has no DataNode running")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		p.t.Fatalf("kill -9 DataNode %d: %v", pid, err)
	}
	for i := 0; i < 100 && syscall.Kill(pid, 0) == nil; i++ {
		time.Sleep(50 * time.Millisecond)
	}
	p.t.Logf("private HDFS: DataNode (pid %d) killed", pid)
}

// statePID reads a PID from the state file, if it is a JVM of this cluster.
func (p *Private) statePID(key string) int {
	b, err := os.ReadFile(p.State)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+"="); ok {
			pid, _ := strconv.Atoi(v)
			cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			if pid > 0 && bytes.Contains(cmdline, []byte("-Dtributary.hdfs.dir="+p.Dir+"\x00")) {
				return pid
			}
		}
	}
	return 0
}

func (p *Private) script(name string, env []string, args ...string) (string, error) {
	cmd := exec.Command("bash", append([]string{filepath.Join(testbroker.RepoRoot(), "scripts", name)}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
