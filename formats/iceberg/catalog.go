package iceberg

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"time"
)

// FS is the file system a table lives on, rooted at the catalog's
// warehouse: the loader's sink (HDFS or a local directory) satisfies it.
type FS interface {
	// Create fails with an error satisfying errors.Is(err, fs.ErrExist)
	// when name exists: on HDFS and on a local disk alike, creation is
	// atomic, and that is what a commit relies on.
	Create(name string) (io.WriteCloser, error)
	ReadFile(name string) ([]byte, error)
	// Open opens a file for reading; a file that is also an io.ReaderAt
	// (HDFS, a local disk) lets the column statistics be read from its
	// footer alone.
	Open(name string) (io.ReadCloser, error)
	WriteFileAtomic(name string, data []byte) error
	// RenameNoReplace fails with an error satisfying
	// errors.Is(err, fs.ErrExist) when newname exists, and changes nothing
	// then: the check and the move are one step.
	RenameNoReplace(oldname, newname string) error
	RemoveAll(name string) error
	ReadDir(name string) ([]fs.FileInfo, error)
	Stat(name string) (fs.FileInfo, error)
	// String is the warehouse's URI (file:///..., hdfs://...): tables
	// record absolute locations under it.
	String() string
}

// Catalog is a Hadoop-style catalog: a table is a directory of the
// warehouse, its metadata the files in <table>/metadata.
//
// # The commit protocol
//
// Version N of a table is the file metadata/v<N>.metadata.json; the
// current version is the highest N present. metadata/version-hint.text
// holds N as a hint for readers (iceberg-core's HadoopCatalog reads it,
// then looks for N+1, N+2 ... as we do).
//
//  1. Read the current version N (the hint, then upward while v<N+1>
//     exists) and its metadata.
//  2. and 3., at once (concurrently: each is an HDFS file write of its
//     own): the new snapshot's manifests and manifest list under names
//     of their own (random ids), nothing refers to them yet; and the new
//     metadata whole in a temporary file of the metadata directory
//     (.tmp-<uuid>.metadata.json: no reader looks at it). When one write
//     fails, the others are removed. Crash point iceberg-manifests
//     (iceberg-create for a table's first version) is after them.
//  4. Commit point: rename it to v<N+1>.metadata.json with a rename that
//     refuses an existing destination (HDFS rename2 without OVERWRITE,
//     link(2) locally), as iceberg-core's HadoopTableOperations does. Of
//     two committers racing for N+1 exactly one renames; the other gets
//     "exists", removes its temporary file, manifests and manifest list,
//     reads version N+1 and tries again from step 1 on it.
//  5. Replace version-hint.text (write and rename). A crash before this
//     leaves a stale hint: iceberg-core steps over it, pyiceberg does not,
//     so the next Load by a committer (the rerun after the crash) writes
//     it again.
//
// A v<N>.metadata.json is complete from the moment it has its name, so
// readers (this one, Spark and Trino scanning for N+1) never see a
// half-written version. A committer that dies before its rename leaves a
// temporary file, manifests and a manifest list: orphans, never
// referenced, which orphan removal deletes.
type Catalog struct {
	FS FS
	// Pointer, if set, keeps each table's current metadata file instead
	// of the Hadoop convention (version-hint.text and the rename of
	// v<N>.metadata.json): the SQL catalog (SQLCatalog).
	Pointer Pointer
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// DecodeBudget bounds the bytes reading one data file holds decoded
	// at once (compaction, an overwrite, a scan); 0 is
	// DefaultDecodeBudget. A file that needs more is refused.
	DecodeBudget int64

	// beforeRewrite, set by tests, runs when a rewrite has written its
	// manifests and is about to commit: another commit can land there.
	beforeRewrite func()
	// prefetchBytes replaces DefaultPrefetchBytes (tests).
	prefetchBytes int64
}

// ErrNoTable says the table has no metadata yet.
var ErrNoTable = errors.New("formats/iceberg: no such table")

// errConflict says another committer created the version first.
var errConflict = errors.New("formats/iceberg: commit conflict")

