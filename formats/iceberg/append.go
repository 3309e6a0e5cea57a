package iceberg

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/parquet/metadata"
)

// NewFile is a data file an append adds: a Parquet file already in place.
type NewFile struct {
	Path    string // relative to the warehouse
	Records int64
	Bytes   int64
	// Hour is the file's partition value: hours since the Unix epoch (UTC)
	// of every row's event time.
	Hour int32
	// Identity are the file's values of the table's identity partition
	// fields, by field name (the column's), nil for null: every row of the
	// file has them. Extra keys are ignored, so a rewrite may pass the
	// partition tuple of the file it replaces.
	Identity map[string]any
}

// Append describes one append commit.
type Append struct {
	Dir string // the table's directory in the warehouse
	// Schema is the Arrow schema the files were written with; the table's
	// schema evolves to take it (Evolve).
	Schema *arrow.Schema
	// TimeColumn is the timestamp column of the hours() partition spec of
	// a new table.
	TimeColumn string
	// Identity are the columns of the identity() partition fields that
	// follow the hour in a new table's spec.
	Identity []string
	Files    []NewFile
	// Summary is added to the snapshot's summary.
	Summary map[string]string
	// Done, if set, is asked on every attempt, with the table as it is
	// then: true means the append is in the table already (a commit
	// repeated after a crash) and nothing is written; an error stops it.
	Done func(*Metadata) (bool, error)
	// SummaryFunc, if set, completes the summary on every attempt, after
	// Done, as the table is then.
	SummaryFunc func(summary map[string]string)
}

// MaxAttempts bounds the retries of a commit that loses races.
const MaxAttempts = 20

// Append commits one snapshot that adds the files, retrying on a newer
// version when another committer wins the race. It returns the snapshot
// (nil when Done said the append was there already) and the table.
func (c *Catalog) Append(a Append) (*Table, *Snapshot, error) {
	footers := c.footers(a.Files)
	return c.commit(optimistic{
		dir: a.Dir,
		create: func() error {
			s, last, _, err := Evolve(a.Schema, nil, 0)
			if err != nil {
				return err
			}
			_, err = c.Create(a.Dir, s, last, a.TimeColumn, nil, a.Identity...)
			return err
		},
		done: a.Done,
		build: func(t *Table) (*Metadata, *Snapshot, []NewFile, error) {
			m, snap, err := c.appendMetadata(t, a, footers)
			return m, snap, nil, err
		},
	})
}

// optimistic is one change to a table, committed by commit.
type optimistic struct {
	dir string
	// create, if set, makes the table when it does not exist yet (an
	// append's first run); without it a missing table is an error.
	create func() error
	// done, if set, is asked on every attempt whether the change is in
	// the table already (a commit repeated after a crash).
	done func(*Metadata) (bool, error)
	// build makes the next version's metadata on t, and says which files
	// it wrote that must go when that version loses the race.
	build func(t *Table) (*Metadata, *Snapshot, []NewFile, error)
	// beforeWrite, if set, runs just before the metadata is written.
	beforeWrite func()
}

// commit is the optimistic concurrency Append and Rewrite share, so that
// both keep another committer's snapshot the same way: load the table,
// build the next version on it and write it; when another committer took
// that version first, start again from a fresh load, at most MaxAttempts
// times. It returns the new table and snapshot (no snapshot when done said
// the change was there already).
func (c *Catalog) commit(o optimistic) (*Table, *Snapshot, error) {
	for attempt := 0; attempt < MaxAttempts; attempt++ {
		t, err := c.Load(o.dir)
		if errors.Is(err, ErrNoTable) && o.create != nil {
			if err := o.create(); err != nil {
				return nil, nil, err
			}
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if o.done != nil {
			done, err := o.done(t.Metadata)
			if err != nil || done {
				return t, nil, err
			}
		}
		m, snap, written, err := o.build(t)
		if err != nil {
			return nil, nil, err
		}
		pending := m.pending
		m.pending = nil
		if o.beforeWrite != nil {
			o.beforeWrite()
		}
		file, err := c.write(o.dir, t.Version+1, m, t, pending...)
		if err != nil {
			// This attempt's files: the next makes its own.
			c.removeAll(written)
		}
		if errors.Is(err, errConflict) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		return &Table{Dir: o.dir, Version: t.Version + 1, File: file, Metadata: m, cat: c}, snap, nil
	}
	return nil, nil, fmt.Errorf("formats/iceberg: %s: lost the commit race %d times", c.Location(o.dir), MaxAttempts)
}

// evolveSchema makes want the current schema of m (a shallow copy of old)
// when it adds columns to old's, with a fresh schema id and the name
// mapping readers use for files written before; it returns the schema the
// snapshot's files are written with. Appends and rewrites both evolve a
// table this way, so a column added by either reads the same.
func (c *Catalog) evolveSchema(m, old *Metadata, dir string, want *arrow.Schema) (*Schema, error) {
	schema, last, changed, err := EvolveTable(want, old)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Location(dir), err)
	}
	if !changed {
		return old.CurrentSchema(), nil
	}
	for _, s := range old.Schemas {
		schema.ID = max(schema.ID, s.ID+1)
	}
	m.Schemas = append(append([]*Schema{}, old.Schemas...), schema)
	m.CurrentSchemaID, m.LastColumnID = schema.ID, last
	m.Properties = copyMap(old.Properties)
	mapping, err := nameMapping(schema, old.Properties["schema.name-mapping.default"])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.Location(dir), err)
	}
	m.Properties["schema.name-mapping.default"] = mapping
	return schema, nil
}

