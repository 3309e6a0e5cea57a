package iceberg

import (
	"errors"
	"fmt"
	"path"
	"strings"
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
