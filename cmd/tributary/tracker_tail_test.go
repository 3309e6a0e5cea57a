package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/internal/kafkacli"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/tracker/tail"
)

// The tail: section of the config file, and flags winning over it.
func TestTrackerTailConfig(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tracker.yaml")
	os.WriteFile(file, []byte(`topic: site
tail:
  positions: /var/lib/t/positions.json
  scan_interval: 3s
  batch_lines: 500
  files:
    - name: nginx
      paths: [/var/log/nginx/access.log*]
      format: combined
      topic: nginx-access
      key: remote_addr
      send_invalid: true
    - paths: [/var/log/app/*.json]
      format: json
      start_at: end
`), 0o644)
	var got tail.Config
	root := newRootCommand()
	tracker := findCommand(root, "tracker")
	tracker.RemoveCommand(findCommand(tracker, "tail"))
	tracker.AddCommand(trackerTailCommand(func(_ context.Context, cfg tail.Config, _ []string, _ string) error {
		got = cfg
		return nil
	}))
	if _, _, err := execute(t, root, "--config", file, "tracker", "tail", "--batch-lines", "100", "--format", "json", "/tmp/x/*.log"); err != nil {
		t.Fatal(err)
	}
	if got.PositionsFile != "/var/lib/t/positions.json" || got.ScanInterval != 3*time.Second || got.BatchLines != 100 || got.PollInterval != 0 {
		t.Errorf("settings %+v", got)
	}
	if len(got.Inputs) != 3 {
		t.Fatalf("inputs %+v", got.Inputs)
	}
	cli, nginx, app := got.Inputs[0], got.Inputs[1], got.Inputs[2]
	if cli.Paths[0] != "/tmp/x/*.log" || cli.Topic != "site" || cli.Format != tail.FormatJSON {
		t.Errorf("command line input %+v", cli)
	}
	if nginx.Name != "nginx" || nginx.Topic != "nginx-access" || nginx.Format != tail.FormatCombined || nginx.Key != "remote_addr" || !nginx.SendInvalid {
		t.Errorf("nginx input %+v", nginx)
	}
	if app.Topic != "site" || app.StartAt != tail.StartEnd {
		t.Errorf("app input %+v", app)
	}

	_, _, err := execute(t, newRootCommand(), "tracker", "tail", "--admin-listen", "")
	if err == nil || !strings.Contains(err.Error(), "no files to follow") {
		t.Errorf("no GLOB and no config: %v", err)
	}
}

// tributary tracker with a tail: section runs the tailer beside the
// collector.
func TestTrackerRunsTailSection(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the broker")
	}
	b := testbroker.Start(t)
	mustRunCLI(t, "", "topic", "create", "logs", "-p", "1", "--bootstrap", b.Addr())
	dir := t.TempDir()
	log := filepath.Join(dir, "app.log")
	os.WriteFile(log, []byte("first\nsecond\n"), 0o644)
	file := filepath.Join(dir, "tracker.yaml")
	os.WriteFile(file, []byte(fmt.Sprintf("tail:\n  files: [{paths: [%q], topic: logs}]\n", log)), 0o644)
	spool := filepath.Join(dir, "spool")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	adminAddr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		root := newRootCommand()
		root.SetArgs([]string{"--config", file, "tracker", "--write-key", "k", "--listen", "127.0.0.1:0", "--bootstrap", b.Addr(),
			"--admin-listen", adminAddr, "--spool-dir", spool})
		done <- root.ExecuteContext(ctx)
	}()
	counts, total := waitLines(t, b.Addr(), "logs", 2, func(v []byte) string { return string(v) })
	// The tailer's metrics are on the tracker's /metrics.
	var metrics string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if res, err := http.Get("http://" + adminAddr + "/metrics"); err == nil {
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			metrics = string(body)
		}
		if strings.Contains(metrics, `tributary_tracker_tail_lines_sent_total{input="`+log+`"} 2`) || time.Now().After(deadline) {
			break
		}
	}
	for _, want := range []string{
		`tributary_tracker_tail_lines_read_total{input="` + log + `"} 2`,
		`tributary_tracker_tail_lines_sent_total{input="` + log + `"} 2`,
		`tributary_tracker_tail_position_bytes{file="` + log + `",input="` + log + `"} 13`,
		`tributary_tracker_tail_lag_bytes{file="` + log + `",input="` + log + `"} 0`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if total != 2 || counts["first"] != 1 || counts["second"] != 1 {
		t.Fatalf("records %v", counts)
	}
	if _, err := os.Stat(filepath.Join(spool, "tail-positions.json")); err != nil {
		t.Errorf("positions not in the spool directory: %v", err)
	}
}

