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
// everything, with exit status 0, within 10 seconds. Issue 24: the lake is
// an Iceberg table, read here with pyiceberg into DuckDB, and the query
// the banner prints runs as printed.
func TestDevEndToEnd(t *testing.T) {
	py := testbroker.Python(t, "duckdb")
	testbroker.Python(t, "pyiceberg")
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
	b := <-banner
	if !strings.Contains(b, "tributary consume events") || !strings.Contains(b, "iceberg_scan") || !strings.Contains(b, "tributary lake query events") ||
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
	table := filepath.Join(data, "lake", "events")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, py, "-c", `import sys
from pyiceberg.table import StaticTable
t = StaticTable.from_metadata(sys.argv[1])
con = t.scan(selected_fields=("_partition", "_offset")).to_duckdb("events")
print(*con.sql("select count(*), count(distinct (_partition, _offset)) from events").fetchall()[0], len(t.snapshots()))`, table).CombinedOutput()
	if err != nil {
		t.Fatalf("pyiceberg: %v\n%s", err, out)
	}
	var rows, distinct, snapshots int64
	fmt.Sscan(string(out), &rows, &distinct, &snapshots)
	if committed == 0 || rows != committed || distinct != rows || snapshots < 2 {
		t.Fatalf("the table has %d rows (%d distinct offsets) in %d snapshots; the job committed %d offsets in 2 loads or more", rows, distinct, snapshots, committed)
	}
	t.Logf("%d events in the table's %d snapshots, all the committed offsets", rows, snapshots)

	// The banner's pyiceberg query, as printed.
	i := strings.Index(b, `python3 -c "from pyiceberg`)
	if i < 0 {
		t.Fatalf("the banner has no pyiceberg query:\n%s", b)
	}
	line := b[i+len(`python3 -c "`):]
	line = line[:strings.Index(line, "\n")]
	line = strings.TrimSuffix(line, `"`)
	out, err = exec.CommandContext(ctx, py, "-c", line).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "track") {
		t.Fatalf("the banner's query %s: %v\n%s", line, err, out)
	}
}
