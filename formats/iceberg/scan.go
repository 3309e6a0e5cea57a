package iceberg

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
)

// ErrStopScan, returned by a Scan callback, ends the scan without error.
var ErrStopScan = errors.New("formats/iceberg: stop the scan")

// Scan reads the rows of a snapshot: every live data file in manifest
// order, in batches of up to 64 Ki rows, each with the columns its file
// has (a file written before a column was added lacks it; the table's
// name mapping says which column is which field). A read path for
// inspection (`tributary lake query`), not a query engine: no pruning, no
// projection pushdown, one file in memory at a time.
func (c *Catalog) Scan(ctx context.Context, snap *Snapshot, fn func(file string, rec arrow.Record) error) error {
	live, err := c.LiveFiles(snap)
	if err != nil {
		return err
	}
	for _, e := range live {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := c.scanFile(ctx, e.File.Path, func(rec arrow.Record) error { return fn(e.File.Path, rec) })
		if errors.Is(err, ErrStopScan) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *Catalog) scanFile(ctx context.Context, loc string, fn func(arrow.Record) error) error {
	b, err := c.FS.ReadFile(c.rel(loc))
	if err != nil {
		return fmt.Errorf("reading %s: %w", loc, err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("%s: %w", loc, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return fmt.Errorf("%s: %w", loc, err)
	}
	tbl, err := fr.ReadTable(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", loc, err)
	}
	defer tbl.Release()
	rd := array.NewTableReader(tbl, 64<<10)
	defer rd.Release()
	for rd.Next() {
		if err := fn(rd.Record()); err != nil {
			return err
		}
	}
	return rd.Err()
}
