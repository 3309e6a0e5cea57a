package testbroker

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// HowToGetPython says how to get the Python the tests need.
const HowToGetPython = "run scripts/python-deps.sh (a venv with pyarrow and confluent-kafka from PyPI in " +
	"${TRIBUTARY_CACHE:-~/.cache/tributary}/venv) or set TRIBUTARY_PYTHON to a python that has them"

// Python finds a python that can import module: $TRIBUTARY_PYTHON, else
// the venv of scripts/python-deps.sh. Without one it skips the test on a
// developer's machine and fails it under CI.
func Python(t testing.TB, module string) string {
	t.Helper()
	py := os.Getenv("TRIBUTARY_PYTHON")
	if py == "" {
		cache := os.Getenv("TRIBUTARY_CACHE")
		if cache == "" {
			home, _ := os.UserHomeDir()
			cache = filepath.Join(home, ".cache", "tributary")
		}
		py = filepath.Join(cache, "venv", "bin", "python")
	}
	_, err := os.Stat(py)
	Require(t, err == nil, "the Python venv", fmt.Sprintf("%s not found; %s", py, HowToGetPython))
	out, err := exec.Command(py, "-c", fmt.Sprintf("import %s; print(%s.__version__)", module, module)).CombinedOutput()
	Require(t, err == nil, module, fmt.Sprintf("%s cannot import %s: %v: %s; %s", py, module, err, out, HowToGetPython))
	t.Logf("%s: %s %s", py, module, bytes.TrimSpace(out))
	return py
}
