// Package hadoopd runs the scripts that start and stop the tests' Hadoop
// daemons, for internal/testhdfs and internal/testyarn: scripts/hdfs-up.sh
// and scripts/yarn-up.sh, scripts/hdfs-down.sh and scripts/yarn-down.sh.
//
// The scripts share one contract, which this package is the Go side of:
//
//   - `<X>_JARS_ONLY=1 <up>` only fetches the jars (Maven Central, cached).
//     Failing there is a missing part: the caller skips the test, or fails
//     it under CI (testbroker.Require). Up is called after it, so that a
//     failure there is always the daemons'.
//   - `<up>` starts the daemons and prints KEY=VALUE lines on stdout, one of
//     them the state file the down script takes; progress goes to stderr,
//     whose last line says how long the start took.
//   - `<X>_OWNER_PID=<pid>` makes the script start a watchdog that runs the
//     down script once that process is gone, however it ends (a panic,
//     -timeout, SIGKILL): the caller passes its own PID.
//   - `<down> STATE` stops the daemons and removes their directory.
package hadoopd

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// Script is the path of scripts/<name> in the repository.
func Script(name string) string {
	return filepath.Join(testbroker.RepoRoot(), "scripts", name)
}

// FetchJars runs up with jarsOnly=1 (HDFS_JARS_ONLY, YARN_JARS_ONLY) and
// env added to the process's environment.
func FetchJars(up, jarsOnly string, env ...string) error {
	var stderr bytes.Buffer
	cmd := exec.Command("bash", Script(up))
	cmd.Env = append(append(os.Environ(), env...), jarsOnly+"=1")
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("scripts/%s could not fetch the jars: %v: %s", up, err, LastLines(stderr.String(), 15))
	}
	return nil
}

// Started is what an up script printed.
type Started struct {
	KV     map[string]string // its KEY=VALUE stdout lines
	Stdout string
	// Took is its last stderr line ("YARN up in 45071 ms: ...").
	Took string
}

// Up runs up with env added to the process's environment and ownerPID
// (HDFS_OWNER_PID, YARN_OWNER_PID) set to this process, so that its
// watchdog stops the daemons when the tests' process is gone.
func Up(up, ownerPID string, env ...string) (*Started, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("bash", Script(up))
	cmd.Env = append(append(os.Environ(), env...), fmt.Sprintf("%s=%d", ownerPID, os.Getpid()))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("scripts/%s: %v\n%s", up, err, stderr.String())
	}
	kv := map[string]string{}
	for _, line := range strings.Split(stdout.String(), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			kv[k] = v
		}
	}
	return &Started{KV: kv, Stdout: stdout.String(), Took: LastLines(stderr.String(), 1)}, nil
}

// Down runs a down script (hdfs-down.sh, yarn-down.sh) with args.
func Down(down string, args ...string) error {
	out, err := exec.Command("bash", append([]string{Script(down)}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("scripts/%s %s: %v\n%s", down, strings.Join(args, " "), err, out)
	}
	return nil
}

// LastLines is the last n lines of s.
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
