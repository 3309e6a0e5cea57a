package main_test

import (
	"bufio"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// A running broker's collector aims at 64 MiB or more (the heap floor, see
// heapfloor.go), so that small requests do not set it off every few MiB;
// with GOGC set the user's pacing wins. Read from the broker's own /metrics.
func TestBrokerHeapFloor(t *testing.T) {
	const floor = 64 << 20
	if goal := brokerGCGoal(t, nil); goal < floor {
		t.Errorf("broker's GC goal is %.0f bytes; want at least %d (the heap floor)", goal, floor)
	}
	if goal := brokerGCGoal(t, []string{"GOGC=100"}); goal >= floor {
		t.Errorf("with GOGC=100 the broker's GC goal is %.0f bytes; the floor should be off", goal)
	}
}

// brokerGCGoal starts `tributary broker` with env added and returns the
// go_memstats_next_gc_bytes it reports.
func brokerGCGoal(t *testing.T, env []string) float64 {
	t.Helper()
	admin := freeAddr(t)
	cmd := exec.Command(testbroker.Binary(t), "broker", "--log-dirs", t.TempDir(),
		"--listeners", "PLAINTEXT://"+freeAddr(t), "--admin-listen", admin)
	cmd.Env = append(os.Environ(), env...)
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + admin + "/metrics")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_next_gc_bytes "); ok {
				resp.Body.Close()
				goal, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatal(err)
				}
				return goal
			}
		}
		resp.Body.Close()
	}
	t.Fatalf("no go_memstats_next_gc_bytes on %s/metrics within 20 s\n%s", admin, logs.String())
	return 0
}
