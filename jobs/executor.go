package jobs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/kafkacli"
	"github.com/tributary-io/tributary/loader"
)

// An executor runs a saved plan's units somewhere other than the scheduler's
// goroutines; it is the loader's Hooks.Execute. The plan is already saved in
// the target, so what it hands over is the plan's URI: the same contract a
// user's `tributary load worker`, a Kubernetes Indexed Job or a YARN
// container has. Workers mark each unit done in the target; the loader
// commits once every marker is there.

// processExecutor spawns `tributary load worker` processes: min(parallelism,
// units) of them, worker i running units i, i+n, i+2n, ...
type processExecutor struct {
	bin       string // the tributary binary
	target    string
	bootstrap string
	hdfsUser  string
	kerberos  fsys.Kerberos
	log       *slog.Logger
}

func (e *processExecutor) execute(ctx context.Context, p *loader.Plan, parallelism int) error {
	n := max(1, min(parallelism, len(p.Units)))
	uri := loader.PlanURI(e.target, p.Run)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		args := []string{"load", "worker", "--plan", uri, "--index", fmt.Sprint(i), "--count", fmt.Sprint(n)}
		if e.bootstrap != "" {
			args = append(args, "--bootstrap", e.bootstrap)
		}
		if e.hdfsUser != "" {
			args = append(args, "--hdfs-user", e.hdfsUser)
		}
		args = append(args, e.kerberos.Flags()...)
		wg.Go(func() {
			// The workers connect as the scheduler does: its client
			// properties go in their environment, never on their
			// command line, which every local user can read.
			errs[i] = runChild(ctx, e.log, fmt.Sprintf("worker %d/%d", i, n), e.bin, args, kafkacli.ChildEnv())
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("run %s: %w", p.Run, err)
	}
	return nil
}

// commandExecutor runs one command that has the plan's units executed (a
// script that starts a Kubernetes Indexed Job and waits for it, say). It
// gets the plan in its environment:
//
//	TRIBUTARY_PLAN         the plan's URI, for `tributary load worker --plan`
//	TRIBUTARY_RUN          the loader's run id
//	TRIBUTARY_JOB          the job's name
//	TRIBUTARY_UNITS        the number of units
//	TRIBUTARY_PARALLELISM  the job's parallelism (min of it and the units)
type commandExecutor struct {
	argv   []string
	target string
	log    *slog.Logger
}

func (e *commandExecutor) execute(ctx context.Context, p *loader.Plan, parallelism int) error {
	env := []string{
		"TRIBUTARY_PLAN=" + loader.PlanURI(e.target, p.Run),
		"TRIBUTARY_RUN=" + p.Run,
		"TRIBUTARY_JOB=" + p.Job,
		fmt.Sprintf("TRIBUTARY_UNITS=%d", len(p.Units)),
		fmt.Sprintf("TRIBUTARY_PARALLELISM=%d", max(1, min(parallelism, len(p.Units)))),
	}
	return runChild(ctx, e.log, "command", e.argv[0], e.argv[1:], env)
}

// runChild runs a child process to its end. Its output goes to the log;
// its last lines go into the error when it fails. Cancelling ctx sends
// SIGTERM, then SIGKILL after 10 s: a worker killed mid-unit leaves an
// attempt directory that a rerun ignores.
func runChild(ctx context.Context, log *slog.Logger, name, bin string, args, env []string) error {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	var out tail
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	log.Debug("child exited", "name", name, "args", strings.Join(args, " "), "seconds", time.Since(start).Seconds(), "err", err)
	if err != nil {
		return fmt.Errorf("%s (%s %s): %v: %s", name, bin, strings.Join(args, " "), err, out.last(8))
	}
	return nil
}

// tail keeps the end of a child's output.
type tail struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if t.buf.Len() > 64<<10 {
		b := t.buf.Bytes()[t.buf.Len()-32<<10:]
		t.buf = *bytes.NewBuffer(append([]byte(nil), b...))
	}
	return len(p), nil
}

func (t *tail) last(n int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := strings.Split(strings.TrimRight(t.buf.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
