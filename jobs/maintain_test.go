package jobs_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/jobs"
)

// A load job writes an Iceberg table on HDFS every 2 s while a maintenance
// job compacts it, expires its snapshots and removes its orphans every
// 3 s, so that loads commit during compactions and expiries: every offset
// is in the table's current snapshot once (pyiceberg), each retained
// snapshot still reads by time travel, and the history records what each
// maintenance run did.
func TestMaintenanceJob(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "taps", 2)
	target := hdfsTarget(t)
	file := filepath.Join(t.TempDir(), "jobs.yaml")
	writeConfig(t, file, fmt.Sprintf("bootstrap: %s\nlease_ttl: 8s\njobs:\n", b.Addr())+
		jobYAML("taps-load", "taps", target, "    every: 2s\n    table_format: iceberg\n")+
		fmt.Sprintf(`  - name: taps-maintenance
    topics: [taps]
    target: %s
    maintenance: [expire_snapshots, compact, remove_orphans]
    max_snapshot_age: 1s
    min_snapshots_to_keep: 3
    orphan_age: 1h
    every: 3s
    retries: 5
    backoff: 1s
`, target))
	p := &producer{t: t, addr: b.Addr(), topic: "taps"}
	p.produce(200)
	s := serve(t, file)
	stop := make(chan struct{})
	produced := make(chan struct{})
	go func() {
		defer close(produced)
		for {
			select {
			case <-stop:
				return
			case <-time.After(900 * time.Millisecond):
				p.produce(100)
			}
		}
	}()
	compacted := func() (runs, files, expired int) {
		for _, r := range history(t, target, "taps-maintenance") {
			for _, m := range r.Maintenance {
				if r.Outcome == jobs.Succeeded && m.Compacted > 0 {
					runs++
					files += m.Compacted
				}
				expired += m.Expired
			}
		}
		return
	}
	eventually(t, 150*time.Second, "two maintenance runs that compacted, and one that expired", func() bool {
		r, _, e := compacted()
		return r >= 2 && e > 0
	})
	close(stop)
	<-produced
	hwm := testbroker.HighWatermarks(t, b.Addr(), "taps")
	// The final load: a run that started after the last event and left no
	// lag (an earlier run's lag may predate the last events).
	after := time.Now().UTC()
	eventually(t, 60*time.Second, "a load run after the last event that leaves no lag", func() bool {
		for _, r := range history(t, target, "taps-load") {
			var lag int64
			for _, n := range r.Lag {
				lag += n
			}
			if r.Started.After(after) && r.Outcome == jobs.Succeeded && r.Lag != nil && lag == 0 {
				return true
			}
		}
		return false
	})
	// `jobs runs` shows what each maintenance run did.
	out, err := exec.Command(testbroker.Binary(t), "jobs", "runs", "taps-maintenance", "--server", s.addr).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "table taps: compacted ") {
		t.Errorf("jobs runs: %v\n%s", err, out)
	}
	s.stop()
	runs, files, expired := compacted()
	t.Logf("%d compacting runs rewrote %d files; %d snapshots expired", runs, files, expired)
	for _, r := range history(t, target, "taps-maintenance") {
		if r.Outcome != jobs.Succeeded && r.Outcome != jobs.Cancelled {
			t.Errorf("maintenance run %s: %s %s", r.ID, r.Outcome, r.Error)
		}
		for _, m := range r.Maintenance {
			t.Logf("run %s: compacted %d files into %d in %.2fs; expired %d snapshots and %d files in %.2fs; %d orphans in %.2fs",
				r.ID, m.Compacted, m.Written, m.Seconds["compact"], m.Expired, m.DeletedFiles, m.Seconds["expire_snapshots"], m.Orphans, m.Seconds["remove_orphans"])
		}
	}

	v := readTable(t, target, "taps")
	seen := map[[2]int64]bool{}
	for _, po := range v.Offsets {
		if seen[po] {
			t.Fatalf("partition %d offset %d is in the table twice", po[0], po[1])
		}
		seen[po] = true
	}
	var total int64
	for part, end := range hwm {
		total += end
		for o := int64(0); o < end; o++ {
			if !seen[[2]int64{int64(part), o}] {
				t.Fatalf("partition %d offset %d is not in the table", part, o)
			}
		}
	}
	if int64(len(seen)) != total {
		t.Fatalf("%d offsets in the table, %d in the topic", len(seen), total)
	}
	ops := map[string]int{}
	for _, s := range v.Snapshots {
		ops[s.Summary["operation"]]++
	}
	if ops["replace"] == 0 || len(v.Snapshots) < 3 {
		t.Fatalf("retained snapshots by operation: %v", ops)
	}
}

// readTable reads an HDFS table with pyiceberg from a local copy
// (loader/testdata/read_iceberg.py): every retained snapshot is scanned by
// time travel, so one whose files an expiry deleted fails the read.
func readTable(t *testing.T, target, table string) *tableView {
	t.Helper()
	fs := openTarget(t, target)
	defer fs.Close()
	local := t.TempDir()
	copyTree(t, fs, table, filepath.Join(local, table))
	py := testbroker.Python(t, "pyiceberg")
	script := filepath.Join(testbroker.RepoRoot(), "loader", "testdata", "read_iceberg.py")
	cmd := exec.Command(py, script, target+"/"+table, target, local)
	out, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("read_iceberg.py: %v\n%s", err, lastLines(stderr, 20))
	}
	var v tableView
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return &v
}

type tableView struct {
	Snapshots []struct {
		ID      int64             `json:"id"`
		Summary map[string]string `json:"summary"`
		Rows    int64             `json:"rows"`
	} `json:"snapshots"`
	Offsets [][2]int64 `json:"offsets"`
}
