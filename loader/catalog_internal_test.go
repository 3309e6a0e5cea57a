package loader

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tributary-io/tributary/formats/iceberg"
	"github.com/tributary-io/tributary/internal/fsys"
)

// A table kept in SQL catalog A; a plan naming SQL catalog B (another
// scheduler host's own file, a restored database). Both the plan-time
// check and a resumed plan's commit refuse, and the table's directory
// keeps one line of metadata.
func TestSQLCatalogWithoutTheRow(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fs, err := fsys.Open(filepath.Join(dir, "lake"), fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	schema := "name: t\nversion: 1\nfields:\n  - name: id\n    type: string\n"
	p := &Plan{Run: "r1", Job: "j", Kind: "load", Settings: Settings{Format: FormatJSON, TableFormat: TableIceberg, Catalog: "sql:" + filepath.Join(dir, "a.db")},
		Schemas: map[string]string{"t": schema},
		Units:   []Unit{{Topic: "t", Partition: 0, From: 0, To: 10}},
		Next:    map[string]map[int32]int64{"t": {0: 10}}}
	l := &Loader{FS: fs}
	hour := int64(490000) * 3600_000
	if err := l.commitTables(p, &Manifest{Files: []FileEntry{{Path: "t/a.parquet", Topic: "t", First: 0, Last: 9, Rows: 10, Bytes: 1, Hour: hour}}}); err != nil {
		t.Fatal(err)
	}
	before, _ := fs.ReadDir("t/metadata")

	q := *p
	q.Run, q.Catalog = "r2", "sql:"+filepath.Join(dir, "b.db")
	q.Units = []Unit{{Topic: "t", Partition: 0, From: 10, To: 20}}
	q.Next = map[string]map[int32]int64{"t": {0: 20}}
	err = l.checkTables(&q)
	if err == nil || !strings.Contains(err.Error(), "another table's metadata") {
		t.Fatalf("planning with a catalog without the table's row: %v; want it refused", err)
	}
	t.Log(err)
	err = l.commitTables(&q, &Manifest{Files: []FileEntry{{Path: "t/b.parquet", Topic: "t", First: 10, Last: 19, Rows: 10, Bytes: 1, Hour: hour}}})
	if err == nil || !strings.Contains(err.Error(), "another table's metadata") {
		t.Fatalf("a resumed plan's commit with a catalog without the table's row: %v; want it refused", err)
	}
	after, _ := fs.ReadDir("t/metadata")
	if len(after) != len(before) {
		t.Fatalf("metadata/ had %d files, now %d", len(before), len(after))
	}

	// A Hadoop table's directory is refused the same way.
	h := *p
	h.Catalog = ""
	h.Schemas = map[string]string{"h": schema}
	h.Units = []Unit{{Topic: "h", Partition: 0, From: 0, To: 10}}
	h.Next = map[string]map[int32]int64{"h": {0: 10}}
	if err := l.commitTables(&h, &Manifest{Files: []FileEntry{{Path: "h/a.parquet", Topic: "h", First: 0, Last: 9, Rows: 10, Bytes: 1, Hour: hour}}}); err != nil {
		t.Fatal(err)
	}
	h.Catalog, h.Run = q.Catalog, "r3"
	if err := l.checkTables(&h); err == nil || !strings.Contains(err.Error(), "version-hint.text") {
		t.Fatalf("a Hadoop table through a SQL catalog: %v; want it refused naming version-hint.text", err)
	}
}

// A relative database path is made absolute before a plan stores it (a
// resume from another directory opens the same file); a database in
// memory is refused; the namespace after # is kept.
func TestNormalizeCatalog(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"":                           "",
		"hadoop":                     "hadoop",
		"sql:/x/c.db":                "sql:/x/c.db",
		"sql:c.db":                   "sql:" + filepath.Join(wd, "c.db"),
		"sql:file:c.db?_pragma=a(1)": "sql:file:" + filepath.Join(wd, "c.db") + "?_pragma=a(1)",
		"sql:c.db#lake":              "sql:" + filepath.Join(wd, "c.db") + "#lake",
	} {
		if got, err := NormalizeCatalog(in); got != want || err != nil {
			t.Errorf("%q: %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"sql:", "sql::memory:", "sql:file::memory:?cache=shared", "sql:file:x?mode=memory", "sql:c.db#", "sql:c.db#a b", "mysql:x"} {
		if got, err := NormalizeCatalog(in); err == nil {
			t.Errorf("%q: %q; want it refused", in, got)
		}
	}
	s := &Settings{TableFormat: TableIceberg, Format: FormatJSON, Catalog: "sql:c.db"}
	if err := s.validateTable(); err != nil || s.Catalog != "sql:"+filepath.Join(wd, "c.db") {
		t.Fatalf("validateTable: %q, %v", s.Catalog, err)
	}
	fs, err := fsys.Open(t.TempDir(), fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	db := filepath.Join(t.TempDir(), "c.db")
	for cat, ns := range map[string]string{"sql:" + db: DefaultNamespace, "sql:" + db + "#lake": "lake"} {
		c, err := OpenCatalog(fs, cat)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Pointer.(*iceberg.SQLCatalog).Namespace; got != ns {
			t.Errorf("%s: namespace %q, want %q", cat, got, ns)
		}
	}
}

// --partition-by names a column the loader adds: refused with the reason.
func TestPartitionByMetadataColumns(t *testing.T) {
	for col, why := range map[string]string{"_offset": "file of one row", "_partition": "one Kafka partition", "_event_time": "by its hour already"} {
		s := &Settings{TableFormat: TableIceberg, Format: FormatJSON, PartitionBy: []string{"type", col}}
		if err := s.validateTable(); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("--partition-by type,%s: %v; want it refused (%s)", col, err, why)
		}
	}
	s := &Settings{TableFormat: TableIceberg, Format: FormatJSON, PartitionBy: []string{"type"}}
	if err := s.validateTable(); err != nil {
		t.Fatal(err)
	}
}

// A plan with a catalog or partition columns is written as version 2, so
// that an older loader refuses it instead of ignoring them; other plans
// stay version 1, and a version-1 plan still loads.
func TestPlanVersionForCatalog(t *testing.T) {
	for _, c := range []struct {
		s    Settings
		want int
	}{
		{Settings{TableFormat: TableIceberg}, 1},
		{Settings{TableFormat: TableIceberg, Catalog: "sql:/x.db"}, 2},
		{Settings{TableFormat: TableIceberg, PartitionBy: []string{"type"}}, 2},
	} {
		p := &Plan{Version: 1, Run: "r", Settings: c.s, Units: []Unit{{Topic: "t", From: 0, To: 1}}}
		b, err := p.marshal()
		if err != nil {
			t.Fatal(err)
		}
		q, err := parsePlan(b, "p")
		if err != nil || q.Version != c.want {
			t.Fatalf("%+v: version %v, %v; want %d", c.s, q, err, c.want)
		}
		// What a version-1 loader says of it.
		if c.want > 1 && !strings.Contains(strings.ReplaceAll(string(b), " ", ""), `"version":2`) {
			t.Fatalf("written as %s", b)
		}
	}
	if _, err := parsePlan([]byte(`{"version":3,"run":"r","units":[]}`), "p"); err == nil || !strings.Contains(err.Error(), "upgrade tributary") {
		t.Fatalf("a version-3 plan: %v", err)
	}
}

// The table was created with other identity columns between the plan and
// its commit (another job on the topic): the commit refuses before it
// moves any file, so the run is not stranded half in place.
func TestCommitChecksTablesBeforeMoving(t *testing.T) {
	t.Parallel()
	fs, err := fsys.Open(t.TempDir(), fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	l := &Loader{FS: fs}
	p := &Plan{Run: "r1", Job: "j", Kind: "load", Settings: Settings{Format: FormatJSON, TableFormat: TableIceberg, PartitionBy: []string{"b"}},
		Schemas: map[string]string{"t": "name: t\nversion: 1\nfields:\n  - name: a\n    type: string\n  - name: b\n    type: string\n"},
		Units:   []Unit{{Topic: "t", Partition: 0, From: 0, To: 10}},
		Next:    map[string]map[int32]int64{"t": {0: 10}}}
	if err := l.checkTables(p); err != nil {
		t.Fatal(err)
	}
	staged := unitDir(p.Run, 0) + "/att/x.parquet"
	final := "t/dt=2026-12-01/hr=00/t+0+0+9.parquet"
	w, err := fs.Create(staged)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	res := UnitResult{Unit: 0, Attempt: "att", Records: 10, Rows: 10, Files: []FileEntry{{Path: final, Staged: staged, Topic: "t", First: 0, Last: 9, Rows: 10, Bytes: 1,
		Hour: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixMilli(), Identity: IdentityValues{"b": "x"}}}}
	b, _ := json.Marshal(res)
	if err := fs.WriteFileAtomic(unitDone(p.Run, 0, "att"), b); err != nil {
		t.Fatal(err)
	}
	// Meanwhile: the table, partitioned by a.
	schema, err := fileSchema(p, "t")
	if err != nil {
		t.Fatal(err)
	}
	s, last, _, err := iceberg.Evolve(schema, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&iceberg.Catalog{FS: fs}).Create("t", s, last, eventTimeColumn, nil, "a"); err != nil {
		t.Fatal(err)
	}
	_, err = l.Commit(context.Background(), p)
	if err == nil || !strings.Contains(err.Error(), "moved none of its files") {
		t.Fatalf("commit on a table of other columns: %v", err)
	}
	t.Log(err)
	if _, err := fs.Stat(final); err == nil {
		t.Fatal("the file was moved in place before the commit was refused")
	}
	if _, err := fs.Stat(staged); err != nil {
		t.Fatalf("the staged file: %v", err)
	}
}
