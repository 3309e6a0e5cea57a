package parquet

import (
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/util"
)

// ErrClosed is returned by a Writer used after Close.
var ErrClosed = errors.New("formats/parquet: writer closed")

// Stats describe a written file.
type Stats struct {
	Rows      int64 // rows written
	Bytes     int64 // bytes written to the io.Writer, footer included
	RowGroups int   // row groups in the file
}

// engine is one Parquet implementation behind Writer. Writer decides where
// row groups end; an engine only buffers rows and writes what it is told.
type engine interface {
	// write appends rec's rows to the current row group.
	write(rec arrow.Record) error
	// flushRowGroup writes the current row group, which has rows, to the
	// io.Writer; the next write starts another.
	flushRowGroup() error
	// buffered is the compressed size of the completed pages of the
	// current row group.
	buffered() int64
	// close writes any row group left and the footer.
	close() error
}

// Writer streams record batches of one Arrow schema into one Parquet file.
type Writer struct {
	opts   Options
	schema *arrow.Schema
	out    *countingWriter
	eng    engine
	rows   int64
	groups int
	open   bool // the current row group takes more rows
	ended  bool // the current row group is complete, not yet written
	// groupRows and groupArrow are the rows of the current row group and
	// their Arrow (uncompressed, in-memory) size, which bounds what the
	// engine buffers for it (see Options.RowGroupBytes).
	groupRows  int64
	groupArrow int64
	err        error
	closed     bool
	stats      Stats
}

// NewWriter starts a Parquet file of the given schema on w; nothing is
// written before the first row group is flushed but the magic bytes. Close
// writes the footer; it does not close w.
func NewWriter(w io.Writer, schema *arrow.Schema, opts Options) (*Writer, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	pw := &Writer{opts: opts, schema: schema, out: &countingWriter{w: w}}
	if opts.NoDictionary || len(opts.DictionaryColumns) > 0 {
		if err := pw.start(opts); err != nil {
			return nil, err
		}
		return pw, nil
	}
	// The first batch chooses the dictionary columns (dictionary.go); the
	// schema is checked now.
	if _, _, err := pgoSchema(schema, func(string, pkind) bool { return false }); err != nil {
		return nil, fmt.Errorf("formats/parquet: %w", err)
	}
	return pw, nil
}

// start creates the engine.
func (w *Writer) start(opts Options) error {
	var err error
	switch opts.Engine {
	case PQArrow:
		w.eng, err = newArrowEngine(w.out, w.schema, opts)
	default:
		w.eng, err = newPgoEngine(w.out, w.schema, opts)
	}
	if err != nil {
		return fmt.Errorf("formats/parquet: %w", err)
	}
	return nil
}

// startWith creates the engine with the dictionary columns rec suggests.
func (w *Writer) startWith(rec arrow.Record) error {
	opts := w.opts
	if opts.DictionaryColumns = chooseDictionary(rec); len(opts.DictionaryColumns) == 0 {
		opts.NoDictionary = true
	}
	return w.start(opts)
}

// Schema is the Arrow schema every batch must have.
func (w *Writer) Schema() *arrow.Schema { return w.schema }

// Write appends rec's rows to the current row group, ending the row group
// when the Arrow size of its rows reaches Options.RowGroupBytes or its rows
// Options.MaxRowGroupRows (a batch is split for the latter). rec stays the
// caller's. After an error the file is unusable: Close it and discard what
// was written.
func (w *Writer) Write(rec arrow.Record) error {
	if w.closed {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	if !rec.Schema().Equal(w.schema) {
		w.err = fmt.Errorf("formats/parquet: batch schema %s differs from the file's %s", rec.Schema(), w.schema)
		return w.err
	}
	total := rec.NumRows()
	if total == 0 {
		return nil
	}
	if w.eng == nil {
		if err := w.startWith(rec); err != nil {
			w.err = err
			return err
		}
	}
	size := util.TotalRecordSize(rec)
	for off := int64(0); off < total; {
		if w.ended {
			// Done here, not in EndRowGroup, so that no empty row group
			// is ever written.
			if err := w.eng.flushRowGroup(); err != nil {
				return w.fail(err)
			}
			w.ended = false
			w.groupRows, w.groupArrow = 0, 0
			if w.out.err != nil {
				return w.fail(w.out.err)
			}
		}
		n := min(total-off, w.opts.MaxRowGroupRows-w.groupRows)
		part := rec
		if n < total {
			part = rec.NewSlice(off, off+n)
		}
		err := w.eng.write(part)
		if n < total {
			part.Release()
		}
		if err != nil {
			return w.fail(err)
		}
		if !w.open {
			w.groups++
			w.open = true
		}
		off += n
		w.rows += n
		w.groupRows += n
		w.groupArrow += size * n / total
		if w.groupRows >= w.opts.MaxRowGroupRows || w.groupArrow >= w.opts.RowGroupBytes ||
			w.eng.buffered() >= w.opts.RowGroupBytes {
			w.EndRowGroup()
		}
	}
	return nil
}

func (w *Writer) fail(err error) error {
	w.err = fmt.Errorf("formats/parquet: %w", err)
	return w.err
}

// EndRowGroup ends the current row group: the next rows go to a new one.
// The complete group is written to the io.Writer when the next batch
// arrives, or by Close.
func (w *Writer) EndRowGroup() {
	if w.open {
		w.open, w.ended = false, true
	}
}

// Rows is the number of rows written so far.
func (w *Writer) Rows() int64 { return w.rows }

// Bytes is the number of bytes written to the io.Writer so far.
func (w *Writer) Bytes() int64 { return w.out.n }

// Buffered is the compressed size of the completed pages of the row group
// not yet written, a lower bound of what it will add to the file: up to
// one page per column (Options.PageBytes before compression) and the
// dictionaries are still in the column encoders, uncounted.
func (w *Writer) Buffered() int64 {
	if !w.open && !w.ended {
		return 0
	}
	return w.eng.buffered()
}

// Close flushes the last row group, writes the footer, and reports the
// file's rows and bytes. It does not close the io.Writer. Calling it again
// returns the same result.
func (w *Writer) Close() (Stats, error) {
	if w.closed {
		return w.stats, w.err
	}
	w.closed = true
	if w.eng == nil {
		opts := w.opts
		opts.NoDictionary = true
		if err := w.start(opts); err != nil {
			w.err = err
			return Stats{}, err
		}
	}
	err := w.eng.close()
	if err == nil {
		err = w.out.err
	}
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("formats/parquet: %w", err)
	}
	w.stats = Stats{Rows: w.rows, Bytes: w.out.n, RowGroups: w.groups}
	return w.stats, w.err
}

// countingWriter counts the bytes written through it and keeps the first
// error, which pqarrow does not always return.
type countingWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countingWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	if err != nil {
		c.err = err
	}
	return n, err
}