// Table is a table as of one metadata version.
type Table struct {
	Dir     string // relative to the warehouse
	Version int
	// File is the metadata file of this version, relative to the
	// warehouse (metadata/v<N>.metadata.json in the Hadoop convention).
	File     string
	Metadata *Metadata
	cat      *Catalog
}

func (c *Catalog) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func metadataDir(dir string) string { return path.Join(dir, "metadata") }
func versionFile(dir string, v int) string {
	return path.Join(metadataDir(dir), fmt.Sprintf("v%d.metadata.json", v))
}
func hintFile(dir string) string { return path.Join(metadataDir(dir), "version-hint.text") }

// Location is the absolute URI of a path of the warehouse.
func (c *Catalog) Location(rel string) string {
	return strings.TrimSuffix(c.FS.String(), "/") + "/" + strings.TrimPrefix(rel, "/")
}

// Load reads the current version of the table in dir.
func (c *Catalog) Load(dir string) (*Table, error) {
	if c.Pointer != nil {
		return c.loadPointer(dir)
	}
	v := 0
	if b, err := c.FS.ReadFile(hintFile(dir)); err == nil {
		v, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	hinted := v
	if v <= 0 {
		// No hint: the highest version listed.
		ents, err := c.FS.ReadDir(metadataDir(dir))
		if err != nil && !isNotExist(err) {
			return nil, err
		}
		for _, e := range ents {
			var n int
			if _, err := fmt.Sscanf(e.Name(), "v%d.metadata.json", &n); err == nil && e.Name() == fmt.Sprintf("v%d.metadata.json", n) && n > v {
				v = n
			}
		}
	}
	for v > 0 || c.exists(versionFile(dir, 1)) {
		if v == 0 {
			v = 1
		}
		if !c.exists(versionFile(dir, v+1)) {
			break
		}
		v++
	}
	if v == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoTable, c.Location(dir))
	}
	b, err := c.FS.ReadFile(versionFile(dir, v))
	if err != nil {
		return nil, err
	}
	m, err := ParseMetadata(b)
	if err != nil {
		// Versions are renamed into place whole: this is damage, not a
		// commit in progress.
		return nil, fmt.Errorf("%s: %w", c.Location(versionFile(dir, v)), err)
	}
	if v != hinted {
		// A committer died between its commit and the hint: readers that
		// trust the hint (pyiceberg) would not see the version until the
		// next commit. Best effort: a reader without write access cannot.
		c.FS.WriteFileAtomic(hintFile(dir), []byte(strconv.Itoa(v)))
	}
	return &Table{Dir: dir, Version: v, File: versionFile(dir, v), Metadata: m, cat: c}, nil
}

func (c *Catalog) exists(name string) bool {
	_, err := c.FS.Stat(name)
	return err == nil
}

// Create makes a new table in dir, with the schema and a partition spec of
// hours(timeColumn) (no hour when timeColumn is empty), then
// identity(<column>) for each of identity (partition.go). A table that
// exists already is returned as it is.
func (c *Catalog) Create(dir string, schema *Schema, lastColumnID int, timeColumn string, props map[string]string, identity ...string) (*Table, error) {
	if t, err := c.Load(dir); err == nil {
		return t, nil
	} else if !errors.Is(err, ErrNoTable) {
		return nil, err
	}
	if c.Pointer != nil {
		if err := c.ForeignMetadata(dir); err != nil {
			return nil, err
		}
	}
	spec := PartitionSpec{ID: 0, Fields: []PartitionField{}}
	lastPartition := 999 // partition field ids start at 1000
	if timeColumn != "" {
		f, ok := schema.Field(timeColumn)
		if !ok {
			return nil, fmt.Errorf("formats/iceberg: partition column %q is not in the schema", timeColumn)
		}
		lastPartition++
		spec.Fields = append(spec.Fields, PartitionField{SourceID: f.ID, FieldID: lastPartition, Name: timeColumn + "_hour", Transform: "hour"})
	}
	for _, col := range identity {
		f, err := identityField(schema, col)
		if err != nil {
			return nil, err
		}
		lastPartition++
		spec.Fields = append(spec.Fields, PartitionField{SourceID: f.ID, FieldID: lastPartition, Name: col, Transform: "identity"})
	}
	p := map[string]string{"schema.name-mapping.default": schema.NameMapping()}
	for k, v := range props {
		p[k] = v
	}
	m := &Metadata{
		FormatVersion: FormatVersion, TableUUID: uuid(), Location: c.Location(dir),
		LastUpdatedMs: c.now().UnixMilli(), LastColumnID: lastColumnID,
		Schemas: []*Schema{schema}, CurrentSchemaID: schema.ID,
		PartitionSpecs: []PartitionSpec{spec}, DefaultSpecID: 0, LastPartitionID: lastPartition,
		Properties: p, SortOrders: []json.RawMessage{json.RawMessage(`{"order-id":0,"fields":[]}`)},
	}
	file, err := c.write(dir, 1, m, nil)
	if errors.Is(err, errConflict) {
		return c.Load(dir)
	}
	if err != nil {
		return nil, err
	}
	return &Table{Dir: dir, Version: 1, File: file, Metadata: m, cat: c}, nil
}

