package iceberg

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/tributary-io/tributary/internal/testbroker"
)

// javaView is what Apache Iceberg's Java library read of a table
// (testdata/java/ReadIceberg.java).
type javaView struct {
	FormatVersion int `json:"format_version"`
	Schema        []struct {
		ID       int    `json:"id"`
		Name     string `json:"name"`
		Type     string `json:"type"`
		Required bool   `json:"required"`
	} `json:"schema"`
	Spec []struct {
		Source    int    `json:"source"`
		Name      string `json:"name"`
		Transform string `json:"transform"`
	} `json:"spec"`
	Snapshots []struct {
		ID        int64             `json:"id"`
		Parent    *int64            `json:"parent"`
		Sequence  int64             `json:"sequence"`
		Operation string            `json:"operation"`
		Summary   map[string]string `json:"summary"`
	} `json:"snapshots"`
	History     []int64    `json:"history"`
	Current     [][2]int64 `json:"current"`
	First       [][2]int64 `json:"first"`
	FilesBefore int        `json:"files_before"`
	Files       int        `json:"files"`
}

// Issue 24, the Java reference: iceberg-core's HadoopTables and
// iceberg-data's generic Parquet reader read a table written as the loader
// writes one (three load runs, two Kafka partitions, two hours, then a
// fourth run with a new nullable column): every offset once, the schema
// with its field ids, hours(_event_time), the snapshot history with the
// runs' summaries, time travel to the first snapshot, and pruning by hour.
func TestJavaReader(t *testing.T) {
	t.Parallel()
	c, root := localCatalog(t)
	const table = "clicks"
	next := [2]int64{}
	for run := range 3 {
		var files []NewFile
		for i := range 2 {
			part := int32(i)
			files = append(files, writeSmall(t, c.FS, table, part, next[part], next[part]+5, int32(baseHour+run%2)))
			next[part] += 5
		}
		summary := map[string]string{"tributary.topic": table, "tributary.run-id": "run-" + strconv.Itoa(run)}
		if _, _, err := c.Append(Append{Dir: table, Schema: smallSchema, TimeColumn: "_event_time", Files: files, Summary: summary}); err != nil {
			t.Fatal(err)
		}
	}
	tb, err := c.Load(table)
	if err != nil {
		t.Fatal(err)
	}
	m := tb.Metadata

	before := strconv.FormatInt(int64(baseHour+1)*3600e6, 10)
	out := testbroker.ReadIcebergJava(t, "file://"+filepath.Join(root, table), before)
	var v javaView
	if err := json.Unmarshal(out, &v); err != nil {
		t.Fatalf("%v: %s", err, out)
	}

	if v.FormatVersion != 2 {
		t.Errorf("format version %d, want 2", v.FormatVersion)
	}
	// The schema, field by field with its id, as the metadata has it.
	cur := m.Schemas[len(m.Schemas)-1]
	if len(v.Schema) != len(cur.Fields) {
		t.Fatalf("Java sees %d columns %+v, the table has %d", len(v.Schema), v.Schema, len(cur.Fields))
	}
	ids := map[string]int{}
	for i, f := range cur.Fields {
		j := v.Schema[i]
		if j.ID != f.ID || j.Name != f.Name || j.Required != f.Required {
			t.Errorf("column %d: Java sees %+v, the table has %+v", i, j, f)
		}
		ids[f.Name] = f.ID
	}
	if typ := v.Schema[len(v.Schema)-1].Type; typ != "timestamptz" {
		t.Errorf("_event_time is %q to Java, want timestamptz", typ)
	}
	if len(v.Spec) != 1 || v.Spec[0].Transform != "hour" || v.Spec[0].Source != ids["_event_time"] {
		t.Errorf("partition spec %+v, want hour(_event_time = field %d)", v.Spec, ids["_event_time"])
	}

	// One snapshot per run, chained, with the runs' summaries.
	if len(v.Snapshots) != 3 || len(v.History) != 3 {
		t.Fatalf("Java sees %d snapshots, %d in the history; want 3", len(v.Snapshots), len(v.History))
	}
	for i, s := range v.Snapshots {
		if s.ID != m.Snapshots[i].ID || s.Operation != "append" || s.Sequence != int64(i+1) {
			t.Errorf("snapshot %d: Java sees %+v, the table has id %d", i, s, m.Snapshots[i].ID)
		}
		if i > 0 && (s.Parent == nil || *s.Parent != v.Snapshots[i-1].ID) {
			t.Errorf("snapshot %d: parent %v, want %d", i, s.Parent, v.Snapshots[i-1].ID)
		}
		if s.Summary["tributary.run-id"] != "run-"+strconv.Itoa(i) || s.Summary["added-records"] != "10" {
			t.Errorf("snapshot %d summary %v", i, s.Summary)
		}
		if v.History[i] != s.ID {
			t.Errorf("history %v, snapshots in another order", v.History)
		}
	}

	// Every offset once in the current snapshot; the first run's in the first.
	wantOffsets := func(what string, got [][2]int64, end int64) {
		t.Helper()
		seen := map[[2]int64]bool{}
		for _, po := range got {
			if seen[po] {
				t.Errorf("%s: partition %d offset %d twice", what, po[0], po[1])
			}
			seen[po] = true
		}
		for p := range int64(2) {
			for o := range end {
				if !seen[[2]int64{p, o}] {
					t.Errorf("%s: partition %d offset %d missing", what, p, o)
				}
			}
		}
		if len(seen) != int(2*end) {
			t.Errorf("%s: %d offsets, want %d", what, len(seen), 2*end)
		}
	}
	wantOffsets("current snapshot", v.Current, 15)
	wantOffsets("time travel to the first snapshot", v.First, 5)

	// Runs 0 and 2 wrote hour baseHour: 4 of the 6 files.
	if v.Files != 6 || v.FilesBefore != 4 {
		t.Errorf("Java plans %d files, %d for _event_time before hour %d; want 6 and 4", v.Files, v.FilesBefore, baseHour+1)
	}
}
