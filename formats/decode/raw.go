package decode

import (
	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// RawSchema is the Arrow schema of the raw decoder: a record as the broker
// stores it, with no schema of its own.
//
//	topic      string, not null
//	partition  int32, not null
//	offset     int64, not null
//	timestamp  timestamp(ms, UTC), not null
//	key        binary, null when the record has no key
//	value      binary, null for a tombstone
//	headers    list<struct<key: string, value: binary (nullable)>>, not null
//
// Headers are a list of key/value structs rather than a map: Kafka headers
// are ordered and may repeat a key, and a Parquet map must not repeat one.
// Hive, Spark, Trino and pyarrow all read a list of structs.
var RawSchema = arrow.NewSchema([]arrow.Field{
	{Name: "topic", Type: arrow.BinaryTypes.String},
	{Name: "partition", Type: arrow.PrimitiveTypes.Int32},
	{Name: "offset", Type: arrow.PrimitiveTypes.Int64},
	{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
	{Name: "key", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "value", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "headers", Type: arrow.ListOfField(arrow.Field{Name: "element", Type: rawHeaderType})},
}, nil)

var rawHeaderType = arrow.StructOf(
	arrow.Field{Name: "key", Type: arrow.BinaryTypes.String},
	arrow.Field{Name: "value", Type: arrow.BinaryTypes.Binary, Nullable: true},
)

// Raw decodes any record: it never reports an error.
type Raw struct {
	rb        *array.RecordBuilder
	topic     *array.StringBuilder
	partition *array.Int32Builder
	offset    *array.Int64Builder
	ts        *array.TimestampBuilder
	key       *array.BinaryBuilder
	value     *array.BinaryBuilder
	headers   *array.ListBuilder
	hdr       *array.StructBuilder
	hkey      *array.StringBuilder
	hval      *array.BinaryBuilder
}

// NewRaw returns a raw decoder that allocates from mem (nil: the Go heap).
func NewRaw(mem memory.Allocator) *Raw {
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	rb := array.NewRecordBuilder(mem, RawSchema)
	d := &Raw{
		rb:        rb,
		topic:     rb.Field(0).(*array.StringBuilder),
		partition: rb.Field(1).(*array.Int32Builder),
		offset:    rb.Field(2).(*array.Int64Builder),
		ts:        rb.Field(3).(*array.TimestampBuilder),
		key:       rb.Field(4).(*array.BinaryBuilder),
		value:     rb.Field(5).(*array.BinaryBuilder),
		headers:   rb.Field(6).(*array.ListBuilder),
	}
	d.hdr = d.headers.ValueBuilder().(*array.StructBuilder)
	d.hkey = d.hdr.FieldBuilder(0).(*array.StringBuilder)
	d.hval = d.hdr.FieldBuilder(1).(*array.BinaryBuilder)
	return d
}

// Schema implements Decoder.
func (d *Raw) Schema() *arrow.Schema { return RawSchema }

var _ Decoder = (*Raw)(nil)

// Decode implements Decoder; it never returns an error. Invalid UTF-8 in a
// topic or header key is replaced by U+FFFD, as encoding/json does.
func (d *Raw) Decode(recs []Record) []RecordError {
	for i := range recs {
		r := &recs[i]
		d.topic.Append(validUTF8(r.Topic))
		d.partition.Append(r.Partition)
		d.offset.Append(r.Offset)
		d.ts.Append(arrow.Timestamp(r.Timestamp))
		appendNullableBytes(d.key, r.Key)
		appendNullableBytes(d.value, r.Value)
		d.headers.Append(true)
		for _, h := range r.Headers {
			d.hdr.Append(true)
			d.hkey.Append(validUTF8(h.Key))
			appendNullableBytes(d.hval, h.Value)
		}
	}
	return nil
}

// Flush implements Decoder.
func (d *Raw) Flush() arrow.Record {
	if d.topic.Len() == 0 {
		return nil
	}
	return d.rb.NewRecord()
}

// Release frees the builders' memory.
func (d *Raw) Release() { d.rb.Release() }

func appendNullableBytes(b *array.BinaryBuilder, v []byte) {
	if v == nil {
		b.AppendNull()
		return
	}
	b.Append(v)
}
