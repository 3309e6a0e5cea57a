package loader

import (
	"database/sql"
	"fmt"
	"path"
	"regexp"
	"strings"
	"sync"

	_ "modernc.org/sqlite" // the SQL catalog's default database (docs/iceberg.md)

	"github.com/tributary-io/tributary/formats/iceberg"
)

// Where a table's current version is kept (--catalog, the job's catalog):
//
//	hadoop (or empty)  metadata/version-hint.text and the rename of
//	                   v<N>.metadata.json in the table's directory
//	sql:<dsn>          a row of Iceberg's JDBC catalog table
//	                   (iceberg_tables) in the SQLite database <dsn>,
//	                   catalog name SQLCatalogName, namespace "" for the
//	                   tables at the target's root (one per topic)
//
// Either way the metadata, manifests and data files are in <target>/<topic>.
const (
	CatalogHadoop = "hadoop"
	catalogSQL    = "sql:"
	// SQLCatalogName is the catalog_name of the loader's rows: what an
	// engine's JDBC/SQL catalog must be called to see the tables.
	SQLCatalogName = "tributary"
)

// ValidCatalog checks a --catalog value.
func ValidCatalog(c string) error {
	switch {
	case c == "" || c == CatalogHadoop:
		return nil
	case strings.HasPrefix(c, catalogSQL) && len(c) > len(catalogSQL):
		return nil
	}
	return fmt.Errorf("--catalog %q: want hadoop or sql:<SQLite database file>", c)
}

// sqlCatalogs are the SQL catalogs opened by any Loader of the process,
// by DSN: a database/sql pool is meant to be shared, and SQLite allows
// one writer at a time.
var sqlCatalogs struct {
	sync.Mutex
	open map[string]*iceberg.SQLCatalog
}

// OpenCatalog is the catalog of tables in fs that catalog names
// (ValidCatalog): the loader's commits, the lake commands and the
// maintenance jobs all open it here, so that they see the same tables.
func OpenCatalog(fs iceberg.FS, catalog string) (*iceberg.Catalog, error) {
	if err := ValidCatalog(catalog); err != nil {
		return nil, err
	}
	dsn, ok := strings.CutPrefix(catalog, catalogSQL)
	if !ok {
		return &iceberg.Catalog{FS: fs}, nil
	}
	sqlCatalogs.Lock()
	defer sqlCatalogs.Unlock()
	if s := sqlCatalogs.open[dsn]; s != nil {
		return &iceberg.Catalog{FS: fs, Pointer: s}, nil
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
	if sqlCatalogs.open == nil {
		sqlCatalogs.open = map[string]*iceberg.SQLCatalog{}
	}
	sqlCatalogs.open[dsn] = s
	return &iceberg.Catalog{FS: fs, Pointer: s}, nil
}

func (l *Loader) catalog(catalog string) (*iceberg.Catalog, error) {
	return OpenCatalog(l.FS, catalog)
}

// pointerMetadata is the name a catalog with a Pointer gives its metadata
// files (formats/iceberg, pointer.go).
var pointerMetadata = regexp.MustCompile(`^\d{5}-[0-9a-f-]+\.metadata\.json$`)

// checkOtherCatalog refuses a table the plan's catalog does not know but
// whose directory has another catalog's metadata: committing would start a
// second table in the same directory, each hiding the other's snapshots
// (and the run ids exactly-once looks for).
func (l *Loader) checkOtherCatalog(catalog, topic string) error {
	ents, err := l.FS.ReadDir(path.Join(topic, "metadata"))
	if err != nil {
		return nil // no metadata: a new table
	}
	sqlMode := strings.HasPrefix(catalog, catalogSQL)
	for _, e := range ents {
		name := e.Name()
		switch {
		case sqlMode && (name == "version-hint.text" || name == "v1.metadata.json"):
			return fmt.Errorf("table %s at %s/%s is kept by the Hadoop convention (metadata/%s) and is not in the SQL catalog %s: loading it through the SQL catalog would start a second table in its directory; load it without --catalog (registering a table in a catalog is not supported yet)", topic, l.FS, topic, name, catalog)
		case !sqlMode && pointerMetadata.MatchString(name):
			return fmt.Errorf("table %s at %s/%s has metadata written through a SQL catalog (metadata/%s): load it with that catalog's --catalog sql:<dsn>", topic, l.FS, topic, name)
		}
	}
	return nil
}
