package iceberg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/apache/arrow/go/v15/arrow"
	apq "github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"

	"github.com/tributary-io/tributary/formats/parquet"
)

// Reading and writing data files row group by row group, so that a
// compaction, an overwrite or a scan holds one input row group decoded
// (and the output's row group) however large the files are, instead of
// whole files (docs/iceberg.md, "Memory").

// PropRowGroupSize is Iceberg's table property for the row group size of
// the files the maintenance jobs write. Our writer ends a row group at
// this many bytes of Arrow (in-memory) data, which bounds what it holds;
// the row group in the file is smaller by the compression ratio.
const PropRowGroupSize = "write.parquet.row-group-size-bytes"

// dataWriting is how the maintenance jobs write a table's data files.
type dataWriting struct {
	codec         parquet.Codec
	rowGroupBytes int64
	// mapping gives the columns of a file written without field ids
	// theirs (withMappedIDs).
	mapping []mapped
}

func writingFor(md *Metadata) (dataWriting, error) {
	codec, err := parquet.ParseCodec(md.Properties[PropCodec])
	if err != nil {
		return dataWriting{}, fmt.Errorf("formats/iceberg: table property %s: %w", PropCodec, err)
	}
	w := dataWriting{codec: codec, mapping: parseMapping(md)}
	if v, ok := md.Properties[PropRowGroupSize]; ok {
		if w.rowGroupBytes, err = strconv.ParseInt(v, 10, 64); err != nil || w.rowGroupBytes <= 0 {
			return dataWriting{}, fmt.Errorf("formats/iceberg: table property %s=%q: want a byte count", PropRowGroupSize, v)
		}
	}
	return w, nil
}

func (w dataWriting) options() parquet.Options {
	return parquet.Options{Codec: w.codec, RowGroupBytes: w.rowGroupBytes}
}

// dataFile is a Parquet data file open for reading by row groups.
type dataFile struct {
	loc    string
	mem    *budgetAllocator
	pf     *file.Reader
	fr     *pqarrow.FileReader
	closer io.Closer
}

// openData opens the data file at loc, size bytes: from b when the caller
// read it already, else at offsets through the file system (the footer,
// then a row group's column chunks at a time), or whole when the file
// system cannot read at an offset.
func (c *Catalog) openData(loc string, size int64, b []byte) (*dataFile, error) {
	d := &dataFile{loc: loc, mem: newBudgetAllocator(c.decodeBudget())}
	var src apq.ReaderAtSeeker
	if b != nil {
		src = bytes.NewReader(b)
	} else {
		r, err := c.FS.Open(c.rel(loc))
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", loc, err)
		}
		if ra, ok := r.(io.ReaderAt); ok && size > 0 {
			src, d.closer = &sizedReaderAt{ra, size}, r
		} else {
			r.Close()
			if b, err = c.FS.ReadFile(c.rel(loc)); err != nil {
				return nil, fmt.Errorf("reading %s: %w", loc, err)
			}
			src = bytes.NewReader(b)
		}
	}
	// Column chunks are read through a buffer, not whole, and decoded
	// into d.mem: the footer is no bound (a row group's declared size is
	// of its encoded pages), what is held at once is.
	props := apq.NewReaderProperties(d.mem)
	props.BufferedStreamEnabled, props.BufferSize = true, readBufferBytes
	var pf *file.Reader
	err := d.guard(func() (err error) {
		pf, err = file.NewParquetReader(src, file.WithReadProps(props))
		return err
	})
	if err != nil {
		d.close()
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	d.pf = pf
	if d.fr, err = pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: decodeBatchRows}, d.mem); err != nil {
		d.close()
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	return d, nil
}

func (d *dataFile) close() {
	if d.pf != nil {
		d.pf.Close()
	}
	if d.closer != nil {
		d.closer.Close()
	}
}

func (d *dataFile) rows() int64 { return d.pf.NumRows() }

// schema is the file's Arrow schema, its columns' field ids in their
// metadata (parquet.FieldIDKey, -1 for none).
func (d *dataFile) schema() (*arrow.Schema, error) {
	s, err := d.fr.Schema()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.loc, err)
	}
	return s, nil
}

// each calls fn with the file's rows, in batches of decodeBatchRows rows
// decoded one at a time (a record reader, never a whole row group), within
// the decode budget.
func (d *dataFile) each(ctx context.Context, fn func(arrow.Record) error) error {
	for g := 0; g < d.pf.NumRowGroups(); g++ {
		err := d.guard(func() error {
			rr, err := d.fr.GetRecordReader(ctx, nil, []int{g})
			if err != nil {
				return err
			}
			defer rr.Release()
			for rr.Next() {
				if err := fn(rr.Record()); err != nil {
					return callerErr{err}
				}
			}
			if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
				return err
			}
			return nil
		})
		var ce callerErr
		if errors.As(err, &ce) {
			return ce.error
		}
		if err != nil {
			return fmt.Errorf("%s: row group %d: %w", d.loc, g, err)
		}
	}
	return nil
}

// callerErr is fn's error in each, returned as it is.
type callerErr struct{ error }

func (e callerErr) Unwrap() error { return e.error }

// guard runs fn, turning the decode budget's panic into an error naming
// the file.
func (d *dataFile) guard(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			o, ok := r.(overBudget)
			if !ok {
				panic(r)
			}
			err = fmt.Errorf("refused: %w", o)
		}
	}()
	return fn()
}
