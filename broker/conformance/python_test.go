package conformance

// librdkafka, through Python confluent-kafka (PyPI), against the real broker
// binary: python/conformance.py runs in the venv that scripts/python-deps.sh
// makes.

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// pythonSetup finds the python with confluent-kafka (testbroker.Python).
func pythonSetup(t *testing.T) string { return testbroker.Python(t, "confluent_kafka") }

// TestLibrdkafkaClient runs python/conformance.py (AdminClient, an
// idempotent producer, a consumer by assign(), and a producer per codec
// with librdkafka's defaults) against the broker.
func TestLibrdkafkaClient(t *testing.T) {
	py := pythonSetup(t)
	b := extBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	script := filepath.Join(testbroker.RepoRoot(), "broker", "conformance", "python", "conformance.py")
	cmd := exec.CommandContext(ctx, py, script, b.Addr(), "rdkafka", "10000")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	t.Logf("python conformance.py: %v", time.Since(start).Round(time.Millisecond))
	if ctx.Err() != nil {
		err = fmt.Errorf("killed after 120s: %w", err)
	}
	if err != nil || !strings.Contains(stdout.String(), "CONFORMANCE OK") {
		t.Fatalf("python conformance.py failed: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if testing.Verbose() {
		t.Logf("stdout:\n%s", stdout.String())
	}
	if s := strings.TrimSpace(stderr.String()); s != "" {
		t.Errorf("python conformance.py passed but wrote to stderr:\n%s", s)
	}
	for _, c := range extCodecs {
		extCheckStoredCodec(t, b, "rdkafka-"+c.name, c.id, "librdkafka")
	}
}
