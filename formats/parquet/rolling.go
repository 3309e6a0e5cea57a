package parquet

import (
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow/go/v15/arrow"
)

// OpenFunc opens the n-th file of a RollingWriter (n counts from 0).
// RollingWriter closes what it returns once the file is complete.
type OpenFunc func(n int) (io.WriteCloser, error)

// FileStats are the Stats of one file of a RollingWriter.
type FileStats struct {
	Index int
	Stats
}

// RollingWriter writes record batches into a sequence of Parquet files,
// starting the next file once the current one reaches a target size. Rows
// are never split across files within a batch: a file ends after the batch
// that brings it to the target, so files come out slightly larger than the
// target, by at most one batch's compressed size plus a footer. The size
// is known from completed pages only (see Writer.Buffered), so with
// PageBytes large against the target, files overshoot by up to a page per
// column: keep PageBytes well below targetBytes / columns.
type RollingWriter struct {
	schema *arrow.Schema
	opts   Options
	target int64
	open   OpenFunc
	onRoll func(FileStats)

	cur   *Writer
	curWC io.WriteCloser
	files []FileStats
	err   error
	done  bool
}

// NewRollingWriter returns a writer that opens files with open as rows
// arrive and rolls to the next at targetBytes (0: never). onRoll, if not
// nil, is called after each file is completed and closed, the last one
// included, so that a loader can commit files as they are done.
func NewRollingWriter(schema *arrow.Schema, opts Options, targetBytes int64, open OpenFunc, onRoll func(FileStats)) (*RollingWriter, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if targetBytes < 0 {
		return nil, fmt.Errorf("formats/parquet: negative target file size %d", targetBytes)
	}
	opts = opts.withDefaults()
	// A row group never spans files; keep them no larger than a file.
	if targetBytes > 0 && opts.RowGroupBytes > targetBytes {
		opts.RowGroupBytes = targetBytes
	}
	return &RollingWriter{schema: schema, opts: opts, target: targetBytes, open: open, onRoll: onRoll}, nil
}

// Write appends rec to the current file, opening one first if needed, and
// completes the file if it reached the target size.
func (r *RollingWriter) Write(rec arrow.Record) error {
	if r.done {
		return ErrClosed
	}
	if r.err != nil {
		return r.err
	}
	if rec.NumRows() == 0 {
		return nil
	}
	if r.cur == nil {
		wc, err := r.open(len(r.files))
		if err != nil {
			r.err = fmt.Errorf("formats/parquet: open file %d: %w", len(r.files), err)
			return r.err
		}
		w, err := NewWriter(wc, r.schema, r.opts)
		if err != nil {
			wc.Close()
			r.err = err
			return err
		}
		r.cur, r.curWC = w, wc
	}
	if err := r.cur.Write(rec); err != nil {
		r.err = err
		return err
	}
	if r.target > 0 && r.cur.Bytes()+r.cur.Buffered() >= r.target {
		return r.finish()
	}
	return nil
}

// finish completes and closes the current file.
func (r *RollingWriter) finish() error {
	st, err := r.cur.Close()
	err = errors.Join(err, r.curWC.Close())
	fs := FileStats{Index: len(r.files), Stats: st}
	r.cur, r.curWC = nil, nil
	if err != nil {
		r.err = fmt.Errorf("formats/parquet: file %d: %w", fs.Index, err)
		return r.err
	}
	r.files = append(r.files, fs)
	if r.onRoll != nil {
		r.onRoll(fs)
	}
	return nil
}

// Files are the files completed so far.
func (r *RollingWriter) Files() []FileStats { return r.files }

// Close completes the current file, if any, and returns every file's
// stats. No rows, no file: a RollingWriter never leaves an empty file.
// After a write error the current file is closed incomplete (no footer)
// and is not in the list: the caller deletes it.
func (r *RollingWriter) Close() ([]FileStats, error) {
	if r.done {
		return r.files, r.err
	}
	r.done = true
	if r.cur != nil {
		if r.err != nil {
			r.cur.Close()
			r.curWC.Close()
			r.cur, r.curWC = nil, nil
		} else {
			r.finish()
		}
	}
	return r.files, r.err
}