// Issue 9, test 6: 100,000 lines written while the file is rotated by
// rename (lines 0-49,999), then by copytruncate (50,000-99,999), and the
// tailer, the real binary, is killed with SIGKILL once in each phase and
// started again after a rotation happened while it was down. Every line is
// in the topic; duplicates are bounded by one batch per kill.
func TestTrackerTailKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the broker")
	}
	const (
		total       = 100000
		rotateEvery = 10000
		batchLines  = 1000
	)
	b := testbroker.Start(t)
	mustRunCLI(t, "", "topic", "create", "logs", "-p", "2", "--bootstrap", b.Addr())
	dir := t.TempDir()
	log := filepath.Join(dir, "app.log")
	positions := filepath.Join(dir, "positions.json")

	var (
		logMu  sync.Mutex
		stderr bytes.Buffer
	)
	start := func() *exec.Cmd {
		cmd := exec.Command(testbroker.Binary(t), "tracker", "tail", "--bootstrap", b.Addr(), "--topic", "logs",
			"--positions", positions, "--admin-listen", "", "--scan-interval", "100ms", "--poll-interval", "20ms",
			"--rotate-wait", "500ms", "--batch-lines", strconv.Itoa(batchLines), log+"*")
		pipe, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			sc := bufio.NewScanner(pipe)
			for sc.Scan() {
				logMu.Lock()
				stderr.WriteString(sc.Text() + "\n")
				logMu.Unlock()
			}
		}()
		return cmd
	}
	tailerLog := func() string {
		logMu.Lock()
		defer logMu.Unlock()
		return stderr.String()
	}

	// The writer: 100 lines per write, about 25,000 lines/s. Its
	// copytruncate copies to a name the glob does not match and renames the
	// copy in, then truncates, with no write of its own in between: it
	// measures what the tailer controls, not the lines copytruncate itself
	// loses between the copy and the truncate.
	var written atomic.Int64
	writerDone := make(chan error, 1)
	go func() {
		writerDone <- func() error {
			w, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
			if err != nil {
				return err
			}
			defer func() { w.Close() }()
			var buf bytes.Buffer
			for i := 0; i < total; i += 100 {
				if i > 0 && i%rotateEvery == 0 {
					rotated := fmt.Sprintf("%s.%d", log, i/rotateEvery)
					if i <= total/2 {
						w.Close()
						if err := os.Rename(log, rotated); err != nil {
							return err
						}
						if w, err = os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644); err != nil {
							return err
						}
					} else {
						data, err := os.ReadFile(log)
						if err != nil {
							return err
						}
						tmp := filepath.Join(dir, "copy.tmp")
						if err := os.WriteFile(tmp, data, 0o644); err != nil {
							return err
						}
						if err := os.Rename(tmp, rotated); err != nil {
							return err
						}
						if err := w.Truncate(0); err != nil {
							return err
						}
					}
				}
				buf.Reset()
				for j := i; j < i+100; j++ {
					fmt.Fprintf(&buf, "%06d GET /products/%d?ref=home HTTP/1.1 200\n", j, j%977)
				}
				if _, err := w.Write(buf.Bytes()); err != nil {
					return err
				}
				written.Store(int64(i + 100))
				time.Sleep(4 * time.Millisecond)
			}
			return nil
		}()
	}()
	waitWritten := func(n int64) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); written.Load() < n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the writer is stuck at %d lines", written.Load())
			}
		}
	}

	tailer := start()
	kills := 0
	for _, at := range []int64{25000, 75000} {
		waitWritten(at)
		if err := tailer.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		tailer.Wait()
		kills++
		t.Logf("tailer killed with SIGKILL at %d lines written", written.Load())
		// Down across a rotation (30,000: rename; 80,000: copytruncate).
		waitWritten(at + 6000)
		t.Logf("tailer restarted at %d lines written", written.Load())
		tailer = start()
	}
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}
	lineNo := func(v []byte) string { n, _, _ := bytes.Cut(v, []byte(" ")); return string(n) }
	counts, records := waitLines(t, b.Addr(), "logs", total, lineNo)
	tailer.Process.Signal(syscall.SIGTERM)
	if err := tailer.Wait(); err != nil {
		t.Errorf("tailer after SIGTERM: %v\n%s", err, tailerLog())
	}
	// Read again after the clean stop: nothing more arrives.
	counts, records = waitLines(t, b.Addr(), "logs", total, lineNo)

	missing, dups := 0, 0
	var firstMissing []int
	dupBlocks := map[int]int{} // duplicates per 1,000 lines
	for i := range total {
		n := counts[fmt.Sprintf("%06d", i)]
		if n > 1 {
			dupBlocks[i/1000*1000] += n - 1
		}
		if n == 0 {
			missing++
			if len(firstMissing) < 10 {
				firstMissing = append(firstMissing, i)
			}
		}
		dups += max(n-1, 0)
	}
	t.Logf("%d lines written; %d records in the topic, %d distinct lines, %d missing, %d duplicates after %d kill -9 (by block of 1,000 lines: %v)",
		total, records, len(counts), missing, dups, kills, dupBlocks)
	if missing > 0 || len(counts) != total {
		t.Fatalf("%d lines missing (first: %v), %d distinct values\ntailer log:\n%s", missing, firstMissing, len(counts), tailerLog())
	}
	// Duplicates come only from the batch the broker had acknowledged when
	// the tailer was killed, before the positions file was renamed over:
	// at most one batch per kill.
	if dups > kills*batchLines {
		t.Fatalf("%d duplicates, more than %d kills x %d lines per batch\ntailer log:\n%s", dups, kills, batchLines, tailerLog())
	}
	for _, want := range []string{"continuing at the saved position", "a copy of truncated content"} {
		if !strings.Contains(tailerLog(), want) {
			t.Errorf("the tailer never logged %q:\n%s", want, tailerLog())
		}
	}
}

// waitLines reads the whole topic once it holds at least n records and its
// high watermark stopped moving, and counts the records by id(value).
func waitLines(t *testing.T, addr, topic string, n int, id func([]byte) string) (map[string]int, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	c, err := kafkacli.Connect(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Topic(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	parts := info.PartitionIndexes()
	var end, last int64 = 0, -1
	stable := 0
	for {
		ranges, err := c.Offsets(ctx, topic, parts)
		if err != nil {
			t.Fatal(err)
		}
		end = 0
		for _, r := range ranges {
			end += r.End
		}
		if end >= int64(n) && end == last {
			stable++
		} else {
			stable = 0
		}
		if stable >= 10 { // 1 s without a new record
			break
		}
		last = end
		select {
		case <-ctx.Done():
			t.Fatalf("%d records in %q after 90s, want %d", end, topic, n)
		case <-time.After(100 * time.Millisecond):
		}
	}
	c.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	counts := map[string]int{}
	read := 0
	for int64(read) < end {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records: %v", read, end, ctx.Err())
		}
		fs.EachRecord(func(r *kgo.Record) {
			counts[id(r.Value)]++
			read++
		})
	}
	return counts, read
}
