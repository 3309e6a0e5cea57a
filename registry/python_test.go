package registry_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// TestConfluentClients: Confluent's own serializers in Python
// (confluent-kafka) work against the registry unchanged; one broker
// serves both subtests (their topics and subjects differ). The Node
// client runs in TestSecuredRegistry, with basic auth.
func TestConfluentClients(t *testing.T) {
	t.Parallel()
	b, url := startWithRegistry(t)
	t.Run("python avro", func(t *testing.T) { t.Parallel(); pythonAvro(t, b, url) })
	t.Run("python protobuf and json", func(t *testing.T) { t.Parallel(); pythonProtobufJSON(t, b, url) })
}

// pythonAvro: SchemaRegistryClient, AvroSerializer and AvroDeserializer
// across two versions of one subject.
func pythonAvro(t *testing.T, b *testbroker.Broker, url string) {
	py := testbroker.Python(t, "fastavro")
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

// pythonProtobufJSON: ProtobufSerializer and JSONSerializer, and their
// deserializers: a Protobuf message with a reference and a well-known
// import, framed with a message index; JSON Schema over two versions; an
// incompatible version of each refused with 409.
func pythonProtobufJSON(t *testing.T, b *testbroker.Broker, url string) {
	py := testbroker.Python(t, "google.protobuf")
	script := filepath.Join(testbroker.RepoRoot(), "registry", "python", "pb_json_roundtrip.py")
	cmd := exec.Command(py, script, "--bootstrap", b.Addr(), "--registry", url, "--count", "50")
	outb, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("%v\n%s\n%s", err, outb, stderr)
	}
	t.Logf("%s", outb)
	var got struct {
		PBConsumed     int            `json:"pb_consumed"`
		PBLast         map[string]any `json:"pb_last"`
		PBFrame        []int          `json:"pb_frame"`
		PBIncompatible map[string]int `json:"pb_incompatible"`
		PBSubjects     []string       `json:"pb_subjects"`
		JSONConsumed   int            `json:"json_consumed"`
		JSONWithPlan   int            `json:"json_with_plan"`
		JSONIncompat   map[string]int `json:"json_incompatible"`
	}
	if err := json.Unmarshal(outb, &got); err != nil {
		t.Fatalf("%v: %s", err, outb)
	}
	if got.PBConsumed != 50 || fmt.Sprint(got.PBLast) != "map[cents:4900 id:o49 seconds:1.700000049e+09]" {
		t.Fatalf("protobuf: consumed %d, last %v", got.PBConsumed, got.PBLast)
	}
	// Magic 0, the id, then the message index [1]: count 1, index 1, both
	// zigzag varints (2, 2).
	if len(got.PBFrame) != 7 || got.PBFrame[0] != 0 || got.PBFrame[5] != 2 || got.PBFrame[6] != 2 {
		t.Fatalf("protobuf frame %v", got.PBFrame)
	}
	if !slices.Contains(got.PBSubjects, "orders-value") || !slices.Contains(got.PBSubjects, "shop/money.proto") {
		t.Fatalf("subjects %v, want the reference's subject too", got.PBSubjects)
	}
	if got.PBIncompatible["code"] != 409 || got.JSONIncompat["code"] != 409 {
		t.Fatalf("incompatible registrations: protobuf %v, json %v, want 409", got.PBIncompatible, got.JSONIncompat)
	}
	if got.JSONConsumed != 50 || got.JSONWithPlan != 25 {
		t.Fatalf("json: consumed %d, %d with plan; want 50, 25", got.JSONConsumed, got.JSONWithPlan)
	}
}
