package iceberg

import (
	"context"
	"errors"

	"github.com/apache/arrow/go/v15/arrow"
)

// ErrStopScan, returned by a Scan callback, ends the scan without error.
var ErrStopScan = errors.New("formats/iceberg: stop the scan")

// Scan reads the rows of a snapshot: every live data file in manifest
// order, in batches of up to 64 Ki rows, each with the columns its file
// has (a file written before a column was added lacks it; the table's
// name mapping says which column is which field). A read path for
// inspection (`tributary lake query`), not a query engine: no pruning, no
// projection pushdown, one row group in memory at a time.
func (c *Catalog) Scan(ctx context.Context, snap *Snapshot, fn func(file string, rec arrow.Record) error) error {
	live, err := c.LiveFiles(snap)
	if err != nil {
		return err
	}
	for _, e := range live {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := c.scanFile(ctx, e, func(rec arrow.Record) error { return fn(e.File.Path, rec) })
		if errors.Is(err, ErrStopScan) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (c *Catalog) scanFile(ctx context.Context, e Entry, fn func(arrow.Record) error) error {
	d, err := c.openData(e.File.Path, e.File.SizeBytes, nil)
	if err != nil {
		return err
	}
	defer d.close()
	return d.each(ctx, fn)
}
