package iceberg

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/file"
	"github.com/apache/arrow/go/v15/parquet/metadata"
	"github.com/apache/arrow/go/v15/parquet/schema"
)

// Column statistics of a data file, in its manifest entry: value and null
// counts and lower and upper bounds per field id, so that readers skip a
// file whose bounds exclude a filter's values (pyiceberg's and Spark's
// metrics evaluators). They come from the Parquet footer's column chunk
// statistics, summed and bounded over the row groups.
//
// Bounds are in Iceberg's single-value serialization, which for the
// types below is the bytes Parquet's plain encoding gives its min and max
// (little-endian ints and floats, UTF-8 strings), so they are copied as
// they are. A column gets bounds only when its Parquet type is exactly
// the table's current type (no bounds for a file written before an int
// was widened to long, for decimals, or for timestamps not in
// microseconds), top-level columns only; counts for every top-level
// primitive column.

// KV is one entry of an Iceberg map<int, long> in a manifest.
type KV struct {
	Key   int32 `avro:"key"`
	Value int64 `avro:"value"`
}

// KB is one entry of an Iceberg map<int, binary> in a manifest.
type KB struct {
	Key   int32  `avro:"key"`
	Value []byte `avro:"value"`
}

// readFooter reads the footer of the Parquet file at name. A file system
// whose files cannot be read at an offset gives none (nil, nil).
func (c *Catalog) readFooter(name string, size int64) (*metadata.FileMetaData, error) {
	r, err := c.FS.Open(name)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	ra, ok := r.(io.ReaderAt)
	if !ok {
		return nil, nil
	}
	pf, err := file.NewParquetReader(&sizedReaderAt{ra, size})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	defer pf.Close()
	return pf.MetaData(), nil
}

// columnStats are the statistics of a file, from its footer md, by the
// field ids of schema (the file's ids, or matched by column name as the
// table's name mapping does).
func columnStats(md *metadata.FileMetaData, s *Schema) (*DataFile, error) {
	sch := md.Schema
	out := &DataFile{}
	var vc, nc []KV
	var lo, hi []KB
	for col := 0; col < sch.NumColumns(); col++ {
		leaf := sch.Column(col)
		if leaf.ColumnPath().String() != leaf.Name() {
			continue // nested
		}
		// By the file's field id when it has one (a column renamed since
		// keeps it), else by name, as the name mapping reads it.
		f, ok := s.fieldByID(int(leaf.SchemaNode().FieldID()))
		if !ok {
			f, ok = s.Field(leaf.Name())
		}
		if !ok {
			continue
		}
		var values, nulls int64
		var merged metadata.TypedStatistics
		bounded := boundsType(leaf, f.Type.Primitive)
		for g := 0; g < len(md.RowGroups); g++ {
			cc, err := md.RowGroup(g).ColumnChunk(col)
			if err != nil {
				return nil, err
			}
			values += cc.NumValues()
			st, err := cc.Statistics()
			if err != nil || st == nil || !st.HasNullCount() {
				bounded, nulls = false, -1
				break
			}
			nulls += st.NullCount()
			switch {
			case !st.HasMinMax():
				// An all-null chunk has no bounds; any other chunk
				// without them leaves the file without bounds.
				bounded = bounded && st.NullCount() == cc.NumValues()
			case merged == nil:
				merged = st
			default:
				merged.Merge(st)
			}
		}
		var min, max []byte
		if bounded && merged != nil && merged.HasMinMax() {
			min, max = merged.EncodeMin(), merged.EncodeMax()
		}
		id := int32(f.ID)
		vc = append(vc, KV{id, values})
		if nulls >= 0 {
			nc = append(nc, KV{id, nulls})
		}
		if bounded && min != nil {
			lo = append(lo, KB{id, min})
			hi = append(hi, KB{id, max})
		}
	}
	out.ValueCounts, out.NullCounts = &vc, &nc
	out.LowerBounds, out.UpperBounds = &lo, &hi
	return out, nil
}

