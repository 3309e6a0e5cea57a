package parquet

import (
	"fmt"
	"strings"

	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/apache/arrow/go/v15/parquet"
	"github.com/apache/arrow/go/v15/parquet/compress"
	"github.com/apache/arrow/go/v15/parquet/pqarrow"
)

// Codec is a Parquet page compression codec.
type Codec string

const (
	Snappy Codec = "snappy" // the default: fast, and what Hive and Spark write
	Zstd   Codec = "zstd"
	Gzip   Codec = "gzip"
	None   Codec = "none"
)

// Codecs lists the codecs Options accepts, the default first.
var Codecs = []Codec{Snappy, Zstd, Gzip, None}

// ParseCodec reads a codec name as a flag or config file gives it;
// "uncompressed" is a synonym of "none", the empty string means snappy.
func ParseCodec(s string) (Codec, error) {
	switch c := Codec(strings.ToLower(strings.TrimSpace(s))); c {
	case "":
		return Snappy, nil
	case "uncompressed":
		return None, nil
	case Snappy, Zstd, Gzip, None:
		return c, nil
	}
	return "", fmt.Errorf("formats/parquet: unknown codec %q: want snappy, zstd, gzip or none", s)
}

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

// Defaults of Options' zero fields.
const (
	DefaultRowGroupBytes       = 48 << 20
	DefaultPageBytes           = 64 << 10
	DefaultDictionaryPageBytes = 1 << 20
	DefaultMaxRowGroupRows     = 64 << 20
)

// Options configure a Writer. The zero value is the default: snappy,
// dictionary encoding and statistics on, row groups of 64 MiB of Arrow data
// (about 20 MiB of snappy Parquet for activity events), 1 MiB pages.
type Options struct {
	// Codec compresses the pages; empty means snappy.
	Codec Codec
	// Level is the codec's compression level; 0 is the codec's default.
	// gzip takes 1-9, zstd 1-22 (arrow v15 maps it to the nearest of
	// klauspost/compress's four speeds).
	Level int
	// NoDictionary turns dictionary encoding off for every column.
	// Otherwise a column is dictionary-encoded until its dictionary page
	// would outgrow DictionaryPageBytes, then it falls back to plain.
	NoDictionary bool
	// DictionaryColumns, when set, limits dictionary encoding to these
	// columns, named by their dotted Parquet path ("context.page.url";
	// a list's element is "tags.list.element"). High-cardinality columns
	// (ids, free text) gain nothing from a dictionary and cost its
	// hashing until the fallback to plain. Ignored with NoDictionary.
	DictionaryColumns []string
	// NoStatistics leaves out the min/max/null-count statistics that let
	// query engines skip pages and row groups.
	NoStatistics bool
	// RowGroupBytes ends a row group once the Arrow (in-memory,
	// uncompressed) size of its rows reaches this size. It bounds the
	// memory a writer holds: a row group is buffered until it is complete,
	// because each column chunk is contiguous, and pqarrow's buffered row
	// group measured about 1.1 times the Arrow size of its rows. The row
	// group in the file is smaller by the compression and encoding ratio
	// (about 3x for activity events with snappy).
	RowGroupBytes int64
	// MaxRowGroupRows ends a row group at this many rows, whatever its size.
	MaxRowGroupRows int64
	// PageBytes is the target size of a data page before compression.
	// The default, 64 KiB, is below parquet-mr's 1 MiB because arrow v15
	// grows its level and value buffers in small steps, at a cost that
	// rises with the page size: 64 KiB pages wrote activity events 25-45%
	// faster than 1 MiB ones, with files 0.7% larger.
	PageBytes int64
	// DictionaryPageBytes is the largest dictionary page before a column
	// falls back to plain encoding.
	DictionaryPageBytes int64
	// NoArrowSchema leaves the Arrow schema (ARROW:schema) out of the footer.
	NoArrowSchema bool
	// Allocator allocates the writer's buffers; nil is Go's heap.
	Allocator memory.Allocator
}

// withDefaults returns o with its zero fields set to the defaults.
func (o Options) withDefaults() Options {
	if o.Codec == "" {
		o.Codec = Snappy
	}
	if o.RowGroupBytes == 0 {
		o.RowGroupBytes = DefaultRowGroupBytes
	}
	if o.MaxRowGroupRows == 0 {
		o.MaxRowGroupRows = DefaultMaxRowGroupRows
	}
	if o.PageBytes == 0 {
		o.PageBytes = DefaultPageBytes
	}
	if o.DictionaryPageBytes == 0 {
		o.DictionaryPageBytes = DefaultDictionaryPageBytes
	}
	if o.Allocator == nil {
		o.Allocator = memory.DefaultAllocator
	}
	return o
}

// Validate reports the first invalid option.
func (o Options) Validate() error {
	if _, err := ParseCodec(string(o.Codec)); err != nil {
		return err
	}
	if o.Level < 0 || (o.Codec == Gzip && o.Level > 9) || (o.Codec == Zstd && o.Level > 22) {
		return fmt.Errorf("formats/parquet: compression level %d out of range for %s", o.Level, o.Codec)
	}
	for _, v := range []struct {
		name string
		v    int64
	}{
		{"row group bytes", o.RowGroupBytes},
		{"max row group rows", o.MaxRowGroupRows},
		{"page bytes", o.PageBytes},
		{"dictionary page bytes", o.DictionaryPageBytes},
	} {
		if v.v < 0 {
			return fmt.Errorf("formats/parquet: %s is negative (%d)", v.name, v.v)
		}
	}
	return nil
}

// String renders the options with defaults applied, as
// "codec=snappy level=0 dictionary=true ...".
func (o Options) String() string {
	d := o.withDefaults()
	dict := fmt.Sprint(!d.NoDictionary)
	if !d.NoDictionary && len(d.DictionaryColumns) > 0 {
		dict = strings.Join(d.DictionaryColumns, ",")
	}
	return fmt.Sprintf("codec=%s level=%d dictionary=%s statistics=%t row-group-bytes=%d max-row-group-rows=%d page-bytes=%d dictionary-page-bytes=%d arrow-schema=%t",
		d.Codec, d.Level, dict, !d.NoStatistics, d.RowGroupBytes, d.MaxRowGroupRows, d.PageBytes, d.DictionaryPageBytes, !d.NoArrowSchema)
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
