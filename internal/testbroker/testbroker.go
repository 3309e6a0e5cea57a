// Package testbroker starts the real tributary binary as a broker for
// tests: built once per test process, on a free loopback port, with its data
// in the test's temporary directory, and stopped by SIGTERM or killed with
// SIGKILL as the test asks.
//
// It also decides what a test does when an outside part (Java, Python, a
// jar) is missing: skip on a developer's machine, fail under CI.
package testbroker

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// Binary builds ./cmd/tributary once per test process and returns its path.
//
// Every test process of one checkout and race mode shares one path under
// the temporary directory: a directory per process would leave a binary of
// about 100 MB behind for every package of every test run. Each process
// builds to a file of its own and renames it into place, which is atomic,
// so one never runs another's half-written binary (and the build cache
// makes the rebuilds cheap).
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir := filepath.Join(os.TempDir(), "tributary-test-bin")
		if buildErr = os.MkdirAll(dir, 0o755); buildErr != nil {
			return
		}
		name := fmt.Sprintf("tributary-%x", sha256.Sum256([]byte(repoRoot())))[:len("tributary-")+12]
		// testhooks compiles in the fault hooks tests trigger
		// (broker/server/testhooks_on.go); release builds have none.
		args := []string{"build", "-tags", "testhooks"}
		if raceEnabled {
			name += "-race"
			args = append(args, "-race")
		}
		tmp, err := os.CreateTemp(dir, name+".build-*")
		if err != nil {
			buildErr = err
			return
		}
		tmp.Close()
		defer os.Remove(tmp.Name()) // what a failed build left; nothing after the rename
		cmd := exec.Command("go", append(args, "-o", tmp.Name(), "./cmd/tributary")...)
		cmd.Dir = repoRoot()
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/tributary: %v\n%s", err, out)
			return
		}
		binPath = filepath.Join(dir, name)
		buildErr = os.Rename(tmp.Name(), binPath)
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// repoRoot is the module root, found from this file's location.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// RepoRoot is the module root, for tests that run scripts of the repository.
func RepoRoot() string { return repoRoot() }

// Broker is a running tributary broker process.
type Broker struct {
	t         testing.TB
	dir       string
	port      int
	listeners string // --listeners; PLAINTEXT on port when empty
	props     []string
	cmd       *exec.Cmd
	log       *bytes.Buffer
	logMu     *sync.Mutex
	done      chan struct{}
}

// Start runs `tributary broker` with props ("name=value", passed as --set)
// and waits until it logs "broker ready". The broker is stopped when the
// test ends.
func Start(t testing.TB, props ...string) *Broker {
	t.Helper()
	b := &Broker{t: t, dir: t.TempDir(), port: freePort(t), props: props}
	b.start()
	t.Cleanup(func() {
		if b.running() {
			b.Stop()
		}
	})
	return b
}

// Config is a broker as a cluster test starts it: with its own log dir,
// port and listeners.
type Config struct {
	Dir       string
	Port      int    // of the PLAINTEXT listener, which Addr names
	Listeners string // the --listeners flag
	Props     []string
}

// StartConfig runs `tributary broker` as cfg says and waits until it is
// ready; it is stopped when the test ends.
func StartConfig(t testing.TB, cfg Config) *Broker {
	t.Helper()
	b := &Broker{t: t, dir: cfg.Dir, port: cfg.Port, listeners: cfg.Listeners, props: cfg.Props}
	b.start()
	t.Cleanup(func() {
		if b.running() {
			b.Kill()
		}
	})
	return b
}

// FreePort is a loopback port nothing listens on now, from this test
// process's own block (see ports.go).
func FreePort(t testing.TB) int { return freePort(t) }

