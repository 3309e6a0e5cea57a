package iceberg

import (
	"errors"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Snapshot expiry, Iceberg's properties and defaults.
const (
	PropMaxSnapshotAge = "history.expire.max-snapshot-age-ms"
	PropMinSnapshots   = "history.expire.min-snapshots-to-keep"

	DefaultMaxSnapshotAge = 5 * 24 * time.Hour
	DefaultMinSnapshots   = 1
)

// Expire says which snapshots an expiry keeps: those younger than
// MaxAge, and always the MinKeep newest of the current lineage (the
// current snapshot and its ancestors) and the snapshots of refs. Zero
// fields take the table's properties, then Iceberg's defaults.
type Expire struct {
	MaxAge  time.Duration
	MinKeep int
	// DryRun lists what would go without committing or deleting.
	DryRun bool

	openRuns map[string]bool // read by ExpireSnapshots
}

// SummaryRunID is the snapshot summary key of the loader's run id: its
// snapshots of open plans are never expired.
const SummaryRunID = "tributary.run-id"

// ExpireResult is what an expiry did.
type ExpireResult struct {
	Version  int     // the metadata version it committed (0: none)
	Expired  []int64 // the snapshots it removed from the metadata
	Retained int
	// Deleted are the files it removed: manifest lists, manifests and
	// data files no retained snapshot refers to.
	Deleted []string
	// Skipped are locations the expired snapshots named that expiry
	// refuses to delete: outside the table's directory, another scheme,
	// not a data or manifest file, or not a plain file (see deletable).
	Skipped []string
}

// ExpireSnapshots removes old snapshots from the table's metadata, then
// deletes the files only they referred to.
//
// The order is what makes it safe: first a commit (with the usual
// retries) of metadata without the expired snapshots, then the deletions,
// computed from that committed version: a file is deleted only when no
// snapshot it retains refers to it, in any entry of any of their
// manifests. A commit that lands after the expiry's refers only to files
// live in a retained snapshot (the current one) or to its own new files,
// so it never refers to a deleted file. A crash between the commit and
// the deletions leaves files nothing refers to: orphans, which
// RemoveOrphans deletes.
//
// The snapshot of a loader run whose plan is still open (committed to the
// table, but killed before its state and _SUCCESS were written) is kept,
// with every snapshot between it and the current one: the rerun finds its
// run id by walking the current lineage, and without it would load or
// overwrite again (review finding 3). The open plans are read once, before
// the table: a plan opened later commits a snapshot newer than any this
// expiry sees as old.
func (c *Catalog) ExpireSnapshots(dir string, o Expire) (*ExpireResult, error) {
	open, err := c.openRuns(dir)
	if err != nil {
		return nil, err
	}
	o.openRuns = open
	var res *ExpireResult
	var kept *Metadata
	for attempt := 0; ; attempt++ {
		if attempt == MaxAttempts {
			return nil, fmt.Errorf("formats/iceberg: %s: lost the commit race %d times", c.Location(dir), MaxAttempts)
		}
		t, err := c.Load(dir)
		if err != nil {
			return nil, err
		}
		res = &ExpireResult{}
		m, expired, err := c.expireMetadata(t, o, res)
		if err != nil {
			return nil, err
		}
		if len(expired) == 0 || o.DryRun {
			for _, s := range expired {
				res.Expired = append(res.Expired, s.ID)
			}
			return res, nil
		}
		_, err = c.write(dir, t.Version+1, m, t)
		if errors.Is(err, errConflict) {
			continue
		}
		if err != nil {
			return nil, err
		}
		res.Version = t.Version + 1
		for _, s := range expired {
			res.Expired = append(res.Expired, s.ID)
		}
		kept = m
		crash("iceberg-expired")
		if err := c.deleteUnreachable(dir, kept, expired, res); err != nil {
			return res, err
		}
		return res, nil
	}
}

func (c *Catalog) expireMetadata(t *Table, o Expire, res *ExpireResult) (*Metadata, []Snapshot, error) {
	old := t.Metadata
	maxAge, minKeep := o.MaxAge, o.MinKeep
	if maxAge == 0 {
		maxAge = DefaultMaxSnapshotAge
		if v, ok := old.Properties[PropMaxSnapshotAge]; ok {
			ms, err := strconv.ParseInt(v, 10, 64)
			if err != nil || ms < 0 {
				return nil, nil, fmt.Errorf("formats/iceberg: table property %s=%q: want milliseconds", PropMaxSnapshotAge, v)
			}
			maxAge = time.Duration(ms) * time.Millisecond
		}
	}
	if minKeep == 0 {
		minKeep = DefaultMinSnapshots
		if v, ok := old.Properties[PropMinSnapshots]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return nil, nil, fmt.Errorf("formats/iceberg: table property %s=%q: want 1 or more", PropMinSnapshots, v)
			}
			minKeep = n
		}
	}
	if minKeep < 1 {
		return nil, nil, fmt.Errorf("formats/iceberg: min snapshots to keep %d: want 1 or more", minKeep)
	}
	cutoff := c.now().Add(-maxAge).UnixMilli()
	keep := map[int64]bool{}
	n := 0
	for s := old.Current(); s != nil && n < minKeep; n++ {
		keep[s.ID] = true
		if s.ParentID == nil {
			break
		}
		s = old.Snapshot(*s.ParentID)
	}
	for _, r := range old.Refs {
		keep[r.SnapshotID] = true
	}
	var line []int64
	for s := old.Current(); s != nil; {
		line = append(line, s.ID)
		if o.openRuns[s.Summary[SummaryRunID]] {
			for _, id := range line {
				keep[id] = true
			}
		}
		if s.ParentID == nil {
			break
		}
		s = old.Snapshot(*s.ParentID)
	}
	var retained []Snapshot
	var expired []Snapshot
	for _, s := range old.Snapshots {
		if keep[s.ID] || s.TimestampMs >= cutoff {
			retained = append(retained, s)
		} else {
			expired = append(expired, s)
		}
	}
	res.Retained = len(retained)
	if len(expired) == 0 {
		return nil, nil, nil
	}
	m := *old
	m.Snapshots = retained
	m.SnapshotLog = nil
	for _, l := range old.SnapshotLog {
		if m.Snapshot(l.SnapshotID) != nil {
			m.SnapshotLog = append(m.SnapshotLog, l)
		}
	}
	now := c.now().UnixMilli()
	m.MetadataLog = append(append([]MetadataLog{}, old.MetadataLog...),
		MetadataLog{TimestampMs: old.LastUpdatedMs, MetadataFile: c.Location(t.File)})
	m.LastUpdatedMs = now
	return &m, expired, nil
}

