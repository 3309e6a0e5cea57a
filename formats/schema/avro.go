package schema

import (
	"fmt"

	"github.com/hamba/avro/v2"
)

// FromAvro maps an Avro record schema to the Tributary schema whose
// columns the Avro decoder (formats/decode) fills: the table schema of a
// topic whose writers register Avro in a schema registry.
//
//	string, enum            string
//	int / date              int32 / date
//	long / timestamp-millis, -micros   int64 / timestamp(ms, us)
//	float, double, boolean  float, double, bool
//	bytes, fixed            bytes (decimal: string, its exact text)
//	array, map, record      list, map, struct
//	["null", T]             T, nullable
//
// A union of two or more non-null types has no column type: the field is
// left out (its values go to _extra when the schema has one). A field's
// Avro default becomes its default. name and version name the schema.
func FromAvro(s avro.Schema, name string, version int) (*Schema, error) {
	rec, ok := s.(*avro.RecordSchema)
	if !ok {
		return nil, fmt.Errorf("formats/schema: Avro schema is a %s, not a record", s.Type())
	}
	fields, err := avroFields(rec, 0)
	if err != nil {
		return nil, err
	}
	return &Schema{Name: name, Version: version, Doc: rec.Doc(), Fields: fields}, nil
}

func avroFields(rec *avro.RecordSchema, depth int) ([]Field, error) {
	if depth > 64 {
		return nil, fmt.Errorf("formats/schema: Avro record %s nested too deep (a recursive type?)", rec.FullName())
	}
	var out []Field
	for _, f := range rec.Fields() {
		t, nullable, ok, err := avroType(f.Type(), depth)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name(), err)
		}
		if !ok {
			continue
		}
		fd := Field{Name: f.Name(), Type: t, Nullable: nullable, Doc: f.Doc(), Aliases: f.Aliases()}
		if f.HasDefault() {
			fd.Default = f.Default()
			if fd.Default == nil {
				fd.Nullable = true
			}
		}
		out = append(out, fd)
	}
	return out, nil
}

// avroType returns the column type of s; ok is false for a type that has
// none (a union of several non-null types).
func avroType(s avro.Schema, depth int) (t Type, nullable, ok bool, err error) {
	if ref, isRef := s.(*avro.RefSchema); isRef {
		s = ref.Schema()
	}
	switch x := s.(type) {
	case *avro.UnionSchema:
		var only avro.Schema
		for _, b := range x.Types() {
			if b.Type() == avro.Null {
				nullable = true
				continue
			}
			if only != nil {
				return Type{}, false, false, nil
			}
			only = b
		}
		if only == nil {
			return Type{}, false, false, nil
		}
		t, _, ok, err = avroType(only, depth)
		return t, true, ok, err
	case *avro.PrimitiveSchema:
		lt := ""
		if l := x.Logical(); l != nil {
			lt = string(l.Type())
		}
		switch x.Type() {
		case avro.String:
			return Type{Kind: String}, false, true, nil
		case avro.Int:
			if lt == string(avro.Date) {
				return Type{Kind: Date}, false, true, nil
			}
			return Type{Kind: Int32}, false, true, nil
		case avro.Long:
			switch lt {
			case string(avro.TimestampMillis):
				return Type{Kind: Timestamp, Unit: Millis}, false, true, nil
			case string(avro.TimestampMicros):
				return Type{Kind: Timestamp, Unit: Micros}, false, true, nil
			}
			return Type{Kind: Int64}, false, true, nil
		case avro.Float:
			return Type{Kind: Float}, false, true, nil
		case avro.Double:
			return Type{Kind: Double}, false, true, nil
		case avro.Boolean:
			return Type{Kind: Bool}, false, true, nil
		case avro.Bytes:
			if lt == string(avro.Decimal) {
				return Type{Kind: String}, false, true, nil
			}
			return Type{Kind: Bytes}, false, true, nil
		case avro.Null:
			return Type{}, true, false, nil
		}
	case *avro.EnumSchema:
		return Type{Kind: String}, false, true, nil
	case *avro.FixedSchema:
		if l := x.Logical(); l != nil && l.Type() == avro.Decimal {
			return Type{Kind: String}, false, true, nil
		}
		return Type{Kind: Bytes}, false, true, nil
	case *avro.ArraySchema:
		e, _, ok, err := avroType(x.Items(), depth+1)
		if !ok || err != nil {
			return Type{}, false, ok, err
		}
		return Type{Kind: List, Elem: &e}, false, true, nil
	case *avro.MapSchema:
		e, _, ok, err := avroType(x.Values(), depth+1)
		if !ok || err != nil {
			return Type{}, false, ok, err
		}
		return Type{Kind: Map, Elem: &e}, false, true, nil
	case *avro.RecordSchema:
		fs, err := avroFields(x, depth+1)
		if err != nil {
			return Type{}, false, false, err
		}
		return Type{Kind: Struct, Fields: fs}, false, true, nil
	}
	return Type{}, false, false, nil
}
