package iceberg

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"

	"github.com/apache/arrow/go/v15/arrow"
)

// Rewrite describes one commit that replaces data files of the table:
// compaction and manifest merging ("replace": the rows do not change) and
// a backfill ("overwrite": the rows of the deleted files come back from
// the added ones).
//
// Every rewrite writes the snapshot's manifests as one new manifest: the
// live files of the current snapshot that stay (status existing, with the
// snapshot and sequence numbers they were added with), the deleted ones
// (status deleted) and the added ones. So each rewrite also merges the
// manifests the appends accumulated (one per run); RewriteManifests is a
// rewrite that deletes and adds nothing.
//
// Concurrency: the rewrite is built on the current version and retried on
// a newer one when another commit wins (an append of a load, say), as
// Append is. Every file of Delete must still be live in the version the
// rewrite commits on: when one is gone (another rewrite replaced it), the
// rewrite stops with ErrFilesGone and commits nothing, since its new files
// would bring back rows the other one already holds.
type Rewrite struct {
	Dir       string
	Operation string // "replace" or "overwrite"
	// Delete are the absolute locations of the data files the snapshot
	// removes (DataFile.Path).
	Delete []string
	Add    []NewFile
	// Overwrite, if set, deletes the rows it selects from the table as the
	// commit's table is (not as it was planned): files holding only such
	// rows are deleted, files holding others too are rewritten without
	// them. A backfill's overwrite so replaces exactly its offsets even
	// when a compaction merged their files with others since it planned.
	Overwrite *OffsetFilter
	// Schema, if set, is the Arrow schema of the added files: the table
	// evolves to take it, as in Append.
	Schema *arrow.Schema
	// Summary, Done and SummaryFunc are as in Append.
	Summary     map[string]string
	Done        func(*Metadata) (bool, error)
	SummaryFunc func(summary map[string]string)
}

// CarriedSummary are the summary keys a rewrite copies from its parent
// snapshot: the loader's next offsets, cumulated over the table's history,
// which it reads from the newest snapshot that has them. Without the copy
// an expiry of the appends before a compaction would lose them.
var CarriedSummary = []string{"tributary.next-offsets"}

// ErrFilesGone says a file a rewrite replaces is no longer in the table.
var ErrFilesGone = errors.New("formats/iceberg: a file to replace is no longer in the table")

// ErrNothingToRewrite says a rewrite found nothing to do.
var ErrNothingToRewrite = errors.New("formats/iceberg: nothing to rewrite")

// Rewrite commits r; it returns the table and the new snapshot (nil when
// Done said it was there already).
func (c *Catalog) Rewrite(r Rewrite) (*Table, *Snapshot, error) {
	if r.Operation != "replace" && r.Operation != "overwrite" {
		return nil, nil, fmt.Errorf("formats/iceberg: rewrite operation %q: want replace or overwrite", r.Operation)
	}
	return c.commit(optimistic{
		dir:  r.Dir,
		done: r.Done,
		build: func(t *Table) (*Metadata, *Snapshot, []NewFile, error) {
			return c.rewriteMetadata(t, r)
		},
		// Read on every attempt: a test's hook may unset itself.
		beforeWrite: func() {
			if c.beforeRewrite != nil {
				c.beforeRewrite()
			}
		},
	})
}

// RewriteManifests merges the current snapshot's manifests into one, in a
// "replace" snapshot that changes no row.
func (c *Catalog) RewriteManifests(dir string) (*Table, *Snapshot, error) {
	return c.Rewrite(Rewrite{Dir: dir, Operation: "replace", Done: func(m *Metadata) (bool, error) {
		cur := m.Current()
		if cur == nil {
			return true, nil
		}
		mfs, err := c.Manifests(cur)
		return len(mfs) <= 1, err
	}})
}

