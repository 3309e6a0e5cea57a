package parquet

import (
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
)

// arrowEngine writes through arrow v15's pqarrow. Batches go to a buffered
// row group (WriteBuffered: pqarrow's Write starts a row group per batch,
// which is slower and makes tiny row groups).
type arrowEngine struct {
	fw *pqarrow.FileWriter
}

func newArrowEngine(out io.Writer, schema *arrow.Schema, opts Options) (*arrowEngine, error) {
	props, arrowProps := opts.properties()
	fw, err := pqarrow.NewFileWriter(schema, out, props, arrowProps)
	if err != nil {
		return nil, err
	}
	return &arrowEngine{fw: fw}, nil
}

func (e *arrowEngine) write(rec arrow.Record) error { return e.fw.WriteBuffered(rec) }

// flushRowGroup starts a new buffered row group, which closes (writes) the
// current one: pqarrow has no other way to end it before Close.
func (e *arrowEngine) flushRowGroup() error {
	e.fw.NewBufferedRowGroup()
	return nil
}

func (e *arrowEngine) buffered() int64 { return e.fw.RowGroupTotalCompressedBytes() }

func (e *arrowEngine) close() error { return e.fw.Close() }

func (c Codec) arrow() compress.Compression {
	switch c {
	case Zstd:
		return compress.Codecs.Zstd
	case Gzip:
		return compress.Codecs.Gzip
	case None:
		return compress.Codecs.Uncompressed
	}
	return compress.Codecs.Snappy
}

// Engine is the Parquet implementation behind a Writer.
type Engine string

const (
	// ParquetGo writes through github.com/parquet-go/parquet-go, column by
	// column from the Arrow arrays: the default, measured about twice as
	// fast as pqarrow end to end (docs/dependencies.md).
	ParquetGo Engine = "parquet-go"
	// PQArrow writes through arrow v15's pqarrow. It writes Parquet field
	// ids (FieldIDKey) on leaf columns only, not on structs, lists and
	// maps, which Iceberg readers that resolve by id need: the table
	// writers use ParquetGo.
	PQArrow Engine = "pqarrow"
)

// Engines lists the engines Options accepts, the default first.
var Engines = []Engine{ParquetGo, PQArrow}

// ParseEngine reads an engine name; the empty string means the default.
func ParseEngine(s string) (Engine, error) {
	switch e := Engine(strings.ToLower(strings.TrimSpace(s))); e {
	case "":
		return ParquetGo, nil
	case ParquetGo, PQArrow:
		return e, nil
	}
	return "", fmt.Errorf("formats/parquet: unknown engine %q: want parquet-go or pqarrow", s)
}

// properties are the pqarrow properties of o, defaults applied.
func (o Options) properties() (*parquet.WriterProperties, pqarrow.ArrowWriterProperties) {
	props := []parquet.WriterProperty{
		parquet.WithAllocator(o.Allocator),
		parquet.WithCompression(o.Codec.arrow()),
		parquet.WithDictionaryDefault(!o.NoDictionary && len(o.DictionaryColumns) == 0),
		parquet.WithStats(!o.NoStatistics),
		parquet.WithMaxRowGroupLength(o.MaxRowGroupRows),
		parquet.WithDataPageSize(o.PageBytes),
		parquet.WithDictionaryPageSizeLimit(o.DictionaryPageBytes),
		// Format 2.6 for logical types (TIMESTAMP with isAdjustedToUTC);
		// data pages v1, which every Hive and Spark version reads.
		parquet.WithVersion(parquet.V2_LATEST),
		parquet.WithDataPageVersion(parquet.DataPageV1),
		parquet.WithCreatedBy("tributary (parquet-go arrow v15)"),
		// pqarrow marks the root REPEATED by default; parquet-mr (Hive,
		// Spark) writes it REQUIRED, and some readers only accept that.
		parquet.WithRootRepetition(parquet.Repetitions.Required),
		parquet.WithRootName("schema"),
	}
	if o.Level != 0 {
		props = append(props, parquet.WithCompressionLevel(o.Level))
	}
	if !o.NoDictionary {
		for _, c := range o.DictionaryColumns {
			props = append(props, parquet.WithDictionaryFor(c, true))
		}
	}
	arrowProps := []pqarrow.WriterOption{pqarrow.WithAllocator(o.Allocator)}
	if !o.NoArrowSchema {
		arrowProps = append(arrowProps, pqarrow.WithStoreSchema())
	}
	return parquet.NewWriterProperties(props...), pqarrow.NewArrowWriterProperties(arrowProps...)
}
