package iceberg

import (
	"database/sql"
	"fmt"
	"path"
)

// SQLCatalog is Iceberg's JDBC catalog on any database/sql driver: one row
// per table in iceberg_tables, the schema iceberg-core's JdbcCatalog
// creates and reads (so Spark, Trino or pyiceberg's SqlCatalog configured
// on the same database see the same tables), and the commit an optimistic
// UPDATE ... WHERE metadata_location = <the version it was built on>:
// of two committers the database lets exactly one change the row, the
// other updates nothing and retries (Catalog.write).
//
// Statements use ? placeholders (SQLite, MySQL); the driver is the
// caller's (the tests use modernc.org/sqlite).
type SQLCatalog struct {
	DB   *sql.DB
	Name string // catalog_name: several catalogs can share one database
	// Namespace is the table_namespace of the tables at the warehouse's
	// root. Engines cannot name a table in the empty namespace
	// (pyiceberg's SqlCatalog refuses it, Trino maps namespaces to
	// schemas), so it should be set; tables in subdirectories are in the
	// namespace of their parent directories, dot-separated, under it.
	Namespace string
}

// ident is the namespace and name of the table in dir. A table name may
// contain dots (a Kafka topic web.clicks): engines name it as a
// namespace and a quoted name, e.g. ("tributary", "web.clicks").
func (s *SQLCatalog) ident(dir string) (namespace, name string) {
	ns, name := tableName(dir)
	switch {
	case s.Namespace == "":
	case ns == "":
		ns = s.Namespace
	default:
		ns = s.Namespace + "." + ns
	}
	return ns, name
}

// OpenSQL creates iceberg_tables in db if it is not there.
func OpenSQL(db *sql.DB, name string) (*SQLCatalog, error) {
	_, err := db.Exec(`CREATE TABLE IF NOT EXISTS iceberg_tables (
	catalog_name VARCHAR(255) NOT NULL,
	table_namespace VARCHAR(255) NOT NULL,
	table_name VARCHAR(255) NOT NULL,
	metadata_location VARCHAR(1000),
	previous_metadata_location VARCHAR(1000),
	PRIMARY KEY (catalog_name, table_namespace, table_name))`)
	if err != nil {
		return nil, fmt.Errorf("formats/iceberg: SQL catalog: %w", err)
	}
	return &SQLCatalog{DB: db, Name: name}, nil
}

func (s *SQLCatalog) Current(dir string) (string, error) {
	ns, name := s.ident(dir)
	var loc sql.NullString
	err := s.DB.QueryRow(`SELECT metadata_location FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?`,
		s.Name, ns, name).Scan(&loc)
	if err == sql.ErrNoRows || (err == nil && !loc.Valid) {
		return "", fmt.Errorf("%w: %s in SQL catalog %s", ErrNoTable, dir, s.Name)
	}
	if err != nil {
		return "", fmt.Errorf("formats/iceberg: SQL catalog: %w", err)
	}
	return loc.String, nil
}

func (s *SQLCatalog) Swap(dir, old, next string) error {
	ns, name := s.ident(dir)
	if old == "" {
		_, err := s.DB.Exec(`INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, previous_metadata_location) VALUES (?, ?, ?, ?, NULL)`,
			s.Name, ns, name, next)
		if err != nil {
			// A duplicate key (another creator won) and a failure look
			// alike across drivers: the row says which.
			if _, cerr := s.Current(dir); cerr == nil {
				return errConflict
			}
			return fmt.Errorf("formats/iceberg: SQL catalog: %w", err)
		}
		return nil
	}
	res, err := s.DB.Exec(`UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ?
WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? AND metadata_location = ?`,
		next, old, s.Name, ns, name, old)
	if err != nil {
		return fmt.Errorf("formats/iceberg: SQL catalog: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("formats/iceberg: SQL catalog: %w", err)
	}
	if n == 0 {
		return errConflict
	}
	return nil
}

func (s *SQLCatalog) Tables(dir string) ([]string, error) {
	ns, _ := s.ident(path.Join(dir, "x"))
	rows, err := s.DB.Query(`SELECT table_name FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? ORDER BY table_name`, s.Name, ns)
	if err != nil {
		return nil, fmt.Errorf("formats/iceberg: SQL catalog: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		out = append(out, path.Join(dir, name))
	}
	return out, rows.Err()
}
