package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
)

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Issue 10's end-to-end test: `tributary dev --generate` makes traffic,
// the tracker takes it, scheduled loads put it in the lake, DuckDB counts
// exactly the offsets the loader committed, and Ctrl-C (SIGINT) stops
// everything, with exit status 0, within 10 seconds.
func TestDevEndToEnd(t *testing.T) {
	py := testbroker.Python(t, "duckdb")
	data := t.TempDir()
	broker, jobsAddr, consoleAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	cmd := exec.Command(testbroker.Binary(t), "dev", "--generate", "--rate", "400", "--load-every", "5s",
		"--data-dir", data, "--broker-listen", broker, "--tracker-listen", freeAddr(t),
		"--jobs-listen", jobsAddr, "--admin-listen", freeAddr(t), "--registry-listen", freeAddr(t), "--console-listen", consoleAddr)
	stdout, _ := cmd.StdoutPipe()
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	banner := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(bufio.NewReader(stdout))
		banner <- string(b)
	}()

	// At least two scheduled loads that loaded something.
	var runs []struct {
		Outcome string `json:"outcome"`
		Rows    int64  `json:"rows"`
	}
	deadline := time.Now().Add(60 * time.Second)
	for loaded := 0; loaded < 2; time.Sleep(time.Second) {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than 2 loads with rows after 60 s: %+v\n%s", runs, logs.String())
		}
		resp, err := http.Get("http://" + jobsAddr + "/jobs/events-lake/runs")
		if err != nil {
			continue
		}
		var page struct {
			Runs []struct {
				Outcome string `json:"outcome"`
				Rows    int64  `json:"rows"`
			} `json:"runs"`
		}
		json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		runs = page.Runs
		loaded = 0
		for _, r := range runs {
			if r.Outcome == "succeeded" && r.Rows > 0 {
				loaded++
			}
		}
	}

	// The console shows the topic the tracker writes.
	if resp, err := http.Get("http://" + consoleAddr + "/topics/events"); err != nil || resp.StatusCode != 200 {
		t.Errorf("the console's page of events: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	start := time.Now()
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("exit after SIGINT: %v\n%s", err, logs.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("still running 10 s after SIGINT\n%s", logs.String())
	}
	t.Logf("stopped %v after SIGINT", time.Since(start).Round(time.Millisecond))
	if b := <-banner; !strings.Contains(b, "tributary consume events") || !strings.Contains(b, "duckdb") ||
		!strings.Contains(b, "Open the console: http://localhost:"+consoleAddr[strings.LastIndex(consoleAddr, ":")+1:]) {
		t.Errorf("the start banner does not say what to try:\n%s", b)
	}

	// The lake holds exactly the offsets the job committed, once each.
	var state struct {
		Offsets map[string]map[string]int64 `json:"offsets"`
	}
	stateFile := filepath.Join(data, "lake", "_tributary", "state", "events-lake.json")
	raw, err := os.ReadFile(stateFile)
	if err != nil || json.Unmarshal(raw, &state) != nil {
		t.Fatalf("the job's state %s: %v", stateFile, err)
	}
	var committed int64
	for _, off := range state.Offsets["events"] {
		committed += off
	}
	q := fmt.Sprintf(`select count(*), count(distinct (_partition, _offset)) from read_parquet('%s/events/*/*/*.parquet', hive_partitioning = true)`,
		filepath.Join(data, "lake"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, "-c", "import duckdb,sys; print(*duckdb.sql(sys.argv[1]).fetchall()[0])", q).CombinedOutput()
	if err != nil {
		t.Fatalf("duckdb: %v\n%s", err, out)
	}
	var rows, distinct int64
	fmt.Sscan(string(out), &rows, &distinct)
	if committed == 0 || rows != committed || distinct != rows {
		t.Fatalf("the lake has %d rows (%d distinct offsets); the job committed %d offsets", rows, distinct, committed)
	}
	t.Logf("%d events in the lake, all the committed offsets", rows)
}