// rewriteMetadata makes the manifests of r's snapshot on t and returns
// the metadata that commits it, and the data files it wrote (Overwrite).
func (c *Catalog) rewriteMetadata(t *Table, r Rewrite) (_ *Metadata, _ *Snapshot, written []NewFile, err error) {
	defer func() {
		if err != nil {
			c.removeAll(written)
			written = nil
		}
	}()
	old := t.Metadata
	m := *old // shallow: every slice or map changed below is copied first
	schema := old.CurrentSchema()
	if r.Schema != nil {
		if schema, err = c.evolveSchema(&m, old, r.Dir, r.Schema); err != nil {
			return nil, nil, nil, err
		}
	}
	spec := old.Spec()
	parent := old.Current()
	live, err := c.LiveFiles(parent)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, e := range live {
		if e.File.Partition != nil && len(spec.Fields) > 0 {
			if !hasPartition(e, spec) {
				return nil, nil, nil, fmt.Errorf("formats/iceberg: %s: file %s is not of the table's partition spec %d: rewriting it is not supported", c.Location(r.Dir), e.File.Path, spec.ID)
			}
		}
	}
	now := c.now().UnixMilli()
	snap := Snapshot{ID: newSnapshotID(), SequenceNumber: old.LastSequenceNumber + 1, TimestampMs: now, SchemaID: &schema.ID}
	if parent != nil {
		id := parent.ID
		snap.ParentID = &id
	}
	seq := snap.SequenceNumber

	adds := r.Add
	del := make(map[string]bool, len(r.Delete))
	for _, p := range r.Delete {
		del[p] = true
	}
	if r.Overwrite != nil {
		wr, err := writingFor(&m)
		if err != nil {
			return nil, nil, nil, err
		}
		d, a, err := c.overwriteFiles(live, r.Overwrite, spec, wr)
		if err != nil {
			return nil, nil, nil, err
		}
		written = a
		for _, p := range d {
			del[p] = true
		}
		adds = append(append([]NewFile(nil), r.Add...), a...)
	}
	entries := make([]Entry, 0, len(live)+len(adds))
	var deleted, kept int
	var deletedRows, deletedSize int64
	var totalRows, totalSize int64
	minSeq := seq
	for _, e := range live {
		if del[e.File.Path] {
			delete(del, e.File.Path)
			e.Status, e.SnapshotID = statusDeleted, &snap.ID
			deleted++
			deletedRows += e.File.Records
			deletedSize += e.File.SizeBytes
		} else {
			e.Status = statusExisting
			kept++
			totalRows += e.File.Records
			totalSize += e.File.SizeBytes
			minSeq = min(minSeq, *e.SequenceNumber)
		}
		entries = append(entries, e)
	}
	if len(del) > 0 {
		gone := make([]string, 0, len(del))
		for p := range del {
			gone = append(gone, p)
		}
		sort.Strings(gone)
		return nil, nil, nil, fmt.Errorf("%w: %s (and %d more): another commit replaced it since the rewrite was planned", ErrFilesGone, gone[0], len(gone)-1)
	}
	var addedRows, addedSize int64
	stats := c.filesStats(adds, schema)
	for i, f := range adds {
		part, err := partitionOf(spec, f)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("%s: %w", c.Location(r.Dir), err)
		}
		entries = append(entries, Entry{Status: statusAdded, SnapshotID: &snap.ID, SequenceNumber: &seq, FileSequenceNumber: &seq,
			File: withStats(DataFile{Path: c.Location(f.Path), Format: "PARQUET", Partition: part, Records: f.Records, SizeBytes: f.Bytes}, stats[i])})
		addedRows += f.Records
		addedSize += f.Bytes
	}
	totalRows += addedRows
	totalSize += addedSize

	var manifests []ManifestFile
	var writes []newFile // with the metadata file, as an append's (appendMetadata)
	if len(entries) > 0 {
		b, err := encodeManifest(schema, spec, entries)
		if err != nil {
			return nil, nil, nil, err
		}
		name := path.Join(metadataDir(r.Dir), uuid()+"-m0.avro")
		writes = append(writes, newFile{name, b})
		mf := ManifestFile{Path: c.Location(name), Length: int64(len(b)), SpecID: int32(spec.ID),
			SequenceNumber: seq, MinSequenceNumber: minSeq, AddedSnapshotID: snap.ID,
			AddedFiles: int32(len(adds)), ExistingFiles: int32(kept), DeletedFiles: int32(deleted),
			AddedRows: addedRows, ExistingRows: totalRows - addedRows, DeletedRows: deletedRows,
			Partitions: partitionSummaries(spec, entries)}
		manifests = append(manifests, mf)
	}
	b, err := encodeManifestList(&snap, manifests)
	if err != nil {
		return nil, nil, nil, err
	}
	list := path.Join(metadataDir(r.Dir), fmt.Sprintf("snap-%d-1-%s.avro", snap.ID, uuid()))
	m.pending = append(writes, newFile{list, b})
	snap.ManifestList = c.Location(list)

	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	snap.Summary = map[string]string{
		"operation":        r.Operation,
		"added-data-files": strconv.Itoa(len(adds)), "added-records": itoa(addedRows), "added-files-size": itoa(addedSize),
		"deleted-data-files": strconv.Itoa(deleted), "deleted-records": itoa(deletedRows), "removed-files-size": itoa(deletedSize),
		"total-data-files": strconv.Itoa(kept + len(adds)), "total-records": itoa(totalRows), "total-files-size": itoa(totalSize),
		"total-delete-files": "0", "total-position-deletes": "0", "total-equality-deletes": "0",
	}
	if parent != nil {
		for _, k := range CarriedSummary {
			if v, ok := parent.Summary[k]; ok {
				snap.Summary[k] = v
			}
		}
	}
	for k, v := range r.Summary {
		snap.Summary[k] = v
	}
	if r.SummaryFunc != nil {
		r.SummaryFunc(snap.Summary)
	}
	addSnapshot(&m, old, snap, c.Location(t.File), now)
	return &m, &snap, written, nil
}

// addSnapshot makes snap the current snapshot of m, a shallow copy of old.
func addSnapshot(m, old *Metadata, snap Snapshot, oldFile string, now int64) {
	m.Snapshots = append(append([]Snapshot{}, old.Snapshots...), snap)
	m.SnapshotLog = append(append([]SnapshotLog{}, old.SnapshotLog...), SnapshotLog{TimestampMs: now, SnapshotID: snap.ID})
	m.MetadataLog = append(append([]MetadataLog{}, old.MetadataLog...), MetadataLog{TimestampMs: old.LastUpdatedMs, MetadataFile: oldFile})
	id := snap.ID
	m.CurrentSnapshotID = &id
	m.Refs = map[string]Ref{}
	for k, v := range old.Refs {
		m.Refs[k] = v
	}
	m.Refs["main"] = Ref{SnapshotID: snap.ID, Type: "branch"}
	m.LastSequenceNumber = snap.SequenceNumber
	m.LastUpdatedMs = now
}
