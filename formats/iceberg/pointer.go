package iceberg

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"
)

// Pointer is a catalog that keeps, for each table, the location of its
// current metadata file and moves it with a compare-and-swap: Iceberg's
// JDBC catalog (SQLCatalog here), or any service with that primitive. A
// Catalog with a Pointer writes each version as a new file,
// metadata/<N padded to 5>-<uuid>.metadata.json (iceberg-core's naming
// for such catalogs), and commits by swapping the pointer from the file
// the version was built on to the new one; a committer that loses the
// swap removes its file and retries on the winner's version, as with the
// Hadoop convention's rename. Locations are absolute (the catalog is
// shared with other engines, which know no warehouse).
type Pointer interface {
	// Current is the location of the table's current metadata file, or
	// an error wrapping ErrNoTable.
	Current(dir string) (string, error)
	// Swap makes next the table's current metadata file if old still is
	// ("" creates the table); it returns errConflict (ErrConflict) when
	// another commit moved the pointer (or created the table) first.
	Swap(dir, old, next string) error
	// Tables lists the tables whose directory is directly under dir.
	Tables(dir string) ([]string, error)
}

// ErrConflict says another committer moved a table's pointer first.
var ErrConflict = errConflict

func (c *Catalog) loadPointer(dir string) (*Table, error) {
	loc, err := c.Pointer.Current(dir)
	if err != nil {
		return nil, err
	}
	file := c.rel(loc)
	if file == loc || path.Dir(file) != metadataDir(dir) {
		// Another warehouse's table of the same name in the same catalog
		// database and namespace (two targets sharing one database), or
		// this one spelled otherwise (hdfs://nn against hdfs://nn:8020):
		// reading or committing on it would mix two tables.
		return nil, fmt.Errorf("formats/iceberg: %s: the catalog's row for this table points at %s, outside the table's metadata directory %s: another target's table of the same name in the same catalog database and namespace? give each target its own namespace or database, and spell a target the same way everywhere", c.Location(dir), loc, c.Location(metadataDir(dir)))
	}
	var v int
	if _, err := fmt.Sscanf(path.Base(file), "%d-", &v); err != nil || v <= 0 {
		return nil, fmt.Errorf("formats/iceberg: %s: the catalog's metadata location %s has no version number", c.Location(dir), loc)
	}
	b, err := c.FS.ReadFile(file)
	if err != nil {
		return nil, err
	}
	m, err := ParseMetadata(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	return &Table{Dir: dir, Version: v, File: file, Metadata: m, cat: c}, nil
}

func (c *Catalog) writePointer(dir string, v int, b []byte, base *Table) (string, error) {
	file := path.Join(metadataDir(dir), fmt.Sprintf("%05d-%s.metadata.json", v, uuid()))
	if err := c.writeNew(file, b); err != nil {
		c.FS.RemoveAll(file)
		return "", err
	}
	old := ""
	if base != nil {
		old = c.Location(base.File)
	}
	if err := c.Pointer.Swap(dir, old, c.Location(file)); err != nil {
		if errors.Is(err, errConflict) {
			c.FS.RemoveAll(file)
		}
		// Any other error: the swap may have happened (a lost reply), so
		// the file stays; orphan removal keeps metadata files anyway.
		return "", err
	}
	crash("iceberg-committed")
	return file, nil
}

// firstFile is the table's first metadata file: what the orphan removal
// dates the table by.
func (c *Catalog) firstFile(t *Table) string {
	if c.Pointer == nil {
		return versionFile(t.Dir, 1)
	}
	if log := t.Metadata.MetadataLog; len(log) > 0 {
		return c.rel(log[0].MetadataFile)
	}
	return t.File
}

// tableName splits a table's directory into the JDBC catalog's namespace
// (its parent directories, dot-separated; "" at the warehouse's root) and
// name.
func tableName(dir string) (namespace, name string) {
	dir = strings.Trim(path.Clean(dir), "/")
	ns, name := path.Split(dir)
	return strings.ReplaceAll(strings.Trim(ns, "/"), "/", "."), name
}

// creatingFor is how long a version-1 metadata file that no catalog row
// points at may be another committer's creation in flight (written, not
// yet swapped in): ForeignMetadata lets such a file be, so that two
// creators racing in one catalog still race (the loser removes its file).
const creatingFor = 10 * time.Minute

// ForeignMetadata refuses to create, through a Pointer catalog that has no
// row for dir, a table whose directory holds another table's metadata: a
// Hadoop table (version-hint.text, v<N>.metadata.json) or one kept by
// another catalog (another SQLite file: a scheduler host with its own, a
// relative path resolved elsewhere, a lost or restored database). Creating
// it would start a second table in the same directory, each hiding the
// other's snapshots and the run ids exactly-once looks for. A version-1
// file younger than creatingFor is let be (a creation racing this one).
func (c *Catalog) ForeignMetadata(dir string) error {
	ents, err := c.FS.ReadDir(metadataDir(dir))
	if err != nil {
		return nil // no metadata directory: a new table
	}
	var found []string
	for _, e := range ents {
		name := e.Name()
		if name != "version-hint.text" && !strings.HasSuffix(name, ".metadata.json") {
			continue
		}
		var v int
		if _, err := fmt.Sscanf(name, "%05d-", &v); err == nil && v == 1 && c.now().Sub(e.ModTime()) < creatingFor {
			continue
		}
		found = append(found, name)
	}
	if len(found) == 0 {
		return nil
	}
	sort.Strings(found)
	if len(found) > 3 {
		found = append(found[:3], fmt.Sprintf("and %d more", len(found)-3))
	}
	return fmt.Errorf("formats/iceberg: %s: this catalog has no row for the table, but its metadata directory holds another table's metadata (%s): creating it would start a second table in the same directory; use the catalog the table was created in (every host must use the same catalog database), or move the directory away", c.Location(dir), strings.Join(found, ", "))
}
