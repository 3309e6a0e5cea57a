package parquet

import (
	"fmt"
	"strings"

	"github.com/apache/arrow/go/v15/arrow/memory"
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

// Defaults of Options' zero fields.
const (
	DefaultRowGroupBytes       = 48 << 20
	DefaultPageBytes           = 256 << 10 // parquet-go; pqarrow: DefaultArrowPageBytes
	DefaultArrowPageBytes      = 64 << 10
	DefaultDictionaryPageBytes = 1 << 20
	DefaultMaxRowGroupRows     = 64 << 20
)

// Options configure a Writer. The zero value is the default: the
// parquet-go engine, snappy, dictionaries where the first batch's values
// repeat, statistics on, row groups of 48 MiB of Arrow data (about 14 MiB
// of snappy Parquet for BenchmarkPeakHeap's events), 256 KiB pages.
type Options struct {
	// Engine is the Parquet implementation; empty means parquet-go. Both
	// write the same schema, logical types and footer.
	Engine Engine
	// Codec compresses the pages; empty means snappy.
	Codec Codec
	// Level is the codec's compression level; 0 is the codec's default.
	// gzip takes 1-9, zstd 1-22 (mapped to the nearest of
	// klauspost/compress's four zstd speeds).
	Level int
	// NoDictionary turns dictionary encoding off for every column.
	// Otherwise a dictionary-encoded column stays so until its dictionary
	// page would outgrow DictionaryPageBytes, then it falls back to plain.
	NoDictionary bool
	// DictionaryColumns, when set, are the columns that get a dictionary,
	// named by their dotted Parquet path ("context.page.url"; a list's
	// element is "tags.list.element", a map's "attrs.key_value.key" and
	// "attrs.key_value.value"). When empty, the first batch written
	// decides: columns whose values repeat get one, the others (ids, URLs,
	// timestamps, JSON text), which gain nothing from a dictionary and
	// cost its hashing until the fallback, do not (see dictionary.go).
	// Ignored with NoDictionary.
	DictionaryColumns []string
	// NoStatistics leaves out the min/max/null-count statistics that let
	// query engines skip pages and row groups.
	NoStatistics bool
	// RowGroupBytes ends a row group once the Arrow (in-memory,
	// uncompressed) size of its rows reaches this size. It bounds the
	// memory a writer holds: a row group is buffered until it is complete,
	// because each column chunk is contiguous. parquet-go holds it
	// compressed (plus a page per column and the dictionaries); pqarrow's
	// buffered row group measured about 1.1 times the Arrow size of its
	// rows. The row group in the file is smaller by the compression and
	// encoding ratio (about 3.5x in BenchmarkPeakHeap, with snappy).
	RowGroupBytes int64
	// MaxRowGroupRows ends a row group at this many rows, whatever its size.
	MaxRowGroupRows int64
	// PageBytes is the target size of a data page before compression.
	// The default is 256 KiB with parquet-go (smaller files and faster
	// than 64 KiB, measured on activity events) and 64 KiB with pqarrow,
	// below parquet-mr's 1 MiB because arrow v15 grows its level and value
	// buffers in small steps, at a cost that rises with the page size:
	// 64 KiB pages wrote activity events 25-45% faster than 1 MiB ones,
	// with files 0.7% larger.
	PageBytes int64
	// DictionaryPageBytes is the largest dictionary page before a column
	// falls back to plain encoding.
	DictionaryPageBytes int64
	// NoArrowSchema leaves the Arrow schema (ARROW:schema) out of the footer.
	NoArrowSchema bool
	// Allocator allocates pqarrow's buffers; nil is Go's heap. The
	// parquet-go engine allocates from Go's heap.
	Allocator memory.Allocator
}

// withDefaults returns o with its zero fields set to the defaults.
func (o Options) withDefaults() Options {
	if o.Engine == "" {
		o.Engine = ParquetGo
	}
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
		if o.Engine == PQArrow {
			o.PageBytes = DefaultArrowPageBytes
		}
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
	if _, err := ParseEngine(string(o.Engine)); err != nil {
		return err
	}
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
	dict := "auto"
	if d.NoDictionary {
		dict = "false"
	} else if len(d.DictionaryColumns) > 0 {
		dict = strings.Join(d.DictionaryColumns, ",")
	}
	return fmt.Sprintf("engine=%s codec=%s level=%d dictionary=%s statistics=%t row-group-bytes=%d max-row-group-rows=%d page-bytes=%d dictionary-page-bytes=%d arrow-schema=%t",
		d.Engine, d.Codec, d.Level, dict, !d.NoStatistics, d.RowGroupBytes, d.MaxRowGroupRows, d.PageBytes, d.DictionaryPageBytes, !d.NoArrowSchema)
}
