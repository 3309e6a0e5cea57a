package iceberg

import (
	"context"
	"fmt"
	"path"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"

	"github.com/tributary-io/tributary/formats/parquet"
)

// OffsetFilter selects the rows of offsets [From, To) of one Kafka
// partition of a topic, in the loader's files: they are named by the
// offsets they may hold (OffsetRange) and have the columns _partition and
// _offset.
type OffsetFilter struct {
	Topic     string
	Partition int32
	From, To  int64
}

// overwriteFiles applies an overwrite's filter to the live files: a file
// whose name says every row it may hold is selected is deleted whole; a
// file that may hold selected and other rows (a compaction's output, whose
// range covers its inputs') is rewritten without the selected rows, and
// the copy added. It returns the locations to delete and the files to add.
func (c *Catalog) overwriteFiles(live []Entry, f *OffsetFilter, spec PartitionSpec, wr dataWriting) (del []string, add []NewFile, err error) {
	for _, e := range live {
		topic, part, first, last, ok := OffsetRange(path.Base(e.File.Path))
		if !ok || topic != f.Topic || part != f.Partition || last < f.From || first >= f.To {
			continue
		}
		if first >= f.From && last < f.To {
			del = append(del, e.File.Path)
			continue
		}
		h, _ := hourOf(e, spec)
		nf, kept, err := c.withoutRows(e, f, h, wr)
		if err != nil {
			c.removeAll(add)
			return nil, nil, err
		}
		del = append(del, e.File.Path)
		if kept > 0 {
			nf.Identity = e.File.Partition // the copy's rows keep their values
			add = append(add, nf)
		}
	}
	return del, add, nil
}

// withoutRows writes a copy of e's file without the rows f selects, row
// group by row group, and says how many rows it kept (none: no file is
// left).
func (c *Catalog) withoutRows(e Entry, f *OffsetFilter, hour int32, wr dataWriting) (NewFile, int64, error) {
	d, err := c.openData(e.File.Path, e.File.SizeBytes, nil)
	if err != nil {
		return NewFile{}, 0, err
	}
	defer d.close()
	fs, err := d.schema()
	if err != nil {
		return NewFile{}, 0, err
	}
	schema := withMappedIDs(fs, wr.mapping)
	pi, oi := schema.FieldIndices("_partition"), schema.FieldIndices("_offset")
	if len(pi) != 1 || len(oi) != 1 {
		return NewFile{}, 0, fmt.Errorf("%s: no _partition and _offset columns to overwrite by", e.File.Path)
	}
	dir := path.Dir(c.rel(e.File.Path))
	base := path.Base(e.File.Path)
	topic, part, first, last, _ := OffsetRange(base)
	final := path.Join(dir, fmt.Sprintf("%s+%d+%d+%d.o%s.parquet", topic, part, first, last, uuid()[:8]))
	tmp := path.Join(dir, ".tmp-overwrite-"+uuid()+".parquet")
	w, err := c.FS.Create(tmp)
	if err != nil {
		return NewFile{}, 0, err
	}
	fail := func(err error) (NewFile, int64, error) {
		w.Close()
		c.FS.RemoveAll(tmp)
		return NewFile{}, 0, err
	}
	pw, err := parquet.NewWriter(w, schema, wr.options())
	if err != nil {
		return fail(err)
	}
	var kept int64
	err = d.each(context.Background(), func(rec arrow.Record) error {
		rec = array.NewRecord(schema, rec.Columns(), rec.NumRows())
		defer rec.Release()
		ps, ok1 := rec.Column(pi[0]).(*array.Int32)
		os, ok2 := rec.Column(oi[0]).(*array.Int64)
		if !ok1 || !ok2 {
			return fmt.Errorf("%s: _partition is %s and _offset %s, want int32 and int64", e.File.Path, rec.Column(pi[0]).DataType(), rec.Column(oi[0]).DataType())
		}
		// Runs of kept rows, written as slices.
		n := int(rec.NumRows())
		for i := 0; i < n; {
			if sel(ps, os, i, f) {
				i++
				continue
			}
			j := i
			for j < n && !sel(ps, os, j, f) {
				j++
			}
			s := rec.NewSlice(int64(i), int64(j))
			err := pw.Write(s)
			s.Release()
			if err != nil {
				return err
			}
			kept += int64(j - i)
			i = j
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	if _, err := pw.Close(); err != nil {
		return fail(err)
	}
	if err := w.Close(); err != nil {
		c.FS.RemoveAll(tmp)
		return NewFile{}, 0, err
	}
	if kept == 0 {
		c.FS.RemoveAll(tmp)
		return NewFile{}, 0, nil
	}
	if err := c.FS.RenameNoReplace(tmp, final); err != nil {
		c.FS.RemoveAll(tmp)
		return NewFile{}, 0, err
	}
	st, err := c.FS.Stat(final)
	if err != nil {
		return NewFile{}, 0, err
	}
	return NewFile{Path: final, Records: kept, Bytes: st.Size(), Hour: hour}, kept, nil
}

func sel(ps *array.Int32, os *array.Int64, i int, f *OffsetFilter) bool {
	return ps.Value(i) == f.Partition && os.Value(i) >= f.From && os.Value(i) < f.To
}
