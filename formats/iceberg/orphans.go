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

// Orphans says which unreferenced files RemoveOrphans deletes: those last
// modified before OlderThan.
type Orphans struct {
	OlderThan time.Time
	DryRun    bool
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
//   - a file modified at or after OlderThan: a commit in progress writes
//     its files before it refers to them, so the safety age must be longer
//     than any commit takes (a load run stages its files for as long as it
//     runs: longer than the longest run);
//   - any metadata file (v<N>.metadata.json, version-hint.text) and any
//     file whose name starts with "_" or "." (Hadoop's hidden files: the
//     loader's _SUCCESS markers), except this package's temporary files
//     (.tmp-*);
//   - a data file older than the table (older than v1.metadata.json): the
//     plain mode's files loaded before the table existed are not the
//     table's orphans.
//
// The referenced files are read from one version and the directory listed
// after it, so a commit landing in between can only add references to
// files newer than that listing or to files the version had already.
func (c *Catalog) RemoveOrphans(dir string, o Orphans) (*OrphansResult, error) {
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
	return res, nil
}
