package parquet

import (
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/util"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
)

// ErrClosed is returned by a Writer used after Close.
var ErrClosed = errors.New("formats/parquet: writer closed")

// Stats describe a written file.
type Stats struct {
	Rows      int64 // rows written
	Bytes     int64 // bytes written to the io.Writer, footer included
	RowGroups int   // row groups in the file
}

// Writer streams record batches of one Arrow schema into one Parquet file.
type Writer struct {
	opts   Options
	schema *arrow.Schema
	out    *countingWriter
	fw     *pqarrow.FileWriter
	rows   int64
	groups int
	open   bool // the current row group takes more rows
	ended  bool // the current row group is complete, not yet written
	// groupArrow is the Arrow (uncompressed, in-memory) size of the rows
	// of the current row group: pqarrow's buffered row group holds about
	// that much (compressed pages, dictionaries, encoder buffers).
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
	out := &countingWriter{w: w}
	props, arrowProps := opts.properties()
	fw, err := pqarrow.NewFileWriter(schema, out, props, arrowProps)
	if err != nil {
		return nil, fmt.Errorf("formats/parquet: %w", err)
	}
	return &Writer{opts: opts, schema: schema, out: out, fw: fw}, nil
}

// Schema is the Arrow schema every batch must have.
func (w *Writer) Schema() *arrow.Schema { return w.schema }

// Write appends rec's rows to the current row group, ending the row group
// when the Arrow size of its rows reaches Options.RowGroupBytes. rec stays
// the caller's. After an error the file is unusable: Close it and discard
// what was written.
func (w *Writer) Write(rec arrow.Record) error {
	if w.closed {
		return ErrClosed
	}
	if w.err != nil {
		return w.err
	}
	if rec.NumRows() == 0 {
		return nil
	}
	if w.ended {
		// Starting a buffered row group closes (writes) the current one;
		// pqarrow has no other way to end it before Close. It is done
		// here, not in Flush, so that no empty row group is ever written.
		w.fw.NewBufferedRowGroup()
		w.ended = false
		w.groupArrow = 0
		if w.out.err != nil {
			w.err = fmt.Errorf("formats/parquet: %w", w.out.err)
			return w.err
		}
	}
	if err := w.fw.WriteBuffered(rec); err != nil {
		w.err = fmt.Errorf("formats/parquet: %w", err)
		return w.err
	}
	if !w.open {
		w.groups++
	}
	w.open = true
	w.rows += rec.NumRows()
	// WriteBuffered itself starts row groups at MaxRowGroupRows; count them.
	if n, _ := w.fw.RowGroupNumRows(); int64(n) < rec.NumRows() && n > 0 {
		w.groups += int((rec.NumRows() - int64(n) + w.opts.MaxRowGroupRows - 1) / w.opts.MaxRowGroupRows)
	}
	w.groupArrow += util.TotalRecordSize(rec)
	if w.groupArrow >= w.opts.RowGroupBytes || w.fw.RowGroupTotalCompressedBytes() >= w.opts.RowGroupBytes {
		w.EndRowGroup()
	}
	return nil
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
// one page per column (Options.PageBytes before compression) is still in
// the column encoders, uncounted.
func (w *Writer) Buffered() int64 {
	if !w.open && !w.ended {
		return 0
	}
	return w.fw.RowGroupTotalCompressedBytes()
}

// Close flushes the last row group, writes the footer, and reports the
// file's rows and bytes. It does not close the io.Writer. Calling it again
// returns the same result.
func (w *Writer) Close() (Stats, error) {
	if w.closed {
		return w.stats, w.err
	}
	w.closed = true
	err := w.fw.Close()
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
