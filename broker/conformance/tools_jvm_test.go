package conformance

// The one JVM of the differential tools suite (tools_diff_test.go):
// java/ToolRunner.java runs Apache Kafka's reference brokers in process and
// each tool invocation by calling its main() on a thread, so the suite pays
// for one JVM start instead of one per tool run (1-3 s of CPU each).

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// toolResult is what one tool run printed and its exit status (99: it threw).
type toolResult struct {
	code           int
	stdout, stderr string
}

type toolJVM struct {
	t       *testing.T
	cmd     *exec.Cmd
	in      io.WriteCloser
	mu      sync.Mutex
	next    int
	waiting map[string]chan toolResult
	dead    chan struct{}
	stderr  strings.Builder // the JVM's own: the in-process brokers' log
}

// startToolJVM compiles ToolRunner.java and starts it; the JVM ends when
// the test does (its stdin closes).
func startToolJVM(t *testing.T, k javaKafka) *toolJVM {
	t.Helper()
	classes := k.compile(t, filepath.Join(testbroker.RepoRoot(), "broker", "conformance", "java", "ToolRunner.java"))
	// The security manager intercepts System.exit (Java 18 to 23 want it
	// allowed; Java 17 allows it by default and ignores the property).
	args := append([]string{"-Djava.security.manager=allow"}, k.JVMArgs(k.classpath(classes))...)
	// Room for four brokers and the tools beside them.
	for i, a := range args {
		if strings.HasPrefix(a, "-Xmx") {
			args[i] = "-Xmx1536m"
		}
	}
	j := &toolJVM{t: t, waiting: map[string]chan toolResult{}, dead: make(chan struct{})}
	j.cmd = exec.Command(k.Java, append(args, "ToolRunner")...)
	var err error
	if j.in, err = j.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := j.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	j.cmd.Stderr = &lockedWriter{mu: &j.mu, w: &j.stderr}
	if err := j.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go j.read(out)
	t.Cleanup(func() {
		j.in.Close()
		select {
		case <-j.dead:
		case <-time.After(10 * time.Second):
			j.cmd.Process.Kill()
			<-j.dead
		}
		if t.Failed() || os.Getenv("CONFORMANCE_BROKER_LOG") != "" {
			t.Logf("tool JVM stderr (Kafka's brokers at WARN):\n%s", j.log())
		}
	})
	return j
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (j *toolJVM) log() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	s := j.stderr.String()
	if len(s) > 20000 {
		s = "...\n" + s[len(s)-20000:]
	}
	return s
}

func (j *toolJVM) read(out io.Reader) {
	defer close(j.dead)
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 4 {
			continue
		}
		code, _ := strconv.Atoi(f[1])
		o, _ := base64.StdEncoding.DecodeString(f[2])
		e, _ := base64.StdEncoding.DecodeString(f[3])
		j.mu.Lock()
		ch := j.waiting[f[0]]
		delete(j.waiting, f[0])
		j.mu.Unlock()
		if ch != nil {
			ch <- toolResult{code, string(o), string(e)}
		}
	}
	j.cmd.Wait()
}

