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
	"errors"
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

// Binary builds ./cmd/tributary once per test process, with the test-only
// build tags, and returns its path.
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
		// (broker/server/testhooks_on.go, the loader's
		// TRIBUTARY_LOADER_CRASH_AT in loader/crash.go); release builds
		// have none.
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
//
// Its stderr is kept whole, every incarnation's (a Kill and Restart starts
// a new one), so that when the test ends a data race or panic reported by
// any of them fails the test (crashes.go). Cleanup stops a broker that is
// still running with SIGTERM and requires exit status 0: a broker that
// cannot stop cleanly, or exits by itself with an error, is a bug the test
// would otherwise hide.
type Broker struct {
	t         testing.TB
	dir       string
	port      int
	listeners string // --listeners; PLAINTEXT on port when empty
	props     []string
	args      []string // more flags of `tributary broker` (Config.Args)
	noAdmin   bool     // no --admin-listen flag (Config.NoAdminListen)
	cmd       *exec.Cmd
	done      chan struct{}

	logMu       sync.Mutex
	log         bytes.Buffer // every incarnation's stderr; logMu must be held
	logFrom     int          // where the current incarnation's starts in log
	incarnation int          // 1 for the first start; logMu must be held

	// Set before the signal is sent, read after done: what ended the
	// current incarnation, if the test asked for it.
	killed, stopped bool
	// exits are the unexpected ends of earlier incarnations, reported at
	// cleanup: an exit the test did not ask for, with a non-zero status.
	exits []string
	// scannedTo is how much of log Finish has scanned for crashes.
	scannedTo int
}

// StopTimeout bounds how long a broker may take to stop after SIGTERM
// before it is killed and the test fails: the broker itself gives
// controlled shutdown 5 s and in-flight requests 30 s.
const StopTimeout = 45 * time.Second

// Start runs `tributary broker` with props ("name=value", passed as --set)
// and waits until it logs "broker ready". When the test ends it is stopped
// with SIGTERM, and its exit status and logs are checked (Finish).
func Start(t testing.TB, props ...string) *Broker {
	t.Helper()
	b := &Broker{t: t, dir: t.TempDir(), port: freePort(t), props: props}
	b.start()
	t.Cleanup(b.Finish)
	return b
}

// Config is a broker as a cluster test starts it: with its own log dir,
// port and listeners.
type Config struct {
	Dir       string
	Port      int    // of the PLAINTEXT listener, which Addr names
	Listeners string // the --listeners flag
	Props     []string
	// NoAdminListen leaves --admin-listen unset, as a user would, so the
	// broker derives its admin address; otherwise it is 127.0.0.1:0.
	NoAdminListen bool
	// Args are more flags of `tributary broker`, such as --add-scram.
	Args []string
}

