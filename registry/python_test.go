package registry_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestPythonAvro: Confluent's own serializers (confluent-kafka's
// SchemaRegistryClient, AvroSerializer, AvroDeserializer) work against
// the registry unchanged, across two versions of one subject.
func TestPythonAvro(t *testing.T) {
	t.Parallel()
	py := testbroker.Python(t, "fastavro")
	b, url := startWithRegistry(t)
	script := filepath.Join(testbroker.RepoRoot(), "registry", "python", "avro_roundtrip.py")
	cmd := exec.Command(py, script, "--bootstrap", b.Addr(), "--registry", url, "--topic", "pageviews", "--count", "200")
	outb, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("%v\n%s\n%s", err, outb, stderr)
	}
	var got struct {
		IDs          []int          `json:"ids"`
		Incompatible map[string]int `json:"incompatible"`
		Consumed     int            `json:"consumed"`
		WithReferrer int            `json:"with_referrer"`
		Last         map[string]any `json:"last"`
	}
	if err := json.Unmarshal(outb, &got); err != nil {
		t.Fatalf("%v: %s", err, outb)
	}
	t.Logf("%s", outb)
	if got.Consumed != 200 || got.WithReferrer != 100 || got.Last["referrer"] != "r99" {
		t.Fatalf("consumed %d records, %d with the v2 field, last %v; want 200, 100, referrer r99", got.Consumed, got.WithReferrer, got.Last)
	}
	if got.Incompatible["status"] != 409 || got.Incompatible["code"] != 409 {
		t.Fatalf("incompatible registration: %v, want 409", got.Incompatible)
	}
	// The ids in the frames are the registry's ids of v1 and v2.
	cl, _ := sr.NewClient(sr.URLs(url))
	var want []int
	for _, v := range []int{1, 2} {
		s, err := cl.SchemaByVersion(t.Context(), "pageviews-value", v)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, s.ID)
	}
	if fmt.Sprint(got.IDs) != fmt.Sprint(want) {
		t.Fatalf("ids in the frames %v, registry's %v", got.IDs, want)
	}
}