// appendMetadata makes the manifest and manifest list of a snapshot that
// adds a.Files to t, and returns the metadata that commits it (and the
// manifests, to write with it: Metadata.pending).
func (c *Catalog) appendMetadata(t *Table, a Append, footers func() []*metadata.FileMetaData) (*Metadata, *Snapshot, error) {
	old := t.Metadata
	m := *old // shallow: every slice or map changed below is copied first
	schema, err := c.evolveSchema(&m, old, a.Dir, a.Schema)
	if err != nil {
		return nil, nil, err
	}
	spec := old.Spec()
	now := c.now().UnixMilli()
	snap := Snapshot{ID: newSnapshotID(), SequenceNumber: old.LastSequenceNumber + 1, TimestampMs: now, SchemaID: &schema.ID}
	parent := old.Current()
	if parent != nil {
		id := parent.ID
		snap.ParentID = &id
	}

	entries := make([]Entry, 0, len(a.Files))
	stats := statsOf(footers(), schema)
	var rows, size int64
	for i, f := range a.Files {
		part, err := partitionOf(spec, f)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", c.Location(a.Dir), err)
		}
		seq := snap.SequenceNumber
		entries = append(entries, Entry{Status: 1, SnapshotID: &snap.ID, SequenceNumber: &seq, FileSequenceNumber: &seq,
			File: withStats(DataFile{Path: c.Location(f.Path), Format: "PARQUET", Partition: part, Records: f.Records, SizeBytes: f.Bytes}, stats[i])})
		rows += f.Records
		size += f.Bytes
	}
	var manifests []ManifestFile
	if parent != nil {
		b, err := c.FS.ReadFile(c.rel(parent.ManifestList))
		if err != nil {
			return nil, nil, fmt.Errorf("reading the manifest list of snapshot %d: %w", parent.ID, err)
		}
		if manifests, err = DecodeManifestList(bytes.NewReader(b)); err != nil {
			return nil, nil, err
		}
	}
	if mergeOnAppend(old, len(manifests)) {
		// Nothing is written yet: the append becomes a rewrite that deletes
		// nothing, whose one manifest holds the table's files.
		m, snap, _, err := c.rewriteMetadata(t, Rewrite{Dir: a.Dir, Operation: "append", Add: a.Files, Schema: a.Schema,
			Summary: a.Summary, SummaryFunc: a.SummaryFunc})
		return m, snap, err
	}
	// The manifest and the list that names it are written with the
	// metadata file (Catalog.write): all are known before any is written,
	// and on HDFS each file costs a create, a block pipeline and a
	// complete, one after the other before.
	var writes []newFile
	if len(entries) > 0 {
		b, err := encodeManifest(schema, spec, entries)
		if err != nil {
			return nil, nil, err
		}
		name := path.Join(metadataDir(a.Dir), uuid()+"-m0.avro")
		writes = append(writes, newFile{name, b})
		mf := ManifestFile{Path: c.Location(name), Length: int64(len(b)), SpecID: int32(spec.ID),
			SequenceNumber: snap.SequenceNumber, MinSequenceNumber: snap.SequenceNumber, AddedSnapshotID: snap.ID,
			AddedFiles: int32(len(entries)), AddedRows: rows, Partitions: partitionSummaries(spec, entries)}
		manifests = append(manifests, mf)
	}
	b, err := encodeManifestList(&snap, manifests)
	if err != nil {
		return nil, nil, err
	}
	list := path.Join(metadataDir(a.Dir), fmt.Sprintf("snap-%d-1-%s.avro", snap.ID, uuid()))
	m.pending = append(writes, newFile{list, b})
	snap.ManifestList = c.Location(list)

	total := func(key string, add int64) string {
		var prev int64
		if parent != nil {
			prev, _ = strconv.ParseInt(parent.Summary[key], 10, 64)
		}
		return strconv.FormatInt(prev+add, 10)
	}
	snap.Summary = map[string]string{
		"operation":        "append",
		"added-data-files": strconv.Itoa(len(entries)), "added-records": strconv.FormatInt(rows, 10),
		"added-files-size": strconv.FormatInt(size, 10),
		"total-data-files": total("total-data-files", int64(len(entries))), "total-records": total("total-records", rows),
		"total-files-size":   total("total-files-size", size),
		"total-delete-files": "0", "total-position-deletes": "0", "total-equality-deletes": "0",
	}
	for k, v := range a.Summary {
		snap.Summary[k] = v
	}
	if a.SummaryFunc != nil {
		a.SummaryFunc(snap.Summary)
	}

	m.Snapshots = append(append([]Snapshot{}, old.Snapshots...), snap)
	m.SnapshotLog = append(append([]SnapshotLog{}, old.SnapshotLog...), SnapshotLog{TimestampMs: now, SnapshotID: snap.ID})
	m.MetadataLog = append(append([]MetadataLog{}, old.MetadataLog...),
		MetadataLog{TimestampMs: old.LastUpdatedMs, MetadataFile: c.Location(t.File)})
	m.CurrentSnapshotID = &snap.ID
	m.Refs = map[string]Ref{}
	for k, v := range old.Refs {
		m.Refs[k] = v
	}
	m.Refs["main"] = Ref{SnapshotID: snap.ID, Type: "branch"}
	m.LastSequenceNumber = snap.SequenceNumber
	m.LastUpdatedMs = now
	return &m, &snap, nil
}