// boundsType says whether a Parquet column's min and max serialize as the
// Iceberg type t's bounds.
func boundsType(c *schema.Column, t string) bool {
	lt := c.LogicalType()
	plain := lt == nil || !lt.IsValid()
	if _, ok := lt.(schema.NoLogicalType); ok {
		plain = true
	}
	intOf := func(bits int8) bool {
		switch it := lt.(type) {
		case schema.IntLogicalType:
			return it.BitWidth() == bits && it.IsSigned()
		case *schema.IntLogicalType:
			return it.BitWidth() == bits && it.IsSigned()
		}
		return plain
	}
	switch c.PhysicalType() {
	case parquet.Types.Int32:
		_, date := lt.(schema.DateLogicalType)
		_, pdate := lt.(*schema.DateLogicalType)
		date = date || pdate
		return t == "int" && intOf(32) || t == "date" && date
	case parquet.Types.Int64:
		if t == "long" {
			return intOf(64)
		}
		if t == "timestamptz" || t == "timestamp" {
			ts, ok := lt.(interface {
				TimeUnit() schema.TimeUnitType
				IsAdjustedToUTC() bool
			})
			_, isTime := lt.(*schema.TimeLogicalType)
			return ok && !isTime && ts.TimeUnit() == schema.TimeUnitMicros && ts.IsAdjustedToUTC() == (t == "timestamptz")
		}
	case parquet.Types.Double:
		return t == "double"
	case parquet.Types.Float:
		return t == "float"
	case parquet.Types.ByteArray:
		_, ok := lt.(schema.StringLogicalType)
		_, pok := lt.(*schema.StringLogicalType)
		return t == "string" && (ok || pok)
	}
	return false
}

// sizedReaderAt is a file for the Parquet reader, which finds the footer
// from the size.
type sizedReaderAt struct {
	io.ReaderAt
	size int64
}

func (r *sizedReaderAt) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekEnd:
		return r.size + offset, nil
	case io.SeekStart:
		return offset, nil
	}
	return 0, fmt.Errorf("formats/iceberg: seek whence %d", whence)
}

func (r *sizedReaderAt) Read([]byte) (int, error) {
	return 0, fmt.Errorf("formats/iceberg: sequential read of a Parquet footer")
}

// filesStats reads the statistics of the files, 8 at a time; a file whose
// footer cannot be read gets none (the statistics are an optimization for
// readers, and the commit does not wait on them to be perfect).
func (c *Catalog) filesStats(files []NewFile, s *Schema) []*DataFile {
	return statsOf(c.footers(files)(), s)
}

// footers starts reading the footers of the files, 8 at a time, and
// returns the function that waits for them: an append reads them while
// it loads the table (on HDFS each is a NameNode and a DataNode round
// trip, and the load a few more), not after.
func (c *Catalog) footers(files []NewFile) func() []*metadata.FileMetaData {
	out := make([]*metadata.FileMetaData, len(files))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, f := range files {
		if !strings.HasSuffix(f.Path, ".parquet") {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if md, err := c.readFooter(f.Path, f.Bytes); err == nil {
				out[i] = md
			}
		}()
	}
	return func() []*metadata.FileMetaData {
		wg.Wait()
		return out
	}
}

// statsOf are the statistics of the files whose footers are mds (nil:
// none) by the field ids of s.
func statsOf(mds []*metadata.FileMetaData, s *Schema) []*DataFile {
	out := make([]*DataFile, len(mds))
	for i, md := range mds {
		if md != nil {
			if st, err := columnStats(md, s); err == nil {
				out[i] = st
			}
		}
	}
	return out
}

// withStats copies the statistics of st (if any) into d.
func withStats(d DataFile, st *DataFile) DataFile {
	if st != nil {
		d.ValueCounts, d.NullCounts, d.LowerBounds, d.UpperBounds = st.ValueCounts, st.NullCounts, st.LowerBounds, st.UpperBounds
	}
	return d
}
