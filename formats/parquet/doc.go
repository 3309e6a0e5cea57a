// Package parquet writes Arrow record batches as Parquet files that Hive,
// Spark, Trino, DuckDB and pyarrow read without surprises, streaming to an
// io.Writer (a local file or an HDFS file) in bounded memory.
//
// The writer is arrow v15's pqarrow. Batches are appended to a buffered row
// group (pqarrow's WriteBuffered: its Write starts a row group per batch,
// which is slower and makes tiny row groups); the row group is flushed to
// the io.Writer once the Arrow size of its rows reaches
// Options.RowGroupBytes, so memory stays near RowGroupBytes (plus the
// garbage collector's headroom) whatever the file's size. RollingWriter starts a new file at a
// target size.
//
// Types: strings are BYTE_ARRAY annotated UTF8 (STRING), timestamps are
// INT64 TIMESTAMP(MILLIS|MICROS, isAdjustedToUTC=true), dates DATE, lists
// and maps the standard three-level LIST and MAP groups. The Arrow schema is
// stored in the footer (ARROW:schema) so that pyarrow restores it exactly,
// field documentation included.
//
// A Writer or RollingWriter is not safe for concurrent use: each loader
// worker has its own.
package parquet
