package iceberg

import (
	"database/sql"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/tributary-io/tributary/internal/fsys"
)

// openSQLite opens the catalog database as one process of its own would:
// a connection pool of its own, waiting out the other's write locks.
func openSQLite(t *testing.T, file string) *SQLCatalog {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+file+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := OpenSQL(db, "lake")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Issue 24, the SQL catalog: two committers with their own connections to
// one SQLite catalog race for 16 appends to a new table (the first two
// race to create it): each append lands once, in one line of snapshots;
// the row's metadata_location is the newest version and
// previous_metadata_location the one before; no loser's metadata file is
// left; a swap from a stale version is refused.
func TestSQLCatalogRace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fs, err := fsys.Open(filepath.Join(dir, "warehouse"), fsys.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	db := filepath.Join(dir, "catalog.db")
	cats := []*Catalog{{FS: fs, Pointer: openSQLite(t, db)}, {FS: fs, Pointer: openSQLite(t, db)}}
	const each = 8
	var wg sync.WaitGroup
	errs := make(chan error, 2*each)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				run := strconv.Itoa(w) + "-" + strconv.Itoa(i)
				_, _, err := cats[w].Append(Append{Dir: "db/clicks", Schema: testSchema(), TimeColumn: "_event_time",
					Files:   []NewFile{{Path: "db/clicks/data/" + run + ".parquet", Records: 10, Bytes: 100, Hour: 490000}},
					Summary: map[string]string{"tributary.run-id": run}})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c := cats[0]
	tbl, err := c.Load("db/clicks")
	if err != nil {
		t.Fatal(err)
	}
	m := tbl.Metadata
	if len(m.Snapshots) != 2*each || tbl.Version != 2*each+1 {
		t.Fatalf("%d snapshots, version %d; want %d, %d", len(m.Snapshots), tbl.Version, 2*each, 2*each+1)
	}
	runs := map[string]bool{}
	for i, s := range m.Snapshots {
		runs[s.Summary["tributary.run-id"]] = true
		if i > 0 && (s.ParentID == nil || *s.ParentID != m.Snapshots[i-1].ID) {
			t.Fatalf("snapshot %d's parent is not snapshot %d", i, i-1)
		}
	}
	if len(runs) != 2*each || m.Current().Summary["total-records"] != strconv.Itoa(20*each) {
		t.Fatalf("%d distinct runs, total-records %s", len(runs), m.Current().Summary["total-records"])
	}

	// The row, as another engine's JDBC catalog reads it.
	var cur, prev string
	s := c.Pointer.(*SQLCatalog)
	if err := s.DB.QueryRow(`SELECT metadata_location, previous_metadata_location FROM iceberg_tables
WHERE catalog_name = 'lake' AND table_namespace = 'db' AND table_name = 'clicks'`).Scan(&cur, &prev); err != nil {
		t.Fatal(err)
	}
	if cur != c.Location(tbl.File) || !strings.HasSuffix(cur, ".metadata.json") || !strings.Contains(cur, "/db/clicks/metadata/00017-") {
		t.Errorf("metadata_location %s, the table's file %s", cur, tbl.File)
	}
	if len(m.MetadataLog) == 0 || prev != m.MetadataLog[len(m.MetadataLog)-1].MetadataFile {
		t.Errorf("previous_metadata_location %s, the metadata log ends with %+v", prev, m.MetadataLog[len(m.MetadataLog)-1:])
	}
	// Every version that was committed is in the log, and nothing else is
	// in metadata/: the losers removed their files.
	meta, err := fs.ReadDir("db/clicks/metadata")
	if err != nil {
		t.Fatal(err)
	}
	versions := 0
	for _, e := range meta {
		if strings.HasSuffix(e.Name(), ".metadata.json") {
			versions++
		}
	}
	if versions != 2*each+1 {
		t.Errorf("%d metadata files for %d versions: a losing committer left its file", versions, 2*each+1)
	}
	if err := s.Swap("db/clicks", prev, cur+".stale"); !errors.Is(err, ErrConflict) {
		t.Errorf("a swap from a stale version: %v, want ErrConflict", err)
	}
	if ts, err := c.Tables("db"); err != nil || len(ts) != 1 || ts[0] != "db/clicks" {
		t.Errorf("tables under db: %v, %v", ts, err)
	}
	if _, err := c.Load("db/other"); !errors.Is(err, ErrNoTable) {
		t.Errorf("an unknown table: %v, want ErrNoTable", err)
	}
}

// Two warehouses (a jobs file's two targets) share one catalog database:
// in one namespace, the second's table of the same name is the first's
// row, and is refused naming both places instead of read at a garbled
// path; in namespaces of their own both are tables of their own.
func TestSQLCatalogTwoTargets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "catalog.db")
	var cats []*Catalog
	for _, w := range []string{"a", "b"} {
		fs, err := fsys.Open(filepath.Join(dir, w), fsys.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer fs.Close()
		s := openSQLite(t, db)
		s.Namespace = "lake"
		cats = append(cats, &Catalog{FS: fs, Pointer: s})
	}
	add := func(c *Catalog) error {
		_, _, err := c.Append(Append{Dir: "clicks", Schema: testSchema(), TimeColumn: "_event_time",
			Files: []NewFile{{Path: "clicks/data/x.parquet", Records: 10, Bytes: 100, Hour: 490000}}})
		return err
	}
	if err := add(cats[0]); err != nil {
		t.Fatal(err)
	}
	_, err := cats[1].Load("clicks")
	if err == nil || !strings.Contains(err.Error(), "outside the table's metadata directory") || !strings.Contains(err.Error(), filepath.Join(dir, "a")) {
		t.Fatalf("the other target's row: %v; want it refused naming both", err)
	}
	if err := add(cats[1]); err == nil {
		t.Fatal("an append to the other target's row was not refused")
	}
	cats[1].Pointer.(*SQLCatalog).Namespace = "lake_b"
	if err := add(cats[1]); err != nil {
		t.Fatal(err)
	}
	var ns []string
	rows, err := cats[0].Pointer.(*SQLCatalog).DB.Query(`SELECT table_namespace FROM iceberg_tables WHERE table_name = 'clicks' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		rows.Scan(&s)
		ns = append(ns, s)
	}
	rows.Close()
	if strings.Join(ns, ",") != "lake,lake_b" {
		t.Fatalf("namespaces %v", ns)
	}
}
