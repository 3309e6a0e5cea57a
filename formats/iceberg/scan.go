package iceberg

import (
	"context"
	"errors"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
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

// ScanNamed is Scan with each file's top-level columns under the names
// md's current schema gives their field ids (from the file, else from the
// table's name mapping): a column renamed since a file was written reads
// under its new name, as Iceberg readers show it.
func (c *Catalog) ScanNamed(ctx context.Context, md *Metadata, snap *Snapshot, fn func(file string, rec arrow.Record) error) error {
	cur := md.CurrentSchema()
	mapping := parseMapping(md)
	var last, renamed *arrow.Schema
	return c.Scan(ctx, snap, func(file string, rec arrow.Record) error {
		if cur == nil {
			return fn(file, rec)
		}
		if s := rec.Schema(); s != last {
			last, renamed = s, currentNames(withMappedIDs(s, mapping), cur)
		}
		if renamed == nil {
			return fn(file, rec)
		}
		rec = array.NewRecord(renamed, rec.Columns(), rec.NumRows())
		defer rec.Release()
		return fn(file, rec)
	})
}

// currentNames is s with its top-level fields named as cur names their
// ids; nil when no name changes.
func currentNames(s *arrow.Schema, cur *Schema) *arrow.Schema {
	fields := s.Fields()
	changed := false
	for i, f := range fields {
		if tf, ok := cur.fieldByID(arrowFieldID(f)); ok && tf.Name != f.Name {
			fields[i].Name, changed = tf.Name, true
		}
	}
	if !changed {
		return nil
	}
	md := s.Metadata()
	return arrow.NewSchema(fields, &md)
}
