package iceberg

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
)

// Manifests reads a snapshot's manifest list.
func (c *Catalog) Manifests(snap *Snapshot) ([]ManifestFile, error) {
	b, err := c.FS.ReadFile(c.rel(snap.ManifestList))
	if err != nil {
		return nil, fmt.Errorf("reading the manifest list of snapshot %d: %w", snap.ID, err)
	}
	return DecodeManifestList(bytes.NewReader(b))
}

// Entries reads a manifest's entries, with what they inherit from the
// manifest filled in (the spec lets an added entry leave its snapshot id
// and sequence numbers null), and int partition values as int32 (longs
// stay int64), so an entry can be written again into another manifest as
// it is.
func (c *Catalog) Entries(mf ManifestFile) ([]Entry, error) {
	b, err := c.FS.ReadFile(c.rel(mf.Path))
	if err != nil {
		return nil, fmt.Errorf("reading manifest %s: %w", mf.Path, err)
	}
	ents, err := DecodeManifest(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", mf.Path, err)
	}
	for i := range ents {
		e := &ents[i]
		if e.SnapshotID == nil {
			id := mf.AddedSnapshotID
			e.SnapshotID = &id
		}
		if e.SequenceNumber == nil {
			seq := mf.SequenceNumber
			e.SequenceNumber = &seq
		}
		if e.FileSequenceNumber == nil {
			seq := mf.SequenceNumber
			e.FileSequenceNumber = &seq
		}
		for k, v := range e.File.Partition {
			switch n := v.(type) {
			case int:
				e.File.Partition[k] = int32(n)
			}
		}
	}
	return ents, nil
}

// LiveFiles are the data files a snapshot reads: the entries of its data
// manifests that are not deletions. A manifest of delete files (which this
// package never writes) is an error: the rows it deletes would come back
// through a rewrite that ignored it.
func (c *Catalog) LiveFiles(snap *Snapshot) ([]Entry, error) {
	if snap == nil {
		return nil, nil
	}
	mfs, err := c.Manifests(snap)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, mf := range mfs {
		if mf.Content != 0 {
			return nil, fmt.Errorf("formats/iceberg: snapshot %d has delete files (%s): rewriting such a table is not supported", snap.ID, mf.Path)
		}
		ents, err := c.Entries(mf)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if e.Status != statusDeleted {
				out = append(out, e)
			}
		}
	}
	return out, nil
}

// Manifest entry statuses.
const (
	statusExisting = 0
	statusAdded    = 1
	statusDeleted  = 2
)

// hourOf is an entry's hour partition value (ok false without one).
func hourOf(e Entry, spec PartitionSpec) (int32, bool) {
	for _, pf := range spec.Fields {
		if pf.Transform == "hour" {
			switch v := e.File.Partition[pf.Name].(type) {
			case int32:
				return v, true
			case int64:
				return int32(v), true
			}
		}
	}
	return 0, false
}

// offsetNameRE matches the names the loader gives data files,
// <topic>+<partition>+<first>+<last>.parquet, and the names a rewrite
// gives the files it writes, with a tag before the extension:
// <topic>+<partition>+<first>+<last>.<tag>.parquet.
var offsetNameRE = regexp.MustCompile(`^(.+)\+(\d+)\+(\d+)\+(\d+)(\.[A-Za-z0-9_-]+)?\.parquet$`)

// OffsetRange reads the topic, partition and first and last offsets from a
// data file's base name (ok false for a name of another writer). A file
// so named holds only offsets of [first, last] of that partition, though
// not necessarily all of them (the others are in other hours' files).
func OffsetRange(base string) (topic string, partition int32, first, last int64, ok bool) {
	m := offsetNameRE.FindStringSubmatch(base)
	if m == nil {
		return "", 0, 0, 0, false
	}
	p, err1 := strconv.ParseInt(m[2], 10, 32)
	f, err2 := strconv.ParseInt(m[3], 10, 64)
	l, err3 := strconv.ParseInt(m[4], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return "", 0, 0, 0, false
	}
	return m[1], int32(p), f, l, true
}
