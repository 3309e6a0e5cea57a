package jobs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/loader"
)

// Every manifest in deploy/k8s and the Jobs the kubernetes executor renders
// (one pod, several, more pods than units, with and without the image,
// service account and resources a job sets) validate against the
// Kubernetes API's schemas in kubeconform's strict mode, for the oldest and
// the newest Kubernetes that scripts/kubeconform.sh checks. The template
// itself has ${...} where numbers go, so it is checked rendered.
func TestKubeconform(t *testing.T) {
	t.Parallel()
	_, err := exec.LookPath("go")
	testbroker.Require(t, err == nil, "go (kubeconform is built from the module proxy)", "install Go")
	dir := t.TempDir()
	var files []string
	for _, m := range []string{"broker.yaml", "jobs.yaml", "tracker.yaml"} {
		files = append(files, filepath.Join(testbroker.RepoRoot(), "deploy", "k8s", m))
	}
	for i, tc := range []struct {
		units, parallelism int
		cfg                Kubernetes
	}{
		{1, 1, Kubernetes{}},
		{12, 4, Kubernetes{Image: "registry.example/tributary:1.2", ServiceAccount: "loader", CPU: "2", Memory: "3Gi"}},
		{3, 8, Kubernetes{CPU: "500m"}},
	} {
		tc.cfg.Template = filepath.Join(testbroker.RepoRoot(), "deploy", "k8s", "loader-job.yaml")
		e := &k8sExecutor{cfg: tc.cfg, target: "hdfs://nn:8020/lake"}
		p := &loader.Plan{Run: fmt.Sprintf("clicks-20261202T070000.%dZ-abc123", i), Job: "clicks", Units: make([]loader.Unit, tc.units)}
		job, err := e.render(p, max(1, min(tc.parallelism, tc.units)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.MarshalIndent(job, "", "  ")
		f := filepath.Join(dir, fmt.Sprintf("job-%d.json", i))
		os.WriteFile(f, b, 0o644)
		files = append(files, f)
	}
	cmd := exec.Command("bash", append([]string{filepath.Join(testbroker.RepoRoot(), "scripts", "kubeconform.sh")}, files...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if err != nil && (strings.Contains(out.String(), "go install") || strings.Contains(out.String(), "pip download") || strings.Contains(out.String(), "no Python venv")) {
		testbroker.Require(t, false, "kubeconform or the Kubernetes schemas", out.String())
	}
	if err != nil {
		t.Fatalf("kubeconform: %v\n%s", err, out.String())
	}
	// 12 resources in deploy/k8s and 3 Jobs, for each Kubernetes version.
	if n := strings.Count(out.String(), "Valid: 15, Invalid: 0, Errors: 0, Skipped: 0"); n != 2 {
		t.Fatalf("kubeconform did not validate every manifest for both versions:\n%s", out.String())
	}
}
