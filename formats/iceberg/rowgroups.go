package iceberg

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
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
	pf     *file.Reader
	fr     *pqarrow.FileReader
	closer io.Closer
}

// openData opens the data file at loc, size bytes: from b when the caller
// read it already, else at offsets through the file system (the footer,
// then a row group's column chunks at a time), or whole when the file
// system cannot read at an offset.
func (c *Catalog) openData(loc string, size int64, b []byte) (*dataFile, error) {
	d := &dataFile{loc: loc}
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
	pf, err := file.NewParquetReader(src)
	if err != nil {
		d.close()
		return nil, fmt.Errorf("%s: %w", loc, err)
	}
	d.pf = pf
	if d.fr, err = pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator); err != nil {
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

// each calls fn with the file's rows, in batches of up to 64 Ki rows, one
// row group decoded at a time.
func (d *dataFile) each(ctx context.Context, fn func(arrow.Record) error) error {
	cols := make([]int, d.pf.MetaData().Schema.NumColumns())
	for i := range cols {
		cols[i] = i
	}
	for g := 0; g < d.pf.NumRowGroups(); g++ {
		tbl, err := d.fr.ReadRowGroups(ctx, cols, []int{g})
		if err != nil {
			return fmt.Errorf("%s: row group %d: %w", d.loc, g, err)
		}
		err = eachBatch(tbl, fn)
		tbl.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

func eachBatch(tbl arrow.Table, fn func(arrow.Record) error) error {
	rd := array.NewTableReader(tbl, 64<<10)
	defer rd.Release()
	for rd.Next() {
		if err := fn(rd.Record()); err != nil {
			return err
		}
	}
	return rd.Err()
}
