package main

import (
	"fmt"
	"time"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/formats/iceberg"
)

// The maintenance verbs of `tributary lake`: each is one commit to the
// table (or none), safe beside running loads (formats/iceberg's rewrite
// retries on their commits).

func addLakeMaintenance(cmd *cobra.Command, catalog func() (*iceberg.Catalog, func(), error)) {
	var (
		target   int64
		minFiles int
	)
	compact := &cobra.Command{
		Use:   "compact TABLE",
		Short: "Rewrite a table's small data files into files of the target size, in one replace snapshot",
		Long: `Rewrite the small data files of each partition (event hour) of the table,
and for the loader's files of each Kafka partition, in offset order, into
files of the target size (--target-file-size, else the table property
write.target-file-size-bytes, else 512 MiB; a file under three quarters of
it is small). One "replace" snapshot removes the old files and adds the
new ones: readers see the same rows, earlier snapshots still read the old
files until expire-snapshots removes them. A load committing meanwhile is
kept; a compaction whose input another commit replaced fails and leaves
nothing.`,
		Example: `  tributary lake compact --target hdfs://nn:8020/lake clicks
  # compacted 1000 files (5000 rows, 1.4 MB) into 4 in 0.4s: snapshot 5711..., metadata v12`,
		Args: cobra.ExactArgs(1),
		RunE: onTable(catalog, func(cmd *cobra.Command, c *iceberg.Catalog, table string) error {
			if target < 0 {
				return fmt.Errorf("--target-file-size %d: want a positive byte count", target)
			}
			res, err := c.CompactTable(cmd.Context(), table, iceberg.Compact{TargetFileBytes: target, MinInputFiles: minFiles})
			if err != nil {
				return err
			}
			if res.Snapshot == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "nothing to compact (no partition has %d small files)\n", max(minFiles, iceberg.DefaultMinInputFiles))
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "compacted %d files (%d rows, %d bytes) into %d in %.1fs: snapshot %d, metadata v%d\n",
				res.Rewritten, res.Rows, res.Bytes, res.Written, res.Seconds, res.Snapshot.ID, res.Version)
			return nil
		}),
	}
	compact.Flags().Int64Var(&target, "target-file-size", 0, "size of the files written, in bytes (0: the table's write.target-file-size-bytes, else 512 MiB)")
	compact.Flags().IntVar(&minFiles, "min-input-files", iceberg.DefaultMinInputFiles, "leave a partition alone with fewer small files than this")
	cmd.AddCommand(compact)

	cmd.AddCommand(&cobra.Command{
		Use:   "rewrite-manifests TABLE",
		Short: "Merge the current snapshot's manifests into one (each load run adds one)",
		Long: `Write the current snapshot's manifests (one per load run since the last
rewrite) as one manifest, in a "replace" snapshot that changes no row, so
readers open one manifest instead of one per run. compact does the same
as part of its commit.`,
		Example: `  tributary lake rewrite-manifests --target file:///lake clicks`,
		Args:    cobra.ExactArgs(1),
		RunE: onTable(catalog, func(cmd *cobra.Command, c *iceberg.Catalog, table string) error {
			t, snap, err := c.RewriteManifests(table)
			if err != nil {
				return err
			}
			if snap == nil {
				fmt.Fprintln(cmd.OutOrStdout(), "nothing to merge: the current snapshot has one manifest or none")
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "merged the manifests into one: snapshot %d, metadata v%d\n", snap.ID, t.Version)
			return nil
		}),
	})

	var (
		maxAge  time.Duration
		minKeep int
		dryRun  bool
	)
	expire := &cobra.Command{
		Use:   "expire-snapshots TABLE",
		Short: "Remove old snapshots from a table and delete the files only they referred to",
		Long: `Remove the snapshots older than --older-than (else the table property
history.expire.max-snapshot-age-ms, else 5 days) from the table's
metadata, keeping always the --retain-last newest of the current lineage
(else history.expire.min-snapshots-to-keep, else 1), then delete the
manifest lists, manifests and data files that no retained snapshot reads.
Time travel to an expired snapshot is no longer possible; to a retained
one it is.`,
		Example: `  tributary lake expire-snapshots --target hdfs://nn:8020/lake clicks --older-than 168h --retain-last 10
  # expired 52 snapshots (10 retained), deleted 1304 files, metadata v63`,
		Args: cobra.ExactArgs(1),
		RunE: onTable(catalog, func(cmd *cobra.Command, c *iceberg.Catalog, table string) error {
			if maxAge < 0 || minKeep < 0 {
				return fmt.Errorf("--older-than %s, --retain-last %d: want positive values (0: the table's properties)", maxAge, minKeep)
			}
			res, err := c.ExpireSnapshots(table, iceberg.Expire{MaxAge: maxAge, MinKeep: minKeep, DryRun: dryRun})
			if err != nil {
				return err
			}
			if dryRun {
				fmt.Fprintf(cmd.OutOrStdout(), "would expire %d snapshots (%d retained): %v\n", len(res.Expired), res.Retained, res.Expired)
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "expired %d snapshots (%d retained), deleted %d files", len(res.Expired), res.Retained, len(res.Deleted))
			if res.Version > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), ", metadata v%d", res.Version)
			}
			fmt.Fprintln(cmd.OutOrStdout())
			for _, p := range res.Skipped {
				fmt.Fprintf(cmd.OutOrStdout(), "  not deleted (not a data or manifest file of the table): %s\n", p)
			}
			return nil
		}),
	}
	expire.Flags().DurationVar(&maxAge, "older-than", 0, "expire snapshots older than this (0: the table's history.expire.max-snapshot-age-ms, else 120h)")
	expire.Flags().IntVar(&minKeep, "retain-last", 0, "always keep this many newest snapshots of the current lineage (0: history.expire.min-snapshots-to-keep, else 1)")
	expire.Flags().BoolVar(&dryRun, "dry-run", false, "list the snapshots that would expire; change nothing")
	cmd.AddCommand(expire)

	var (
		orphanAge   time.Duration
		orphanDry   bool
		orphanForce bool
	)
	orphans := &cobra.Command{
		Use:   "remove-orphans TABLE",
		Short: "Delete the files under a table that no metadata refers to",
		Long: `Delete the files under the table's directory that none of its snapshots
reads: manifests of commits that lost a race or crashed, temporary files
of dead committers and compactions, data files of runs that never
committed. Only files older than --older-than (default 72h, Iceberg's;
at least 1h unless --force) are touched. The files of the loader's open
plans (<target>/_tributary/plans) and of compactions that have not
committed yet are kept whatever their age: a rename keeps a file's mtime.
Hidden files (_SUCCESS markers), metadata versions, and data files older
than the table itself are never deleted.`,
		Example: `  tributary lake remove-orphans --target hdfs://nn:8020/lake clicks --dry-run
  # 3 orphans of 2110 files:
  #   clicks/metadata/0b1d...-m0.avro`,
		Args: cobra.ExactArgs(1),
		RunE: onTable(catalog, func(cmd *cobra.Command, c *iceberg.Catalog, table string) error {
			if orphanAge < iceberg.MinOrphanAge && !orphanForce {
				return fmt.Errorf("--older-than %s: want at least %s (a commit by another writer must keep its files), or --force", orphanAge, iceberg.MinOrphanAge)
			}
			res, err := c.RemoveOrphans(table, iceberg.Orphans{OlderThan: time.Now().Add(-orphanAge), DryRun: orphanDry, Force: orphanForce})
			if err != nil {
				return err
			}
			verb := "removed"
			if orphanDry {
				verb = "would remove"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %d orphans of %d files:\n", verb, len(res.Orphans), res.Scanned)
			for _, p := range res.Orphans {
				fmt.Fprintf(cmd.OutOrStdout(), "  %s\n", p)
			}
			return nil
		}),
	}
	orphans.Flags().DurationVar(&orphanAge, "older-than", iceberg.DefaultOrphanAge, "only files last modified longer ago than this")
	orphans.Flags().BoolVar(&orphanDry, "dry-run", false, "list the orphans; delete nothing")
	orphans.Flags().BoolVar(&orphanForce, "force", false, "accept an --older-than under 1h (only when no other writer, Spark or pyiceberg, commits to the table)")
	cmd.AddCommand(orphans)
}