func (b *Broker) start() {
	b.t.Helper()
	listeners := b.listeners
	if listeners == "" {
		listeners = fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", b.port)
	}
	args := []string{"broker", "--log-dirs", b.dir, "--listeners", listeners, "--admin-listen", "127.0.0.1:0"}
	for _, p := range b.props {
		args = append(args, "--set", p)
	}
	b.cmd = exec.Command(Binary(b.t), args...)
	b.log, b.logMu, b.done = &bytes.Buffer{}, &sync.Mutex{}, make(chan struct{})
	stderr, err := b.cmd.StderrPipe()
	if err != nil {
		b.t.Fatal(err)
	}
	b.cmd.Stdout = os.Stdout
	if err := b.cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		signalled := false
		for sc.Scan() {
			b.logMu.Lock()
			b.log.WriteString(sc.Text() + "\n")
			b.logMu.Unlock()
			if !signalled && (strings.Contains(sc.Text(), "broker ready") || strings.Contains(sc.Text(), "controller ready")) {
				close(ready)
				signalled = true
			}
		}
		b.cmd.Wait()
		close(b.done)
	}()
	select {
	case <-ready:
	case <-b.done:
		b.t.Fatalf("broker exited before it was ready:\n%s", b.Log())
	case <-time.After(60 * time.Second):
		b.cmd.Process.Kill()
		b.t.Fatalf("broker not ready after 60s:\n%s", b.Log())
	}
}

func (b *Broker) running() bool {
	select {
	case <-b.done:
		return false
	default:
		return true
	}
}

// Addr is the broker's bootstrap address, host:port.
func (b *Broker) Addr() string { return fmt.Sprintf("127.0.0.1:%d", b.port) }

// AdminAddr is the address of the broker's admin endpoint (/metrics,
// /healthz, /loglevel, ...), as it logged it at start.
func (b *Broker) AdminAddr() string {
	b.t.Helper()
	addr := LoggedAdminAddr(b.Log())
	if addr == "" {
		b.t.Fatalf("the broker logged no admin endpoint address:\n%s", b.Log())
	}
	return addr
}

// LoggedAdminAddr finds the address in a daemon's "admin endpoint ready"
// log line (the tracker's and jobs' too); "" if there is none.
func LoggedAdminAddr(log string) string {
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, "admin endpoint ready") {
			continue
		}
		if _, rest, ok := strings.Cut(line, " addr="); ok {
			addr, _, _ := strings.Cut(rest, " ")
			return addr
		}
	}
	return ""
}

// DataDir is the broker's log dir.
func (b *Broker) DataDir() string { return b.dir }

// Log is everything the broker wrote to stderr so far.
func (b *Broker) Log() string {
	b.logMu.Lock()
	defer b.logMu.Unlock()
	return b.log.String()
}

// Stop sends SIGTERM and waits for a clean exit.
func (b *Broker) Stop() {
	b.t.Helper()
	b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(60 * time.Second):
		b.cmd.Process.Kill()
		<-b.done
		b.t.Fatalf("broker did not stop within 60s after SIGTERM:\n%s", b.Log())
	}
	if code := b.cmd.ProcessState.ExitCode(); code != 0 {
		b.t.Errorf("broker exited with status %d after SIGTERM:\n%s", code, b.Log())
	}
}

// Kill ends the broker with SIGKILL (kill -9): no flush, no checkpoints.
func (b *Broker) Kill() {
	b.cmd.Process.Kill()
	<-b.done
}

// Signal sends sig to the broker process: SIGSTOP and SIGCONT pause it.
func (b *Broker) Signal(sig os.Signal) error { return b.cmd.Process.Signal(sig) }

// Pid is the broker's process id, for reading /proc or setting its limits.
func (b *Broker) Pid() int { return b.cmd.Process.Pid }

// Running is whether the process is alive.
func (b *Broker) Running() bool { return b.running() }

// Restart starts the broker again on the same port and data.
func (b *Broker) Restart() {
	b.t.Helper()
	if b.running() {
		b.t.Fatal("Restart of a running broker; Stop or Kill it first")
	}
	b.start()
}

// Require handles a missing outside part: under CI (the CI environment
// variable set) the test fails, elsewhere it is skipped, saying how to get
// the part.
func Require(t testing.TB, ok bool, what, how string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is missing; CI must provide it (%s)", what, how)
	}
	t.Skipf("%s is missing: %s", what, how)
}
