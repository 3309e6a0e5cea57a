package loader_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/internal/testhdfs"
)

// syncBuffer is a bytes.Buffer for two goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Issue 7, "the DataNode dies mid-write": the only DataNode of a private
// HDFS is killed (SIGKILL) while a load (sized) streams Parquet into it. The load
// fails with HDFS's error and commits nothing; once a DataNode is back,
// the rerun resumes the plan and every offset is in the lake once.
func TestDataNodeDiesMidWrite(t *testing.T) {
	t.Parallel()
	h := testhdfs.StartPrivate(t)
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "events", 2)
	var want produced
	produce(t, b.Addr(), "events", 0, sized(100_000), 0, &want)
	target := "hdfs://" + h.NameNode + "/tmp/lake"
	args := append([]string{"load", "run", "-b", b.Addr(), "--topics", "events", "--schema", activitySchema, "--time-field", "timestamp",
		"--target", target, "--parallelism", "1", "--max-records-per-unit", fmt.Sprint(sized(10_000)), "--target-file-size", fmt.Sprint(sized(256 << 10)),
		// The failed run cannot release its lease without a DataNode: the
		// rerun waits for it to expire.
		"--lease-ttl", "5s", "--max-clock-skew", "0s", "--wait", "1m"}, hdfsArgs(t)...)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	load := exec.CommandContext(ctx, testbroker.Binary(t), args...)
	var out syncBuffer
	load.Stdout = &out
	stderr, err := load.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := load.Start(); err != nil {
		t.Fatal(err)
	}
	// At the first unit done, the load is stopped (SIGSTOP) with the next
	// unit's files open, the DataNode is killed, and the load continues:
	// its writes in flight lose their pipeline.
	firstUnit := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			if !once && strings.Contains(sc.Text(), `msg="unit done"`) {
				syscall.Kill(load.Process.Pid, syscall.SIGSTOP)
				once = true
				close(firstUnit)
			}
			out.Write([]byte(sc.Text() + "\n"))
		}
	}()
	select {
	case <-firstUnit:
	case <-time.After(2 * time.Minute):
		t.Fatalf("no unit done after 2 minutes:\n%s", out.String())
	}
	h.KillDataNode()
	syscall.Kill(load.Process.Pid, syscall.SIGCONT)
	done := make(chan error, 1)
	go func() { done <- load.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		t.Fatalf("the load hangs after its DataNode died:\n%s", out.String())
	}
	if err == nil {
		t.Fatalf("the load succeeded although its only DataNode died mid-write:\n%s", out.String())
	}
	t.Logf("the load failed as it should: %v\n%s", err, lastLines(out.String(), 3))
	if strings.Contains(out.String(), "committed") {
		t.Fatalf("the failed load committed:\n%s", out.String())
	}

	h.Start() // the DataNode alone, on the same storage
	t.Log(mustLoad(t, args[2:]...))
	checkExactlyOnce(t, readLake(t, target, "events"), &want, testbroker.HighWatermarks(t, b.Addr(), "events"))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
