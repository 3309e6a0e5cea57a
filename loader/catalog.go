package loader

import (
	"database/sql"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	_ "modernc.org/sqlite" // the SQL catalog's default database (docs/iceberg.md)

	"github.com/tributary-io/tributary/formats/iceberg"
)

// Where a table's current version is kept (--catalog, the job's catalog):
//
//	hadoop (or empty)    metadata/version-hint.text and the rename of
//	                     v<N>.metadata.json in the table's directory
//	sql:<file>[#<ns>]    a row of Iceberg's JDBC catalog table
//	                     (iceberg_tables) in the SQLite database <file>,
//	                     catalog name SQLCatalogName, namespace <ns>
//	                     (DefaultNamespace) for the tables at the target's
//	                     root (one per topic)
//
// Either way the metadata, manifests and data files are in <target>/<topic>.
// Every process that loads or maintains a target must use the same
// database file: a catalog without the table's row refuses to create it
// again over its metadata (iceberg.Catalog.ForeignMetadata).
const (
	CatalogHadoop = "hadoop"
	catalogSQL    = "sql:"
	// SQLCatalogName is the catalog_name of the loader's rows: what an
	// engine's JDBC/SQL catalog must be called to see the tables.
	SQLCatalogName = "tributary"
	// DefaultNamespace is the namespace of the tables of a sql: catalog
	// that names none. Engines cannot name a table in the empty
	// namespace (pyiceberg's SqlCatalog, Trino's schemas).
	DefaultNamespace = "tributary"
)

// sqlCatalog splits a sql: catalog into its database/sql DSN and
// namespace; ok is false for any other catalog.
func sqlCatalog(c string) (dsn, namespace string, ok bool) {
	rest, ok := strings.CutPrefix(c, catalogSQL)
	if !ok {
		return "", "", false
	}
	dsn, namespace, _ = strings.Cut(rest, "#")
	if namespace == "" {
		namespace = DefaultNamespace
	}
	return dsn, namespace, true
}

// ValidCatalog checks a --catalog value.
func ValidCatalog(c string) error {
	_, err := NormalizeCatalog(c)
	return err
}

// NormalizeCatalog checks a --catalog value and makes a sql: catalog's
// relative database path absolute: a plan stores the catalog, and a
// resume from another directory must open the same file. A database in
// memory is refused: it is gone with the process, and the next run would
// find no row for tables it created.
func NormalizeCatalog(c string) (string, error) {
	if c == "" || c == CatalogHadoop {
		return c, nil
	}
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("--catalog %q: %s", c, why)
	}
	dsn, ns, ok := sqlCatalog(c)
	if !ok {
		return bad("want hadoop or sql:<SQLite database file>[#<namespace>]")
	}
	if strings.Contains(c, "#") && (strings.HasSuffix(c, "#") || strings.ContainsAny(ns, "/# ")) {
		return bad("the namespace after # must be a non-empty name without / # or spaces")
	}
	file, query, _ := strings.Cut(dsn, "?")
	prefix := ""
	if f, ok := strings.CutPrefix(file, "file:"); ok {
		prefix, file = "file:", f
	}
	switch {
	case file == "":
		return bad("no database file")
	case file == ":memory:" || strings.HasPrefix(file, ":memory:") || strings.Contains("&"+query, "&mode=memory"):
		return bad("an in-memory database loses the catalog when the process ends; name a database file")
	case strings.HasPrefix(file, "//"):
		return c, nil // file://host/...: as given
	case !filepath.IsAbs(file):
		abs, err := filepath.Abs(file)
		if err != nil {
			return bad(err.Error())
		}
		file = abs
	}
	out := catalogSQL + prefix + file
	if query != "" {
		out += "?" + query
	}
	if i := strings.Index(c, "#"); i >= 0 {
		out += c[i:]
	}
	return out, nil
}

// sqlDBs are the SQL catalog databases opened by any Loader of the
// process, by DSN: a database/sql pool is meant to be shared, and SQLite
// allows one writer at a time.
var sqlDBs struct {
	sync.Mutex
	open map[string]*iceberg.SQLCatalog
}

// OpenCatalog is the catalog of tables in fs that catalog names
// (ValidCatalog): the loader's commits, the lake commands and the
// maintenance jobs all open it here, so that they see the same tables.
func OpenCatalog(fs iceberg.FS, catalog string) (*iceberg.Catalog, error) {
	catalog, err := NormalizeCatalog(catalog)
	if err != nil {
		return nil, err
	}
	dsn, ns, ok := sqlCatalog(catalog)
	if !ok {
		return &iceberg.Catalog{FS: fs}, nil
	}
	sqlDBs.Lock()
	defer sqlDBs.Unlock()
	if s := sqlDBs.open[dsn]; s != nil {
		return &iceberg.Catalog{FS: fs, Pointer: &iceberg.SQLCatalog{DB: s.DB, Name: s.Name, Namespace: ns}}, nil
	}
	full := dsn
	if !strings.Contains(dsn, "_pragma=busy_timeout") {
		// Several processes (a load, a maintenance job, the lake
		// commands) share the file: wait for a writer, do not fail.
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		full += sep + "_pragma=busy_timeout(10000)"
	}
	db, err := sql.Open("sqlite", full)
	if err != nil {
		return nil, fmt.Errorf("--catalog %s: %w", catalog, err)
	}
	s, err := iceberg.OpenSQL(db, SQLCatalogName)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("--catalog %s: %w", catalog, err)
	}
	if sqlDBs.open == nil {
		sqlDBs.open = map[string]*iceberg.SQLCatalog{}
	}
	sqlDBs.open[dsn] = s
	return &iceberg.Catalog{FS: fs, Pointer: &iceberg.SQLCatalog{DB: db, Name: s.Name, Namespace: ns}}, nil
}

func (l *Loader) catalog(catalog string) (*iceberg.Catalog, error) {
	return OpenCatalog(l.FS, catalog)
}

// pointerMetadata is the name a catalog with a Pointer gives its metadata
// files (formats/iceberg, pointer.go).
var pointerMetadata = regexp.MustCompile(`^\d{5,}-[0-9a-f-]+(\.gz)?\.metadata\.json$`)

// checkOtherCatalog refuses a table the plan's catalog does not know but
// whose directory has another catalog's metadata: committing would start a
// second table in the same directory, each hiding the other's snapshots
// (and the run ids exactly-once looks for). The SQL catalog's own check
// (iceberg.Catalog.ForeignMetadata) runs again when a commit creates the
// table, so a resumed plan is refused too.
func (l *Loader) checkOtherCatalog(cat *iceberg.Catalog, catalog, topic string) error {
	if cat.Pointer != nil {
		if err := cat.ForeignMetadata(topic); err != nil {
			return fmt.Errorf("table %s: %w (the plan's catalog is %s)", topic, err, catalog)
		}
		return nil
	}
	ents, err := l.FS.ReadDir(path.Join(topic, "metadata"))
	if err != nil {
		return nil // no metadata: a new table
	}
	for _, e := range ents {
		if name := e.Name(); pointerMetadata.MatchString(name) {
			return fmt.Errorf("table %s at %s/%s has metadata written through a SQL catalog (metadata/%s): load it with that catalog's --catalog sql:<file>", topic, l.FS, topic, name)
		}
	}
	return nil
}
