package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/formats/parquet/pqread"
)

// The parquet commands read with xitongsys/parquet-go (formats/parquet/pqread),
// not with the arrow writer that made the files: a second implementation
// checks the loader's output in everyday use.

func newParquetCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "parquet",
		Short: "Look inside Parquet files: schema, head, count, cat",
		Long: `Read Parquet files as the loader writes them into the lake, with
xitongsys/parquet-go, a Parquet implementation independent of the writer
(arrow-go's pqarrow): what it reads, Hive and Spark read too.

FILE is a local path. hdfs:// paths are not read yet: they come with the
loader's HDFS client; until then copy the file out with
"hdfs dfs -get hdfs://namenode/lake/... ." and read the copy.

Rows print as JSON Lines, columns in schema order: timestamps as RFC 3339
in UTC, dates as 2006-01-02, binary as base64, maps as objects (sorted by
key), non-finite floats as "NaN", "Infinity" and "-Infinity". A null list or
map prints as empty ([] or {}): the reader cannot tell them apart.`,
		Example: `  tributary parquet schema /lake/pageviews/dt=2024-05-01/hr=13/pageviews+0+0+999.parquet
  tributary parquet count /lake/pageviews/dt=2024-05-01/hr=13/*.parquet
  tributary parquet head -n 3 /lake/pageviews/dt=2024-05-01/hr=13/pageviews+0+0+999.parquet
  tributary parquet cat /lake/pageviews/dt=2024-05-01/hr=13/pageviews+0+0+999.parquet | jq -r .userId | sort | uniq -c`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(
		newParquetSchemaCommand(),
		newParquetCountCommand(),
		newParquetHeadCommand(),
		newParquetCatCommand(),
	)
	return cmd
}

// openParquet opens a local file, refusing hdfs:// (and other URLs) with
// the way around.
func openParquet(path string) (*pqread.File, error) {
	if i := strings.Index(path, "://"); i > 0 {
		return nil, fmt.Errorf("%s: %s:// paths are not supported yet (they come with the loader's HDFS client); copy the file locally first, e.g. hdfs dfs -get %s .", path, path[:i], path)
	}
	return pqread.Open(path)
}

func newParquetSchemaCommand() *cobra.Command {
	var meta bool
	cmd := &cobra.Command{
		Use:   "schema FILE",
		Short: "Print a Parquet file's schema",
		Long: `Print the schema stored in a Parquet file's footer, one column a
line, nested fields indented under their group: name, repetition
(REQUIRED, OPTIONAL, REPEATED), physical type and logical type.

--meta adds the footer's facts first: rows, row groups, the writer that
made the file (created_by) and the key/value metadata keys (the Arrow
schema pyarrow restores types from is ARROW:schema).`,
		Example: `  tributary parquet schema events.parquet
  # type REQUIRED BYTE_ARRAY STRING
  # messageId REQUIRED BYTE_ARRAY STRING
  # userId OPTIONAL BYTE_ARRAY STRING
  # timestamp REQUIRED INT64 TIMESTAMP(MILLIS,UTC)
  # revenue OPTIONAL DOUBLE
  # tags OPTIONAL group LIST
  #   list REPEATED group
  #     element OPTIONAL BYTE_ARRAY STRING

  tributary parquet schema --meta events.parquet | head -4
  # rows: 1000
  # row groups: 1
  # created by: tributary (parquet-go/parquet-go)
  # metadata keys: ARROW:schema`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := openParquet(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			out := cmd.OutOrStdout()
			if meta {
				keys := make([]string, 0)
				for k := range f.KeyValueMetadata() {
					keys = append(keys, k)
				}
				fmt.Fprintf(out, "rows: %d\nrow groups: %d\ncreated by: %s\nmetadata keys: %s\n",
					f.NumRows(), f.RowGroups(), f.CreatedBy(), strings.Join(keys, ", "))
			}
			return pqread.WriteSchema(out, f.Schema())
		},
	}
	cmd.Flags().BoolVar(&meta, "meta", false, "print rows, row groups, created_by and metadata keys first")
	return cmd
}

func newParquetCountCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "count FILE...",
		Short: "Print the number of rows of Parquet files",
		Long: `Print the number of rows of each file, from its footer (no data is
read). With several files, each count is followed by the file's name, and
a last line gives the total, as wc -l does.`,
		Example: `  tributary parquet count events.parquet
  # 1000

  tributary parquet count part-0.parquet part-1.parquet
  # 1000 part-0.parquet
  # 250 part-1.parquet
  # 1250 total`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			var total int64
			for _, path := range args {
				f, err := openParquet(path)
				if err != nil {
					return err
				}
				n := f.NumRows()
				f.Close()
				total += n
				if len(args) == 1 {
					fmt.Fprintln(out, n)
				} else {
					fmt.Fprintln(out, n, path)
				}
			}
			if len(args) > 1 {
				fmt.Fprintln(out, total, "total")
			}
			return nil
		},
	}
}

func newParquetHeadCommand() *cobra.Command {
	var n int
	cmd := &cobra.Command{
		Use:   "head FILE",
		Short: "Print the first rows of a Parquet file as JSON Lines",
		Long: `Print the first -n rows (10 by default) of a Parquet file, one JSON
object per line, columns in schema order. Only the row groups holding
those rows are read.`,
		Example: `  tributary parquet head -n 2 events.parquet
  # {"type":"track","messageId":"m-0","userId":"u-0","timestamp":"2023-11-14T22:13:20.000Z","revenue":null,"tags":["a"]}
  # {"type":"page","messageId":"m-1","userId":null,"timestamp":"2023-11-14T22:13:20.001Z","revenue":9.99,"tags":[]}`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if n < 0 {
				return fmt.Errorf("-n %d: want 0 or more rows", n)
			}
			return printRows(cmd.OutOrStdout(), args[0], int64(n))
		},
	}
	cmd.Flags().IntVarP(&n, "rows", "n", 10, "number of rows to print")
	return cmd
}

func newParquetCatCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "cat FILE",
		Short: "Print every row of a Parquet file as JSON Lines",
		Long: `Print every row of a Parquet file, one JSON object per line, columns in
schema order, reading a thousand rows at a time.`,
		Example: `  tributary parquet cat events.parquet | jq -c '{type, userId}' | head -2
  # {"type":"track","userId":"u-0"}
  # {"type":"page","userId":null}`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return printRows(cmd.OutOrStdout(), args[0], -1)
		},
	}
}

// printRows prints up to limit rows (all when negative) of the file at
// path as JSON Lines.
func printRows(w io.Writer, path string, limit int64) error {
	f, err := openParquet(path)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for printed := int64(0); limit < 0 || printed < limit; {
		want := int64(1000)
		if limit >= 0 {
			want = min(want, limit-printed)
		}
		rows, err := f.Read(int(want))
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			break
		}
		for _, r := range rows {
			if err := enc.Encode(r); err != nil {
				return err
			}
		}
		printed += int64(len(rows))
	}
	return bw.Flush()
}