// Rel is the path of the warehouse of an absolute location under it.
func (c *Catalog) Rel(loc string) string { return c.rel(loc) }

// Manifest merging on append, Iceberg's properties and defaults.
const (
	PropMergeEnabled  = "commit.manifest-merge.enabled"
	PropMergeMinCount = "commit.manifest.min-count-to-merge"

	DefaultMergeMinCount = 100
)

// mergeOnAppend says whether an append to a snapshot of n manifests
// merges them: the list would otherwise grow by one per load run, and a
// reader opens every manifest of it to plan a scan.
func mergeOnAppend(m *Metadata, n int) bool {
	if m.Properties[PropMergeEnabled] == "false" {
		return false
	}
	min := DefaultMergeMinCount
	if v, err := strconv.Atoi(m.Properties[PropMergeMinCount]); err == nil && v > 0 {
		min = v
	}
	return n >= min
}

// rel turns an absolute location under the warehouse back into a path of it.
func (c *Catalog) rel(loc string) string {
	root := strings.TrimSuffix(c.FS.String(), "/") + "/"
	return strings.TrimPrefix(loc, root)
}

func copyMap(in map[string]string) map[string]string {
	out := make(map[string]string, len(in)+1)
	for k, v := range in {
		out[k] = v
	}
	return out
}

// newFile is a metadata file to write.
type newFile struct {
	name string
	b    []byte
}

// writeAll writes the files concurrently; when one fails, the others are
// removed (best effort: nothing references them yet, and a lost race may
// do this up to MaxAttempts times a commit; orphan removal deletes what a
// crash leaves).
func (c *Catalog) writeAll(files []newFile) error {
	errs := make([]error, len(files))
	var wg sync.WaitGroup
	for i, f := range files {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.writeNew(f.name, f.b)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		c.removeNew(files)
		return err
	}
	return nil
}

// removeNew removes files a commit wrote that no version names.
func (c *Catalog) removeNew(files []newFile) {
	for _, f := range files {
		c.FS.RemoveAll(f.name)
	}
}