// run runs class's main with args in the JVM and waits for it.
func (j *toolJVM) run(timeout time.Duration, class string, args ...string) (toolResult, error) {
	for _, a := range args {
		if strings.ContainsAny(a, "\t\n") {
			return toolResult{}, fmt.Errorf("argument %q: tabs and newlines cannot be passed", a)
		}
	}
	ch := make(chan toolResult, 1)
	j.mu.Lock()
	j.next++
	id := strconv.Itoa(j.next)
	j.waiting[id] = ch
	_, err := io.WriteString(j.in, strings.Join(append([]string{id, class}, args...), "\t")+"\n")
	j.mu.Unlock()
	if err != nil {
		return toolResult{}, fmt.Errorf("tool JVM: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	select {
	case r := <-ch:
		return r, nil
	case <-j.dead:
		return toolResult{}, fmt.Errorf("tool JVM exited (%v):\n%s", j.cmd.ProcessState, j.log())
	case <-ctx.Done():
		return toolResult{}, fmt.Errorf("%s %s: no answer after %v", class, strings.Join(args, " "), timeout)
	}
}

// kafkaNodes are Apache Kafka brokers (combined broker and controller
// nodes, ids 1 to n) started inside the tool JVM.
type kafkaNodes struct{ addrs, logDirs []string }

func (k kafkaNodes) Addr() string { return strings.Join(k.addrs, ",") }

// startKafkaNodes writes the server.properties of n nodes (a quorum of n
// voters, as testbroker.StartKafka's single node is configured) and starts
// them in the tool JVM.
func (j *toolJVM) startKafkaNodes(t *testing.T, n int, extra ...string) kafkaNodes {
	t.Helper()
	dir := t.TempDir()
	ports, cports := make([]int, n), make([]int, n)
	var voters []string
	for i := range n {
		ports[i], cports[i] = testbroker.FreePort(t), testbroker.FreePort(t)
		voters = append(voters, fmt.Sprintf("%d@127.0.0.1:%d", i+1, cports[i]))
	}
	rf := min(n, 3)
	var files []string
	var k kafkaNodes
	for i := range n {
		props := fmt.Sprintf(`process.roles=broker,controller
node.id=%[1]d
controller.quorum.voters=%[2]s
listeners=PLAINTEXT://127.0.0.1:%[3]d,CONTROLLER://127.0.0.1:%[4]d
advertised.listeners=PLAINTEXT://127.0.0.1:%[3]d
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs=%[5]s
num.partitions=1
offsets.topic.replication.factor=%[6]d
offsets.topic.num.partitions=3
transaction.state.log.replication.factor=%[6]d
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
%[7]s
`, i+1, strings.Join(voters, ","), ports[i], cports[i], filepath.Join(dir, fmt.Sprintf("data-%d", i+1)), rf, strings.Join(extra, "\n"))
		f := filepath.Join(dir, fmt.Sprintf("server-%d.properties", i+1))
		if err := os.WriteFile(f, []byte(props), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		k.addrs = append(k.addrs, fmt.Sprintf("127.0.0.1:%d", ports[i]))
		k.logDirs = append(k.logDirs, filepath.Join(dir, fmt.Sprintf("data-%d", i+1)))
	}
	// A cluster id is a Kafka Uuid: 16 bytes, base64url unpadded.
	id := base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("tools-diff-%05d", n)))
	began := time.Now()
	r, err := j.run(3*time.Minute, "@kafka", append([]string{id}, files...)...)
	if err != nil || r.code != 0 {
		t.Fatalf("starting %d Kafka nodes: %v (status %d)\n%s%s", n, err, r.code, r.stdout, r.stderr)
	}
	t.Logf("%d Apache Kafka node(s) started in the tool JVM in %v", n, time.Since(began).Round(time.Millisecond))
	return k
}

// interceptExit asks the JVM to turn a tool's System.exit into the end of
// that tool only (a security manager, Java 17 to 23), and says whether it
// does. Only for a JVM without brokers.
func (j *toolJVM) interceptExit(t *testing.T) bool {
	r, err := j.run(30*time.Second, "@intercept-exit")
	if err != nil {
		t.Fatal(err)
	}
	return r.code == 0
}

// toolExitError is a tool's non-zero exit status, as *exec.ExitError is a
// process's.
type toolExitError struct{ code int }

func (e toolExitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// runTool runs class with stdin (may be empty) as a process would run:
// stdout, stderr, and an error for a non-zero exit status.
func (j *toolJVM) runTool(timeout time.Duration, stdin, class string, args ...string) (stdout, stderr string, err error) {
	if stdin != "" {
		args = append([]string{class}, args...)
		class = "@stdin=" + base64.StdEncoding.EncodeToString([]byte(stdin))
	}
	r, err := j.run(timeout, class, args...)
	if err != nil {
		return "", "", err
	}
	if r.code != 0 {
		err = toolExitError{r.code}
	}
	return r.stdout, r.stderr, err
}
