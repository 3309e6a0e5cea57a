package loader

import (
	"fmt"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"

	"github.com/tributary-io/tributary/formats/decode"
	"github.com/tributary-io/tributary/formats/schema"
)

// Formats the loader reads.
const (
	FormatJSON          = "json"
	FormatAvro          = "avro"
	FormatAvroConfluent = "avro-confluent"
	FormatRaw           = "raw"
	FormatProtobuf      = "protobuf" // with a registry only
)

// Columns added to every decoded (non-raw) file, so that each row says where
// it came from: readers deduplicate or audit by them, and the raw format
// has them already.
const (
	partitionColumn = "_partition"
	offsetColumn    = "_offset"
)

// newDecoder builds the decoder of a topic as the plan says.
func newDecoder(p *Plan, topic string) (decode.Decoder, error) {
	if p.Format == FormatRaw {
		return decode.NewRaw(memory.DefaultAllocator), nil
	}
	text, ok := p.Schemas[topic]
	if !ok {
		return nil, fmt.Errorf("plan %s has no schema for topic %q", p.Run, topic)
	}
	s, err := schema.Parse([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("schema of topic %q in plan %s: %w", topic, p.Run, err)
	}
	switch p.Format {
	case FormatProtobuf:
		return newRegistryJSON(p, s)
	case FormatJSON:
		if p.Registry != "" {
			return newRegistryJSON(p, s)
		}
		d, err := decode.NewJSON(s, memory.DefaultAllocator)
		if err != nil {
			return nil, err
		}
		d.CoerceStrings(p.Inferred[topic])
		return d, nil
	case FormatAvro:
		if p.Registry != "" {
			return registryAvro(p, s)
		}
		return decode.NewAvro(s, p.AvroSchema, memory.DefaultAllocator)
	case FormatAvroConfluent:
		files, err := decode.AvroSchemaDir(p.AvroDir)
		if err != nil {
			return nil, err
		}
		return decode.NewConfluentAvro(s, files, memory.DefaultAllocator)
	}
	return nil, fmt.Errorf("unknown format %q (want json, avro, avro-confluent or raw)", p.Format)
}

// withSource appends the _partition and _offset columns.
func withSource(rec arrow.Record, partition int32, offsets []int64) arrow.Record {
	if rec.Schema().HasField(offsetColumn) {
		return rec
	}
	mem := memory.DefaultAllocator
	pb := array.NewInt32Builder(mem)
	defer pb.Release()
	ob := array.NewInt64Builder(mem)
	defer ob.Release()
	pb.Reserve(len(offsets))
	for range offsets {
		pb.UnsafeAppend(partition)
	}
	ob.AppendValues(offsets, nil)
	pa, oa := pb.NewArray(), ob.NewArray()
	defer pa.Release()
	defer oa.Release()
	fields := append(rec.Schema().Fields(),
		arrow.Field{Name: partitionColumn, Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: offsetColumn, Type: arrow.PrimitiveTypes.Int64})
	md := rec.Schema().Metadata()
	cols := append(append([]arrow.Array{}, rec.Columns()...), pa, oa)
	return array.NewRecord(arrow.NewSchema(fields, &md), cols, rec.NumRows())
}

// outputSchema is the Arrow schema of a topic's files.
func outputSchema(d decode.Decoder, raw bool) *arrow.Schema {
	s := d.Schema()
	if raw {
		return s
	}
	md := s.Metadata()
	return arrow.NewSchema(append(s.Fields(),
		arrow.Field{Name: partitionColumn, Type: arrow.PrimitiveTypes.Int32},
		arrow.Field{Name: offsetColumn, Type: arrow.PrimitiveTypes.Int64}), &md)
}
