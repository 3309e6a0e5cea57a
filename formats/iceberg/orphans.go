package iceberg

import (
	"fmt"
	"path"
	"sort"
	"strings"
	"time"
)

// DefaultOrphanAge is the safety age of orphan removal, Iceberg's own
// (deleteOrphanFiles' older-than default: 3 days).
const DefaultOrphanAge = 72 * time.Hour

// MinOrphanAge is the shortest safety age RemoveOrphans accepts without
// Force. The files of commits in progress that this package knows about
// (the loader's open plans, compactions) are kept whatever their age; the
// age protects the rest: another writer's commit (Spark, pyiceberg), a
// loader unit still writing. Spark refuses below 24h; one hour is enough
// for the writers here and lets a test or an operator clean up the same
// day.
const MinOrphanAge = time.Hour

// Orphans says which unreferenced files RemoveOrphans deletes: those last
// modified before OlderThan.
type Orphans struct {
	OlderThan time.Time
	DryRun    bool
	// Force accepts an OlderThan less than MinOrphanAge ago.
	Force bool
}

// OrphansResult is what orphan removal found, and deleted unless DryRun.
type OrphansResult struct {
	Scanned int
	Orphans []string // paths of the warehouse
}

// RemoveOrphans deletes the files under the table's directory that no
// metadata refers to: manifests and manifest lists of commits that lost a
// race or crashed before their commit point, temporary metadata files of
// dead committers, data files of runs or rewrites that never committed,
// and what an expiry that crashed midway left.
//
// What it never deletes:
//
//   - a file modified at or after OlderThan: a commit in progress writes
//     its files before it refers to them, so the safety age must be longer
//     than any commit takes (a load run stages its files for as long as it
//     runs: longer than the longest run);
//
//   - any metadata file (v<N>.metadata.json, version-hint.text) and any
//     file whose name starts with "_" or "." (Hadoop's hidden files: the
//     loader's _SUCCESS markers), except this package's temporary files
//     (.tmp-*);
//
//   - a data file older than the table (older than v1.metadata.json): the
//     plain mode's files loaded before the table existed are not the
//     table's orphans.
//
//   - a file of a commit in progress that this package can see: a data
//     file in the offset range of one of the loader's open plans, an
//     output of a compaction that has not committed (see inflight.go).
//     Their mtime says nothing: a rename keeps it.
//
// OlderThan must be at least MinOrphanAge ago unless Force is set.
//
// The commits in progress are read first, then the referenced files from
// one version, then the directory: a plan or compaction that ends in
// between committed before the version was read.
func (c *Catalog) RemoveOrphans(dir string, o Orphans) (*OrphansResult, error) {
	if age := time.Since(o.OlderThan); age < MinOrphanAge-time.Second && !o.Force {
		return nil, fmt.Errorf("formats/iceberg: an orphan age of %s is less than %s: a commit in progress could lose its files (force it if no other writer is running)", age.Round(time.Second), MinOrphanAge)
	}
	busy, err := c.readInflight(dir, o.OlderThan)
	if err != nil {
		return nil, err
	}
	t, err := c.Load(dir)
	if err != nil {
		return nil, err
	}
	reach, err := c.reachable(t.Metadata)
	if err != nil {
		return nil, err
	}
	born, err := c.FS.Stat(c.firstFile(t))
	if err != nil {
		return nil, fmt.Errorf("formats/iceberg: %s: the table's first version: %w", c.Location(dir), err)
	}
	res := &OrphansResult{}
	var walk func(d string) error
	walk = func(d string) error {
		ents, err := c.FS.ReadDir(d)
		if err != nil {
			if isNotExist(err) {
				return nil
			}
			return err
		}
		for _, e := range ents {
			p := path.Join(d, e.Name())
			if e.IsDir() {
				if strings.HasPrefix(e.Name(), "_") || strings.HasPrefix(e.Name(), ".") {
					continue
				}
				if err := walk(p); err != nil {
					return err
				}
				continue
			}
			res.Scanned++
			name := e.Name()
			inMeta := d == metadataDir(dir)
			switch {
			case reach[c.Location(p)]:
				continue
			case !e.ModTime().Before(o.OlderThan):
				continue
			case busy.keeps(c.Location(p)):
				continue
			case inMeta && strings.HasPrefix(name, inflightPrefix):
				// Dealt with below, once its compaction's outputs are gone.
				continue
			case strings.HasPrefix(name, ".tmp-"):
				// A dead committer's metadata, an aborted compaction's output.
			case strings.HasPrefix(name, "_") || strings.HasPrefix(name, "."):
				continue
			case inMeta && (strings.HasSuffix(name, ".metadata.json") || name == "version-hint.text"):
				continue
			case inMeta && strings.HasSuffix(name, ".avro"):
			case !inMeta && strings.HasSuffix(name, ".parquet") && !e.ModTime().Before(born.ModTime()):
			default:
				continue
			}
			res.Orphans = append(res.Orphans, p)
		}
		return nil
	}
	if err := walk(dir); err != nil {
		return nil, err
	}
	sort.Strings(res.Orphans)
	if o.DryRun {
		return res, nil
	}
	for _, p := range res.Orphans {
		if err := c.FS.RemoveAll(p); err != nil && !isNotExist(err) {
			return res, fmt.Errorf("deleting %s: %w", c.Location(p), err)
		}
	}
	for _, p := range busy.stale {
		if err := c.FS.RemoveAll(p); err != nil && !isNotExist(err) {
			return res, fmt.Errorf("deleting %s: %w", c.Location(p), err)
		}
	}
	return res, nil
}
