package jobs

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"time"

	"github.com/tributary-io/tributary/formats/iceberg"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/lease"
)

// Table maintenance jobs: a job with `maintenance:` runs these actions on
// the Iceberg tables of its topics (<target>/<topic>) instead of a load,
// under the same schedule, lease, retries and history as a load job:
//
//   - name: clicks-maintenance
//     target: hdfs://nn:8020/lake
//     topics: [clicks]
//     maintenance: [compact, expire_snapshots, remove_orphans]
//     every: 6h
//
// The lease keeps two schedulers from running the same maintenance job at
// once; it does not keep a maintenance job from running beside the load
// job of the same tables, and need not: every action is one optimistic
// commit that retries on the loads' commits (formats/iceberg.Rewrite).
// Actions run in the order compact, rewrite_manifests, expire_snapshots,
// remove_orphans whatever the order written, so the files a compaction
// replaced can go in the same run once no retained snapshot reads them.
const (
	ActCompact          = "compact"
	ActRewriteManifests = "rewrite_manifests"
	ActExpireSnapshots  = "expire_snapshots"
	ActRemoveOrphans    = "remove_orphans"
)

var actionOrder = []string{ActCompact, ActRewriteManifests, ActExpireSnapshots, ActRemoveOrphans}

// TableMaintenance is what a maintenance run did to one table.
type TableMaintenance struct {
	Table string `json:"table"`
	// Compacted files into Written files, in snapshot CompactSnapshot.
	Compacted       int   `json:"compacted,omitempty"`
	Written         int   `json:"written,omitempty"`
	CompactSnapshot int64 `json:"compactSnapshot,omitempty"`
	ManifestsMerged bool  `json:"manifestsMerged,omitempty"`
	// Expired snapshots, and the files deleted with them.
	Expired      int `json:"expired,omitempty"`
	DeletedFiles int `json:"deletedFiles,omitempty"`
	Orphans      int `json:"orphans,omitempty"`
	// Seconds per action.
	Seconds map[string]float64 `json:"seconds,omitempty"`
}

func (d *Def) validateMaintenance() (field, msg string) {
	if err := loader.ValidCatalog(d.Catalog); err != nil {
		return "catalog", err.Error()
	}
	known := map[string]bool{}
	for _, a := range actionOrder {
		known[a] = true
	}
	seen := map[string]bool{}
	for _, a := range d.Maintenance {
		if !known[a] {
			return "maintenance", fmt.Sprintf("%q: want any of compact, rewrite_manifests, expire_snapshots, remove_orphans", a)
		}
		if seen[a] {
			return "maintenance", fmt.Sprintf("%q given twice", a)
		}
		seen[a] = true
	}
	if d.Executor != ExecLocal {
		return "executor", fmt.Sprintf("%q: a maintenance job runs in the scheduler (local)", d.Executor)
	}
	if d.TopicsRegex != "" {
		if _, err := regexp.Compile(d.TopicsRegex); err != nil {
			return "topics_regex", err.Error()
		}
	}
	if d.MaxSnapshotAge < 0 || d.MinSnapshotsToKeep < 0 {
		return "max_snapshot_age", "want positive values (0: the table's history.expire.* properties)"
	}
	if d.OrphanAge != 0 && d.OrphanAge < iceberg.MinOrphanAge {
		return "orphan_age", fmt.Sprintf("%s: want at least %s (a commit by another writer must keep its files; the default is 72h)", d.OrphanAge, iceberg.MinOrphanAge)
	}
	if d.TargetFileSize < 0 {
		return "target_file_size", "want a positive size"
	}
	return "", ""
}

// maintain runs a maintenance job's actions on each of its tables,
// stopping at the first error (the run retries from the start: every
// action is safe to repeat).
func (s *Scheduler) maintain(ctx context.Context, fs fsys.FS, j *Job, rec *Record, held *lease.Lease) error {
	cat, err := loader.OpenCatalog(fs, j.Catalog)
	if err != nil {
		return err
	}
	tables := append([]string(nil), j.Topics...)
	if j.TopicsRegex != "" {
		all, err := cat.Tables("")
		if err != nil {
			return err
		}
		re := regexp.MustCompile("^(?:" + j.TopicsRegex + ")$")
		for _, t := range all {
			if re.MatchString(t) {
				tables = append(tables, t)
			}
		}
	}
	sort.Strings(tables)
	do := map[string]bool{}
	for _, a := range j.Maintenance {
		do[a] = true
	}
	orphanAge := j.OrphanAge
	if orphanAge == 0 {
		orphanAge = iceberg.DefaultOrphanAge
	}
	for _, table := range tables {
		tm := TableMaintenance{Table: table, Seconds: map[string]float64{}}
		record := func() {
			s.mu.Lock()
			for i := range rec.Maintenance {
				if rec.Maintenance[i].Table == table {
					rec.Maintenance[i] = tm
					s.mu.Unlock()
					return
				}
			}
			rec.Maintenance = append(rec.Maintenance, tm)
			s.mu.Unlock()
		}
		for _, a := range actionOrder {
			if !do[a] {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := held.Check(ctx); err != nil {
				return err
			}
			start := time.Now()
			var err error
			switch a {
			case ActCompact:
				var res *iceberg.CompactResult
				res, err = cat.CompactTable(ctx, table, iceberg.Compact{TargetFileBytes: int64(j.TargetFileSize)})
				if err == nil && res.Snapshot != nil {
					tm.Compacted, tm.Written, tm.CompactSnapshot = res.Rewritten, res.Written, res.Snapshot.ID
					s.mu.Lock()
					rec.Files += res.Written
					rec.Rows += res.Rows
					rec.Bytes += res.Bytes
					s.mu.Unlock()
				}
			case ActRewriteManifests:
				var snap *iceberg.Snapshot
				_, snap, err = cat.RewriteManifests(table)
				tm.ManifestsMerged = err == nil && snap != nil
			case ActExpireSnapshots:
				var res *iceberg.ExpireResult
				res, err = cat.ExpireSnapshots(table, iceberg.Expire{MaxAge: j.MaxSnapshotAge, MinKeep: j.MinSnapshotsToKeep})
				if res != nil {
					tm.Expired, tm.DeletedFiles = len(res.Expired), len(res.Deleted)
					for _, p := range res.Skipped {
						s.log.Warn("expiry did not delete a location outside the table's files", "job", j.Name, "table", table, "location", p)
					}
				}
			case ActRemoveOrphans:
				var res *iceberg.OrphansResult
				res, err = cat.RemoveOrphans(table, iceberg.Orphans{OlderThan: time.Now().Add(-orphanAge)})
				if res != nil {
					tm.Orphans = len(res.Orphans)
				}
			}
			tm.Seconds[a] = time.Since(start).Seconds()
			record()
			if errors.Is(err, iceberg.ErrNoTable) {
				s.log.Info("no table yet; nothing to maintain", "job", j.Name, "table", table)
				break
			}
			if err != nil {
				return fmt.Errorf("table %s: %s: %w", table, a, err)
			}
		}
		s.log.Info("table maintained", "job", j.Name, "table", table, "compacted", tm.Compacted, "written", tm.Written,
			"expired", tm.Expired, "deleted", tm.DeletedFiles, "orphans", tm.Orphans)
	}
	return nil
}
