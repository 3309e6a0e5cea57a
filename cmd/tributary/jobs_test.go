package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestJobsCheckConfig(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "jobs.yaml")
	os.WriteFile(good, []byte(`
listen: 127.0.0.1:0
bootstrap: 127.0.0.1:9092
log: {level: debug}
jobs:
  - {name: a, topics: [x], target: "file:///tmp/lake", every: 5m}
`), 0o644)
	out, _, err := execute(t, newRootCommand(), "jobs", "serve", "--config", good, "--check-config")
	if err != nil || !strings.Contains(out, "job a: every 5m0s, local executor") {
		t.Fatalf("good file: %v\n%s", err, out)
	}
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte(`
jobs:
  - {name: a, topics: [x], target: "file:///tmp/lake", schedule: "* * *"}
`), 0o644)
	if _, _, err := execute(t, newRootCommand(), "jobs", "serve", "--config", bad, "--check-config"); err == nil || !strings.Contains(err.Error(), `job "a": schedule`) {
		t.Fatalf("bad file: %v", err)
	}
	unknown := filepath.Join(dir, "unknown.yaml")
	os.WriteFile(unknown, []byte("listen: x\nlistn: y\njobs: []\n"), 0o644)
	if _, _, err := execute(t, newRootCommand(), "jobs", "serve", "--config", unknown, "--check-config"); err == nil || !strings.Contains(err.Error(), `"listn"`) {
		t.Fatalf("unknown top-level key: %v", err)
	}
}

func TestJobsClientWithoutServer(t *testing.T) {
	_, _, err := execute(t, newRootCommand(), "jobs", "list", "--server", "127.0.0.1:1")
	if err == nil || !strings.Contains(err.Error(), "is `tributary jobs serve` running there?") {
		t.Fatalf("jobs list with no server: %v", err)
	}
	if _, _, err := execute(t, newRootCommand(), "jobs", "runs", "x", "-o", "yaml"); err == nil || !strings.Contains(err.Error(), "--output") {
		t.Fatalf("-o yaml: %v", err)
	}
}
