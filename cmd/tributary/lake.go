package main

import (
	"fmt"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/formats/iceberg"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/loader"
)

// The lake commands read the Iceberg tables the loader keeps
// (--table-format iceberg, docs/iceberg.md) through the same sinks it
// writes with, HDFS or a local directory.

func newLakeCommand() *cobra.Command {
	var (
		target string
		opts   fsys.Options
	)
	cmd := &cobra.Command{
		Use:   "lake",
		Short: "Look at and maintain the lake's Iceberg tables: tables, snapshots, describe, query, compact, expire-snapshots, remove-orphans",
		Long: `Read the Iceberg tables that "tributary load run --table-format iceberg"
keeps in a target: one table per topic at <target>/<topic>, one snapshot
per load run. Each snapshot's summary names the run and the offset ranges
it loaded; query prints a snapshot's rows as JSON lines. compact, rewrite-manifests, expire-snapshots and
remove-orphans maintain a table by hand (the same work a maintenance job
of "tributary jobs serve" does on a schedule, docs/iceberg.md).`,
		Example: `  tributary lake tables --target hdfs://nn:8020/lake
  tributary lake snapshots --target file:///lake clicks
  tributary lake describe --target file:///lake clicks`,
		Args: cobra.NoArgs,
	}
	cmd.PersistentFlags().StringVar(&target, "target", "", "the loader's target: hdfs://namenode:port/path or file:///path (required)")
	cmd.PersistentFlags().StringVar(&opts.User, "hdfs-user", "", "HDFS user to read as (default $HADOOP_USER_NAME, else the OS user)")
	addKerberosFlags(cmd.PersistentFlags(), &opts.Kerberos)
	var catalogFlag string
	cmd.PersistentFlags().StringVar(&catalogFlag, "catalog", loader.CatalogHadoop, "where the tables' current versions are kept, as the loader was told: hadoop or sql:<SQLite database file>[#<namespace>]")
	catalog := func() (*iceberg.Catalog, func(), error) {
		if err := loader.ValidCatalog(catalogFlag); err != nil {
			return nil, nil, err
		}
		fs, err := fsys.Open(target, opts)
		if err != nil {
			return nil, nil, err
		}
		c, err := loader.OpenCatalog(fs, catalogFlag)
		if err != nil {
			fs.Close()
			return nil, nil, err
		}
		return c, func() { fs.Close() }, nil
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "tables",
		Short: "List the Iceberg tables of a target",
		Long: `List the tables directly under the target (a directory with
metadata/version-hint.text or metadata/v1.metadata.json): the current
metadata version, the number of snapshots, and the current snapshot's
record and file counts and commit time.`,
		Example: `  tributary lake tables --target hdfs://nn:8020/lake --hdfs-user etl
  # TABLE   VERSION  SNAPSHOTS  RECORDS  FILES  LAST COMMIT
  # clicks  4        3          4000     9      2026-12-02T07:05:55Z`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, done, err := catalog()
			if err != nil {
				return err
			}
			defer done()
			tables, err := c.Tables("")
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "TABLE\tVERSION\tSNAPSHOTS\tRECORDS\tFILES\tLAST COMMIT")
			for _, name := range tables {
				t, err := c.Load(name)
				if err != nil {
					return fmt.Errorf("%s: %w", name, err)
				}
				records, files, last := "0", "0", "-"
				if s := t.Metadata.Current(); s != nil {
					records, files = s.Summary["total-records"], s.Summary["total-data-files"]
					last = time.UnixMilli(s.TimestampMs).UTC().Format(time.RFC3339)
				}
				fmt.Fprintf(w, "%s\t%d\t%d\t%s\t%s\t%s\n", name, t.Version, len(t.Metadata.Snapshots), records, files, last)
			}
			return w.Flush()
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "snapshots TABLE",
		Short: "List a table's snapshots, oldest first: one per load run",
		Long: `List every snapshot of the table, oldest first: its id and its
parent's, when it was committed, the operation, the records it added and
the table's total, and for the loader's snapshots the run id and the offset
ranges per partition ({"<partition>":[from,to]}) the run loaded. Any
snapshot id can be read with time travel, e.g. pyiceberg's
table.scan(snapshot_id=...).`,
		Example: `  tributary lake snapshots --target file:///lake clicks`,
		Args:    cobra.ExactArgs(1),
		RunE: onTable(catalog, func(cmd *cobra.Command, c *iceberg.Catalog, table string) error {
			t, err := c.Load(table)
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "SNAPSHOT\tPARENT\tCOMMITTED\tOPERATION\tADDED RECORDS\tTOTAL RECORDS\tRUN\tOFFSETS")
			for _, s := range t.Metadata.Snapshots {
				parent := "-"
				if s.ParentID != nil {
					parent = fmt.Sprint(*s.ParentID)
				}
				fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, parent, time.UnixMilli(s.TimestampMs).UTC().Format(time.RFC3339),
					s.Summary["operation"], s.Summary["added-records"], s.Summary["total-records"], s.Summary["tributary.run-id"], s.Summary["tributary.offsets"])
			}
			return w.Flush()
		}),
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "describe TABLE",
		Short: "Print a table's location, schema with field ids, partition spec and current snapshot",
		Long: `Print where the table is, its format version and current metadata
file, the current snapshot's counts, the current schema one field a line
with its field id and Iceberg type, the partition spec and the names of
the table's properties.`,
		Example: `  tributary lake describe --target file:///lake clicks
  #   1  type                     "string"
  #  ...
  # partitioned by:  hour(_event_time) as _event_time_hour`,
		Args: cobra.ExactArgs(1),
		RunE: onTable(catalog, func(cmd *cobra.Command, c *iceberg.Catalog, table string) error {
			t, err := c.Load(table)
			if err != nil {
				return err
			}
			m := t.Metadata
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "location:        %s\nformat version:  %d\nmetadata:        v%d.metadata.json\nuuid:            %s\n", m.Location, m.FormatVersion, t.Version, m.TableUUID)
			if s := m.Current(); s != nil {
				fmt.Fprintf(out, "current:         snapshot %d (%s records, %s files)\n", s.ID, s.Summary["total-records"], s.Summary["total-data-files"])
			}
			fmt.Fprintf(out, "schema %d:\n", m.CurrentSchemaID)
			for _, f := range m.CurrentSchema().Fields {
				fmt.Fprintf(out, "  %3d  %-24s %s\n", f.ID, f.Name, f.Type)
			}
			var spec []string
			for _, f := range m.Spec().Fields {
				for _, sf := range m.CurrentSchema().Fields {
					if sf.ID == f.SourceID {
						spec = append(spec, fmt.Sprintf("%s(%s) as %s", f.Transform, sf.Name, f.Name))
					}
				}
			}
			fmt.Fprintf(out, "partitioned by:  %s\n", strings.Join(spec, ", "))
			keys := make([]string, 0, len(m.Properties))
			for k := range m.Properties {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			fmt.Fprintf(out, "properties:      %s\n", strings.Join(keys, ", "))
			return nil
		}),
	})
	addLakeMaintenance(cmd, catalog)
	addLakeQuery(cmd, catalog)
	return cmd
}

// onTable is the RunE of a lake verb on one table: every verb opens the
// catalog for its run and closes it after, whatever it returns, so the
// open and close live here once.
func onTable(catalog func() (*iceberg.Catalog, func(), error), run func(cmd *cobra.Command, c *iceberg.Catalog, table string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		c, done, err := catalog()
		if err != nil {
			return err
		}
		defer done()
		return run(cmd, c, args[0])
	}
}
