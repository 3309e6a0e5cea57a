package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/tributary-io/tributary/internal/testbroker"
	trackerjs "github.com/tributary-io/tributary/tracker/js"
)

// The served tracker.min.js is what scripts/tracker-js.sh makes from
// tracker.js today: neither edited by hand nor left behind by a change of
// the source or of terser's version.
func TestMinifiedUpToDate(t *testing.T) {
	nodeModules(t) // node and terser, or skip
	out := filepath.Join(t.TempDir(), "tracker.min.js")
	cmd := exec.Command("bash", filepath.Join(testbroker.RepoRoot(), "scripts", "tracker-js.sh"), out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/tracker-js.sh: %v\n%s", err, b)
	}
	fresh, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, trackerjs.Script()) {
		t.Errorf("tracker/js/tracker.min.js (%d bytes) differs from a fresh minification of tracker.js (%d bytes): run bash scripts/tracker-js.sh", len(trackerjs.Script()), len(fresh))
	}
}
