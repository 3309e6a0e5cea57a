package jobs

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// Review 6: scripts/kubeconform_unpack.py takes only the pinned wheel (its
// exact name, its sha256, alone in the download dir) and refuses a member
// whose path leaves the output dir, writing nothing of that wheel.
func TestKubeconformUnpack(t *testing.T) {
	t.Parallel()
	py := testbroker.Python(t, "pip") // the venv scripts/kubeconform.sh runs it with
	script := filepath.Join(testbroker.RepoRoot(), "scripts", "kubeconform_unpack.py")
	const name = "kubernetes_validate-1.37.0-py3-none-any.whl"
	const prefix = "kubernetes_validate/kubernetes-json-schema/"
	wheel := func(members ...string) []byte {
		var b bytes.Buffer
		z := zip.NewWriter(&b)
		for _, m := range members {
			w, _ := z.Create(m)
			w.Write([]byte(`{"$id":"https://kubernetes.io/x","properties":{"spec":{"$ref":"/api/_definitions.json#/d"}}}`))
		}
		z.Close()
		return b.Bytes()
	}
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	good := wheel(prefix+"v1.37.0-local-strict/job-batch-v1.json", "kubernetes_validate/__init__.py")
	run := func(files map[string][]byte, sha string) (string, string, error) {
		t.Helper()
		base := t.TempDir()
		dl := filepath.Join(base, "dl")
		os.MkdirAll(dl, 0o755)
		for n, b := range files {
			os.WriteFile(filepath.Join(dl, n), b, 0o644)
		}
		out := filepath.Join(base, "sub", "out")
		msg, err := exec.Command(py, script, dl, name, sha, out).CombinedOutput()
		return base, string(msg), err
	}
	refused := func(what string, files map[string][]byte, sha, want string) string {
		t.Helper()
		base, msg, err := run(files, sha)
		if err == nil || !strings.Contains(msg, want) {
			t.Fatalf("%s: err %v, output %q: want a refusal saying %q", what, err, msg, want)
		}
		if _, err := os.Stat(filepath.Join(base, "sub", "out")); !os.IsNotExist(err) {
			t.Fatalf("%s: the output dir was written (%v)", what, err)
		}
		return base
	}

	base, msg, err := run(map[string][]byte{name: good}, sum(good))
	if err != nil {
		t.Fatalf("the pinned wheel: %v\n%s", err, msg)
	}
	got, err := os.ReadFile(filepath.Join(base, "sub", "out", "v1.37.0-local-strict", "job-batch-v1.json"))
	if err != nil || strings.Contains(string(got), "$id") || !strings.Contains(string(got), `"_definitions.json#/d"`) {
		t.Fatalf("unpacked schema %q (%v): want no $id and a ref to _definitions.json beside it", got, err)
	}

	refused("other bytes", map[string][]byte{name: good}, strings.Repeat("0", 64), "has sha256")
	refused("another name", map[string][]byte{"kubernetes_validate-1.37.0-py2.py3-none-any.whl": good}, sum(good), "want exactly")
	refused("two wheels", map[string][]byte{name: good, "kubernetes_validate-9.9.9-py3-none-any.whl": good}, sum(good), "want exactly")
	for _, m := range []string{prefix + "../../escaped.json", prefix + "/tmp/tributary-kubeconform-escaped.json", prefix + "v1/../../../escaped.json"} {
		bad := wheel(prefix+"v1.37.0-local-strict/a.json", m)
		base := refused(m, map[string][]byte{name: bad}, sum(bad), "leaves the output directory")
		for _, p := range []string{filepath.Join(base, "escaped.json"), "/tmp/tributary-kubeconform-escaped.json"} {
			if _, err := os.Stat(p); err == nil {
				t.Fatalf("%s: %s was written", m, p)
			}
		}
	}
}