// StartConfig runs `tributary broker` as cfg says and waits until it is
// ready. When the test ends it is stopped and checked as Start's are; a
// cluster stops its nodes itself first, all at once (testcluster).
func StartConfig(t testing.TB, cfg Config) *Broker {
	t.Helper()
	b := &Broker{t: t, dir: cfg.Dir, port: cfg.Port, listeners: cfg.Listeners, props: cfg.Props, noAdmin: cfg.NoAdminListen, args: cfg.Args}
	b.start()
	t.Cleanup(b.Finish)
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
	args := []string{"broker", "--log-dirs", b.dir, "--listeners", listeners}
	if !b.noAdmin {
		args = append(args, "--admin-listen", "127.0.0.1:0")
	}
	for _, p := range b.props {
		args = append(args, "--set", p)
	}
	args = append(args, b.args...)
	b.cmd = exec.Command(Binary(b.t), args...)
	b.done = make(chan struct{})
	b.killed, b.stopped = false, false
	b.logMu.Lock()
	b.incarnation++
	if b.incarnation > 1 {
		fmt.Fprintf(&b.log, "=== testbroker: restart, incarnation %d ===\n", b.incarnation)
	}
	b.logFrom = b.log.Len()
	b.logMu.Unlock()
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
		// Read to the end whatever the line lengths: a reader that stops
		// early would block the broker on its next write to stderr.
		r := bufio.NewReader(stderr)
		signalled := false
		for {
			line, err := r.ReadString('\n')
			if line != "" {
				if !strings.HasSuffix(line, "\n") {
					line += "\n"
				}
				b.logMu.Lock()
				b.log.WriteString(line)
				b.logMu.Unlock()
				if !signalled && (strings.Contains(line, "broker ready") || strings.Contains(line, "controller ready")) {
					close(ready)
					signalled = true
				}
			}
			if err != nil {
				break
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
		b.killed = true
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

// Log is everything the current (or last) incarnation of the broker wrote
// to stderr so far.
func (b *Broker) Log() string {
	b.logMu.Lock()
	defer b.logMu.Unlock()
	return b.log.String()[b.logFrom:]
}

// AllLogs is everything every incarnation of the broker wrote to stderr,
// each restart marked by a "=== testbroker: restart" line.
func (b *Broker) AllLogs() string {
	b.logMu.Lock()
	defer b.logMu.Unlock()
	return b.log.String()
}

// Stop sends SIGTERM and waits for a clean exit: status 0 within
// StopTimeout. A broker that takes longer is killed and the test fails.
// A paused (SIGSTOP) broker is continued first.
func (b *Broker) Stop() {
	b.t.Helper()
	if err := b.stop(); err != nil {
		b.t.Error(err)
	}
}

// stop is Stop returning its complaint instead, so that a cluster can stop
// its nodes from several goroutines at once.
func (b *Broker) stop() error {
	if !b.running() {
		return nil
	}
	b.stopped = true
	b.cmd.Process.Signal(syscall.SIGCONT)
	b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(StopTimeout):
		b.cmd.Process.Kill()
		<-b.done
		return fmt.Errorf("broker %s did not stop within %v of SIGTERM; killed:\n%s", b.Addr(), StopTimeout, lastLines(b.Log(), 100))
	}
	if code := b.cmd.ProcessState.ExitCode(); code != 0 {
		return fmt.Errorf("broker %s exited with status %d after SIGTERM:\n%s", b.Addr(), code, lastLines(b.Log(), 100))
	}
	return nil
}

// Kill ends the broker with SIGKILL (kill -9): no flush, no checkpoints.
func (b *Broker) Kill() {
	b.killed = true
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
	b.noteExit()
	b.start()
}

// noteExit keeps an exit of the current incarnation that the test did not
// ask for (neither Kill nor Stop) and that was not clean, for Finish.
func (b *Broker) noteExit() {
	if b.killed || b.stopped || b.cmd.ProcessState == nil {
		return
	}
	if code := b.cmd.ProcessState.ExitCode(); code != 0 {
		b.exits = append(b.exits, fmt.Sprintf("incarnation %d exited by itself with status %d (%s)", b.incarnation, code, b.cmd.ProcessState))
	}
}

// Finish ends the broker's part in the test, and is its cleanup: it stops
// the broker if it still runs (Stop's checks), then fails the test if any
// incarnation exited by itself with a non-zero status or reported a data
// race, panic or fatal error in its log. Calling it again does nothing.
func (b *Broker) Finish() {
	b.t.Helper()
	for _, err := range b.finish() {
		b.t.Error(err)
	}
}

// finish is Finish returning its complaints, for use from any goroutine.
func (b *Broker) finish() []error {
	var errs []error
	if err := b.stop(); err != nil {
		errs = append(errs, err)
	}
	b.noteExit()
	b.killed = true // nothing more to note about this incarnation
	name := "broker " + b.Addr()
	for _, e := range b.exits {
		errs = append(errs, fmt.Errorf("%s: %s", name, e))
	}
	b.exits = nil
	// Every incarnation has exited and its stderr was read to the end.
	all := b.AllLogs()
	if crashes := FindCrashes(all[b.scannedTo:]); len(crashes) > 0 {
		errs = append(errs, errors.New(crashReport(name, crashes)))
	}
	b.scannedTo = len(all)
	return errs
}

// FinishAll finishes the brokers all at once, so that the last ones to stop
// do not wait out what the first ones took with them (a controller quorum,
// the leaders controlled shutdown would move to). The first brokers are
// stopped first, then the rest: pass broker-only nodes before controllers.
func FinishAll(t testing.TB, groups ...[]*Broker) {
	t.Helper()
	var mu sync.Mutex
	var errs []error
	start := time.Now()
	for _, g := range groups {
		var wg sync.WaitGroup
		for _, b := range g {
			if b == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				e := b.finish()
				mu.Lock()
				errs = append(errs, e...)
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	t.Logf("testbroker: stopped and checked the brokers in %v", time.Since(start).Round(time.Millisecond))
	for _, err := range errs {
		t.Error(err)
	}
}

// lastLines is the end of a log, for a failure message.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("... (%d lines before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// Require handles a missing outside part: under CI (the CI environment
// variable set) the test fails, elsewhere it is skipped, saying how to get
// the part. The skip message starts with `missing dependency "what"`, which
// `make test`'s summary (scripts/testsummary) finds to list what could not
// run.
func Require(t testing.TB, ok bool, what, how string) {
	t.Helper()
	if ok {
		return
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s is missing; CI must provide it (%s)", what, how)
	}
	t.Skipf("missing dependency %q: %s", what, how)
}