// deleteUnreachable deletes the files of the expired snapshots that no
// snapshot of kept refers to.
func (c *Catalog) deleteUnreachable(dir string, kept *Metadata, expired []Snapshot, res *ExpireResult) error {
	reach, err := c.reachable(kept)
	if err != nil {
		return fmt.Errorf("listing what the retained snapshots refer to (nothing deleted; remove-orphans will): %w", err)
	}
	gone := map[string]bool{}
	for _, s := range expired {
		gone[s.ManifestList] = true
		mfs, err := c.Manifests(&s)
		if err != nil {
			if isNotExist(err) {
				continue // deleted by an earlier expiry that crashed midway
			}
			return err
		}
		for _, mf := range mfs {
			gone[mf.Path] = true
			ents, err := c.Entries(mf)
			if err != nil {
				if isNotExist(err) {
					continue
				}
				return err
			}
			for _, e := range ents {
				gone[e.File.Path] = true
			}
		}
	}
	var del []string
	for p := range gone {
		if !reach[p] {
			del = append(del, p)
		}
	}
	sort.Strings(del)
	for _, p := range del {
		rel, ok := c.deletable(dir, p)
		if ok {
			st, err := c.FS.Stat(rel)
			if isNotExist(err) {
				continue // deleted by an earlier expiry that crashed midway
			}
			if err != nil {
				return fmt.Errorf("deleting %s: %w", p, err)
			}
			ok = st.Mode().IsRegular()
		}
		if !ok {
			res.Skipped = append(res.Skipped, p)
			continue
		}
		// A plain file (checked just above): RemoveAll removes it alone.
		if err := c.FS.RemoveAll(rel); err != nil && !isNotExist(err) {
			return fmt.Errorf("deleting %s: %w", p, err)
		}
		res.Deleted = append(res.Deleted, p)
	}
	return nil
}

// deletable is the warehouse path of loc if expiry may delete it. The
// locations come from metadata any writer to the table can add to (Spark,
// pyiceberg's add_files, a buggy tool), and a location naming the
// warehouse root or a directory would otherwise delete other tables, the
// loader's state or everything (review finding 2). So only: under the
// table's own directory, in the warehouse's scheme and authority, a
// Parquet data file or an Avro manifest or manifest list, with no hidden
// or underscore-led component (the loader's _tributary, Hadoop's
// _SUCCESS, temporary files) and nothing to clean in the path.
func (c *Catalog) deletable(dir, loc string) (string, bool) {
	prefix := strings.TrimSuffix(c.Location(dir), "/") + "/"
	if !strings.HasPrefix(loc, prefix) {
		return "", false
	}
	rel := c.rel(loc)
	if rel == "" || path.Clean(rel) != rel || strings.HasPrefix(rel, "/") {
		return "", false
	}
	if !strings.HasSuffix(rel, ".parquet") && !strings.HasSuffix(rel, ".avro") {
		return "", false
	}
	inner := strings.TrimPrefix(loc, prefix)
	for _, part := range strings.Split(inner, "/") {
		if part == "" || part == "." || part == ".." || strings.HasPrefix(part, "_") || strings.HasPrefix(part, ".") {
			return "", false
		}
	}
	return rel, true
}

// reachable is every file the snapshots of m need: their manifest lists,
// manifests, and the data files their manifests list as live. A deleted
// entry (the file a rewrite removed) is not: its snapshot does not read
// the file, and its parent, if retained, lists it as live.
func (c *Catalog) reachable(m *Metadata) (map[string]bool, error) {
	reach := map[string]bool{}
	seen := map[string]bool{}
	for i := range m.Snapshots {
		s := &m.Snapshots[i]
		reach[s.ManifestList] = true
		mfs, err := c.Manifests(s)
		if err != nil {
			return nil, err
		}
		for _, mf := range mfs {
			reach[mf.Path] = true
			if seen[mf.Path] {
				continue // manifests are shared by the snapshots of appends
			}
			seen[mf.Path] = true
			ents, err := c.Entries(mf)
			if err != nil {
				return nil, err
			}
			for _, e := range ents {
				if e.Status != statusDeleted {
					reach[e.File.Path] = true
				}
			}
		}
	}
	return reach, nil
}
