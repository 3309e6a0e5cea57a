package loader_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// Issue 24, a renamed field: a run with the activity schema, then a run
// whose schema renames messageId to message_id (aliases: [messageId];
// from: messageId, the producers unchanged). The table renames the column,
// keeping its field id, and Apache Iceberg's Java reader, resolving
// columns by the files' field ids alone (no name mapping), reads
// message_id from the first run's files and the second's: every offset
// once, each with its event's messageId.
func TestLoadIcebergRename(t *testing.T) {
	t.Parallel()
	b := testbroker.Start(t)
	testbroker.CreateTopic(t, b.Addr(), "views", 1)
	dir := t.TempDir()
	target := "file://" + dir
	var want produced
	const n = 200
	load := func(schema string) {
		t.Helper()
		mustLoad(t, "--target", target, "-b", b.Addr(), "--topics", "views", "--schema", schema,
			"--time-field", "timestamp", "--table-format", "iceberg")
	}
	produce(t, b.Addr(), "views", 0, n, 0, &want)
	load(activitySchema)

	text, err := os.ReadFile(activitySchema)
	if err != nil {
		t.Fatal(err)
	}
	const old = "  - name: messageId\n    type: string\n"
	if !strings.Contains(string(text), old) {
		t.Fatalf("%s has no %q", activitySchema, old)
	}
	renamed := strings.Replace(string(text), old, "  - name: message_id\n    type: string\n    from: messageId\n    aliases: [messageId]\n", 1)
	schema := filepath.Join(t.TempDir(), "renamed.yaml")
	if err := os.WriteFile(schema, []byte(renamed), 0o644); err != nil {
		t.Fatal(err)
	}
	produce(t, b.Addr(), "views", n, n, 0, &want)
	load(schema)

	// The old schema again (an older producer, a backfill): its messageId
	// would be a new column under the renamed one's former name, which
	// the name mapping cannot hold. Refused at plan time, naming both.
	produce(t, b.Addr(), "views", 2*n, 10, 0, &produced{})
	out, err := tributary(t, nil, "load", "run", "--target", target, "-b", b.Addr(), "--topics", "views", "--schema", activitySchema,
		"--time-field", "timestamp", "--table-format", "iceberg")
	if err == nil || !strings.Contains(out, "column messageId was renamed to message_id (field id 5)") {
		t.Fatalf("a run with the old schema after the rename: %v\n%s\nwant it refused naming messageId and message_id", err, out)
	}

	jout := testbroker.ReadIcebergJava(t, "file://"+filepath.Join(dir, "views"), "0",
		"READ_ICEBERG_BY_ID=1", "READ_ICEBERG_COLUMNS=message_id,_offset")
	var j struct {
		Schema []struct {
			ID   int    `json:"id"`
			Name string `json:"name"`
		} `json:"schema"`
		Snapshots   []json.RawMessage   `json:"snapshots"`
		Columns     [][]*string         `json:"columns"`
		NameMapping map[string][]string `json:"name_mapping"`
	}
	if err := json.Unmarshal(jout, &j); err != nil {
		t.Fatalf("%v: %s", err, jout)
	}
	ids := map[string]int{}
	for _, f := range j.Schema {
		ids[f.Name] = f.ID
	}
	// messageId was the 5th column of the first schema: id 5.
	if _, ok := ids["messageId"]; ok || ids["message_id"] != 5 {
		t.Fatalf("Java sees the schema %+v: want message_id with messageId's id 5, and no messageId", j.Schema)
	}
	// iceberg-core's NameMappingParser parsed the table's mapping (it
	// refuses a name under two ids): the old files still read by name.
	if m := j.NameMapping["5"]; len(m) != 2 || m[0] != "message_id" || m[1] != "messageId" {
		t.Fatalf("Java parsed the name mapping %v: want id 5 under message_id and messageId", j.NameMapping)
	}
	if len(j.Snapshots) != 2 {
		t.Fatalf("%d snapshots, want 2", len(j.Snapshots))
	}
	seen := map[string]bool{}
	for _, r := range j.Columns {
		if len(r) != 2 || r[0] == nil || r[1] == nil {
			t.Fatalf("Java (by field id) read a row %v: message_id is null (a file written before the rename lost it)", r)
		}
		if _, ok := want.events[*r[0]]; !ok || seen[*r[0]] {
			t.Fatalf("offset %s: message_id %q is not a produced event's messageId, or twice", *r[1], *r[0])
		}
		seen[*r[0]] = true
	}
	if len(seen) != 2*n {
		t.Fatalf("Java read %d events by message_id, want %d", len(seen), 2*n)
	}
}
