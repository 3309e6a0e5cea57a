package registry_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/testbroker"
)

const howToGetNode = "install Node.js 20+ with npm, then run scripts/node-deps.sh " +
	"(@confluentinc/schemaregistry from npm into ~/.cache/tributary), or set TRIBUTARY_NODE_MODULES to its node_modules"

// nodeModules returns node and the node_modules of scripts/node-deps.sh.
func nodeModules(t *testing.T) (node, modules string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if p := os.Getenv("TRIBUTARY_NODE"); p != "" {
		node, err = exec.LookPath(p)
	}
	testbroker.Require(t, err == nil, "node", howToGetNode)
	if modules = os.Getenv("TRIBUTARY_NODE_MODULES"); modules == "" {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command("bash", filepath.Join(testbroker.RepoRoot(), "scripts", "node-deps.sh"))
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		testbroker.Require(t, err == nil, "the Node packages of scripts/node-deps.sh", fmt.Sprintf("%s (%v: %s)", howToGetNode, err, stderr.String()))
		lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
		modules = strings.TrimSpace(lines[len(lines)-1])
	}
	_, err = os.Stat(filepath.Join(modules, "@confluentinc", "schemaregistry"))
	testbroker.Require(t, err == nil, "@confluentinc/schemaregistry in "+modules, howToGetNode)
	return node, modules
}

// nodeClient runs registry/node/sr_roundtrip.js (Confluent's Node client:
// register, Avro and JSON Schema serializers and deserializers over two
// versions, lookups, compatibility, deletes, GET /schemas) and checks
// what it saw. userinfo, when set, is sent as basic auth.
func nodeClient(t *testing.T, url, userinfo string) {
	node, modules := nodeModules(t)
	args := []string{filepath.Join(testbroker.RepoRoot(), "registry", "node", "sr_roundtrip.js"), url}
	if userinfo != "" {
		args = append(args, userinfo)
	}
	cmd := exec.Command(node, args...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	outb, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, outb, stderr.String())
	}
	t.Logf("%s", outb)
	type failure struct{ Status, Code int }
	var got struct {
		Avro struct {
			IDs, Frames, Versions []int
			Read                  []map[string]any
			Lookup, Latest        int
			Compatible            bool
			Incompatible          failure
		}
		JSON struct {
			IDs, Frames            []int
			Read                   []map[string]any
			InvalidRefusedByClient bool
			Level                  string
			Incompatible           failure
			Deleted                int
			VersionsAfterDelete    []int
		}
		Schemas []struct {
			Subject, Type string
			Version, ID   int
		}
		Subjects []string
		Missing  failure
	}
	if err := json.Unmarshal(outb, &got); err != nil {
		t.Fatalf("%v: %s", err, outb)
	}
	a := got.Avro
	if fmt.Sprint(a.Frames) != fmt.Sprint(a.IDs) || a.IDs[0] == a.IDs[1] || a.Lookup != a.IDs[0] {
		t.Errorf("avro: ids %v, ids in the frames %v, lookup of v1 %d", a.IDs, a.Frames, a.Lookup)
	}
	if fmt.Sprint(a.Read) != "[map[n:1 page:/a ref:absent] map[n:2 page:/b ref:r]]" {
		t.Errorf("avro read back %v", a.Read)
	}
	if fmt.Sprint(a.Versions) != "[1 2]" || a.Latest != 2 || a.Compatible || a.Incompatible != (failure{409, 409}) {
		t.Errorf("avro: versions %v latest %d, compatible %v, incompatible register %v", a.Versions, a.Latest, a.Compatible, a.Incompatible)
	}
	j := got.JSON
	if fmt.Sprint(j.Frames) != fmt.Sprint(j.IDs) || fmt.Sprint(j.Read) != "[map[cents:100 id:o1] map[cents:5 id:o2 note:gift]]" || !j.InvalidRefusedByClient {
		t.Errorf("json: ids %v frames %v read %v, invalid refused by the client %v", j.IDs, j.Frames, j.Read, j.InvalidRefusedByClient)
	}
	if j.Level != "FULL" || j.Incompatible != (failure{409, 409}) || j.Deleted != 2 || fmt.Sprint(j.VersionsAfterDelete) != "[1]" {
		t.Errorf("json: level %q, incompatible %v, deleted %d, versions left %v", j.Level, j.Incompatible, j.Deleted, j.VersionsAfterDelete)
	}
	seen := map[string]int{}
	for _, s := range got.Schemas {
		seen[fmt.Sprintf("%s/%d/%s", s.Subject, s.Version, s.Type)] = s.ID
	}
	for k, id := range map[string]int{"node-clicks-value/1/AVRO": a.IDs[0], "node-clicks-value/2/AVRO": a.IDs[1], "node-orders-value/1/JSON": j.IDs[0]} {
		if seen[k] != id {
			t.Errorf("GET /schemas: %s has id %d, want %d (%v)", k, seen[k], id, got.Schemas)
		}
	}
	if _, ok := seen["node-orders-value/2/JSON"]; ok {
		t.Errorf("GET /schemas lists the soft-deleted version: %v", got.Schemas)
	}
	if !slices.Contains(got.Subjects, "node-clicks-value") || got.Missing != (failure{404, 40401}) {
		t.Errorf("subjects %v; latest of a subject nobody registered: %v, want 404/40401", got.Subjects, got.Missing)
	}
}
