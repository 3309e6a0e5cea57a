package testcluster

// The Java variant of the workload: java/JepsenProducer.java, compiled with
// javac against Apache Kafka's jars by testbroker.JDK (as the conformance
// tests' programs are), run as a child process whose output lines feed the
// same recorder as the Go workload's promises.
//
// Unlike the conformance tests, a missing JDK or jar fails the test instead
// of skipping it (testbroker.NoSkip): a chaos test that silently loses its
// second client has lost half its point.

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// JavaProducer is a running JepsenProducer.
type JavaProducer struct {
	*recorder
	cfg   WorkloadConfig
	cmd   *exec.Cmd
	stdin io.WriteCloser

	stderr bytes.Buffer // the JVM's (the client logs at WARN); cmd writes it, read after done
	done   chan struct{}
	// Written by the stdout reader before done is closed.
	sent    int64 // from the "sent <n>" line; -1 until then
	bad     []string
	waitErr error
	once    sync.Once
}

// StartJavaProducer compiles (cached) and starts JepsenProducer against the
// cluster at bootstrap. It fails the test if Java 17+, javac or the Kafka jars are missing.
func StartJavaProducer(t testing.TB, bootstrap string, cfg WorkloadConfig) *JavaProducer {
	t.Helper()
	cfg.defaults("j")
	jdk := testbroker.FindJDK(testbroker.NoSkip(t))
	classes := jdk.Compile(t, filepath.Join(testbroker.RepoRoot(), "internal", "testcluster", "java", "JepsenProducer.java"))
	args := append(jdk.JVMArgs(jdk.Classpath(classes)), "JepsenProducer",
		bootstrap, cfg.Topic, cfg.Name, strconv.Itoa(cfg.Records), cfg.Key, strconv.FormatFloat(cfg.Rate, 'f', -1, 64),
		strconv.FormatInt(cfg.DeliveryTimeout.Milliseconds(), 10))
	j := &JavaProducer{recorder: newRecorder(cfg.Name), cfg: cfg, sent: -1, done: make(chan struct{})}
	j.cmd = exec.Command(jdk.Java, args...)
	j.cmd.Stderr = &j.stderr
	var err error
	if j.stdin, err = j.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := j.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := j.cmd.Start(); err != nil {
		t.Fatalf("java JepsenProducer: %v", err)
	}
	go j.read(stdout)
	t.Cleanup(func() {
		j.once.Do(func() {
			j.cmd.Process.Kill()
			<-j.done
		})
	})
	return j
}

// read parses the program's output into the recorder until it exits.
func (j *JavaProducer) read(stdout io.Reader) {
	defer close(j.done)
	// Every value the program sends, before its fate is printed: the
	// recorder wants attempts in sequence order, and the program only
	// says how many at the end, so they are filled in from the acks and
	// failures as they come and completed from "sent".
	next := 0
	attemptUpTo := func(seq int) {
		for ; next <= seq; next++ {
			j.attempt(fmt.Sprintf("%s-%d", j.cfg.Name, next))
		}
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 3)
		seq := -1
		if len(f) > 1 {
			seq = valueSeq(j.cfg.Name, f[1])
		}
		switch {
		case f[0] == "ack" && len(f) == 3 && seq >= 0:
			var a Ack
			if _, err := fmt.Sscanf(f[2], "%d %d", &a.Partition, &a.Offset); err != nil {
				j.bad = append(j.bad, sc.Text())
				continue
			}
			attemptUpTo(seq)
			j.ack(f[1], a)
		case f[0] == "fail" && len(f) == 3 && seq >= 0:
			attemptUpTo(seq)
			j.fail(f[1], f[2])
		case f[0] == "sent" && len(f) == 2:
			n, err := strconv.Atoi(f[1])
			if err != nil {
				j.bad = append(j.bad, sc.Text())
				continue
			}
			attemptUpTo(n - 1)
			j.sent = int64(n)
		default:
			j.bad = append(j.bad, sc.Text())
		}
	}
	io.Copy(io.Discard, stdout)
	j.waitErr = j.cmd.Wait()
}

// valueSeq is the sequence number of a value of producer name, or -1.
func valueSeq(name, value string) int {
	p, seq, ok := parseValue(value)
	if !ok || p != name {
		return -1
	}
	return int(seq)
}

// Wait waits until the program has sent all Records and resolved them,
// and returns the History. The test fails if the program did not finish
// cleanly; a record's failure is not the program's.
func (j *JavaProducer) Wait(t testing.TB) *History {
	t.Helper()
	if j.cfg.Records == 0 {
		t.Fatal("JavaProducer.Wait with no Records would wait forever; use Stop")
	}
	return j.finish(t)
}

// Stop tells the program to send no more, waits until what it sent is
// resolved, and returns the History.
func (j *JavaProducer) Stop(t testing.TB) *History {
	t.Helper()
	j.stdin.Close()
	return j.finish(t)
}

func (j *JavaProducer) finish(t testing.TB) *History {
	t.Helper()
	j.once.Do(func() {
		// The program's own retries end within its delivery timeout
		// (each blocked send and the flush); a minute beyond that means
		// it hangs.
		select {
		case <-j.done:
		case <-time.After(2*j.cfg.DeliveryTimeout + time.Minute):
			j.cmd.Process.Kill()
			<-j.done
		}
	})
	<-j.done
	if j.waitErr != nil || j.sent < 0 || len(j.bad) > 0 {
		t.Fatalf("java JepsenProducer %s: %v, sent line seen: %v, unparsed lines %q\nstderr:\n%s",
			j.cfg.Name, j.waitErr, j.sent >= 0, j.bad[:min(len(j.bad), 10)], j.stderr.String())
	}
	if s := strings.TrimSpace(j.stderr.String()); s != "" {
		// Warnings are expected while brokers die; worth reading when
		// they are not.
		t.Logf("java JepsenProducer %s stderr:\n%s", j.cfg.Name, s)
	}
	return j.history()
}