func addLakeQuery(cmd *cobra.Command, catalog func() (*iceberg.Catalog, func(), error)) {
	var (
		snapshot int64
		limit    int64
		columns  []string
	)
	query := &cobra.Command{
		Use:   "query TABLE",
		Short: "Print the rows of a table's snapshot as JSON lines",
		Long: `Read every data file of the table's current snapshot (or --snapshot,
time travel to any retained one) and print its rows, one JSON object a
line, file by file. A look at the data, not a query engine: no filter is
pushed down; for SQL use DuckDB's iceberg extension, Trino or pyiceberg.
A file written before a column was added has no value for it, and the
column is left out of its rows.`,
		Example: `  tributary lake query --target file:///lake clicks --limit 3
  tributary lake query --target hdfs://nn:8020/lake clicks --snapshot 5711837164245731022 --columns _partition,_offset`,
		Args: cobra.ExactArgs(1),
		RunE: onTable(catalog, func(cmd *cobra.Command, c *iceberg.Catalog, table string) error {
			if limit < 0 {
				return fmt.Errorf("--limit %d: want 0 (all rows) or more", limit)
			}
			t, err := c.Load(table)
			if err != nil {
				return err
			}
			snap := t.Metadata.Current()
			if cmd.Flags().Changed("snapshot") {
				if snap = t.Metadata.Snapshot(snapshot); snap == nil {
					return fmt.Errorf("--snapshot %d: the table has no such snapshot (tributary lake snapshots lists them)", snapshot)
				}
			}
			if snap == nil {
				return nil
			}
			for _, col := range columns {
				if _, ok := t.Metadata.CurrentSchema().Field(col); !ok {
					return fmt.Errorf("--columns: %q is not a column of the table's current schema", col)
				}
			}
			var n int64
			out := cmd.OutOrStdout()
			return c.ScanNamed(cmd.Context(), t.Metadata, snap, func(_ string, rec arrow.Record) error {
				if len(columns) > 0 {
					var fields []arrow.Field
					var cols []arrow.Array
					for _, name := range columns {
						if idx := rec.Schema().FieldIndices(name); len(idx) > 0 {
							fields = append(fields, rec.Schema().Field(idx[0]))
							cols = append(cols, rec.Column(idx[0]))
						}
					}
					rec = array.NewRecord(arrow.NewSchema(fields, nil), cols, rec.NumRows())
					defer rec.Release()
				}
				if limit > 0 && n+rec.NumRows() > limit {
					rec = rec.NewSlice(0, limit-n)
					defer rec.Release()
				}
				if err := array.RecordToJSON(rec, out); err != nil {
					return err
				}
				n += rec.NumRows()
				if limit > 0 && n >= limit {
					return iceberg.ErrStopScan
				}
				return nil
			})
		}),
	}
	query.Flags().Int64Var(&snapshot, "snapshot", 0, "the snapshot to read (default: the current one)")
	query.Flags().Int64Var(&limit, "limit", 0, "stop after this many rows (0: all)")
	query.Flags().StringSliceVar(&columns, "columns", nil, "only these columns, comma-separated")
	cmd.AddCommand(query)
}