// write is the commit point: version v, built on base (nil for a new
// table), exists once this returns its file.
func (c *Catalog) write(dir string, v int, m *Metadata, base *Table, with ...newFile) (string, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", err
	}
	// The crash point before the commit: a table's creation has its own,
	// so that a crash test's first run reaches an append's window (its
	// manifests and metadata written, not yet renamed).
	point := "iceberg-manifests"
	if base == nil {
		point = "iceberg-create"
	}
	if c.Pointer != nil {
		if err := c.writeAll(with); err != nil {
			return "", err
		}
		crash(point)
		file, err := c.writePointer(dir, v, b, base)
		if errors.Is(err, errConflict) {
			// Another version won: nothing names these. After any other
			// error the swap may have happened, so they stay.
			c.removeNew(with)
		}
		return file, err
	}
	// The snapshot's manifests (with) and the metadata file are written
	// at once; the rename below commits them all. A crash or a failure
	// before it leaves files no version names, which orphan removal
	// deletes (the temporary metadata file among them).
	tmp := path.Join(metadataDir(dir), ".tmp-"+uuid()+".metadata.json")
	if err := c.writeAll(append(with, newFile{tmp, b})); err != nil {
		return "", err
	}
	crash(point)
	if err := c.FS.RenameNoReplace(tmp, versionFile(dir, v)); err != nil {
		c.FS.RemoveAll(tmp)
		if isExist(err) {
			// Another version won: nothing names these. After any other
			// error the rename may have happened, so they stay.
			c.removeNew(with)
			return "", errConflict
		}
		return "", err
	}
	crash("iceberg-committed")
	// An error is ignored: the version is committed; readers step over a
	// stale hint.
	c.FS.WriteFileAtomic(hintFile(dir), []byte(strconv.Itoa(v)))
	return versionFile(dir, v), nil
}

// crash is a hook for the loader's crash tests (nil in production).
var crash = func(string) {}

// SetCrashHook sets the function called at the named points of a commit.
func SetCrashHook(f func(point string)) { crash = f }

func (c *Catalog) writeNew(name string, b []byte) error {
	w, err := c.FS.Create(name)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || os.IsNotExist(err)
}

func isExist(err error) bool { return errors.Is(err, fs.ErrExist) || os.IsExist(err) }

func uuid() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// newSnapshotID is a random positive id, as iceberg-core makes them.
func newSnapshotID() int64 {
	var b [8]byte
	rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:]) >> 1)
}

// Tables lists the tables directly under dir of the warehouse ("" for its
// root): the directories with a metadata/version-hint.text or a
// metadata/v1.metadata.json.
func (c *Catalog) Tables(dir string) ([]string, error) {
	if c.Pointer != nil {
		return c.Pointer.Tables(dir)
	}
	if dir == "" {
		dir = "."
	}
	ents, err := c.FS.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		t := path.Join(dir, e.Name()) // path.Join drops a leading "."
		if c.exists(hintFile(t)) || c.exists(versionFile(t, 1)) {
			out = append(out, t)
		}
	}
	return out, nil
}
