// Package schema owns Tributary's event schemas: a small YAML language of
// typed, documented fields, its mapping to Arrow types (and so to Parquet),
// the standard activity-event schema, inference from sample records, and the
// compatibility rules between two versions of a schema.
//
// Schemas are values: safe to share once built.
package schema

import (
	"fmt"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
)

// Kind is a field type's kind.
type Kind string

const (
	String    Kind = "string"
	Int32     Kind = "int32"
	Int64     Kind = "int64"
	Float     Kind = "float"
	Double    Kind = "double"
	Bool      Kind = "bool"
	Timestamp Kind = "timestamp" // UTC; Unit says ms or us
	Date      Kind = "date"      // days since the epoch
	Bytes     Kind = "bytes"
	List      Kind = "list"   // Elem
	Map       Kind = "map"    // string keys, Elem values
	Struct    Kind = "struct" // Fields
)

// Extra is the name of the optional string field that keeps, as one JSON
// object, the keys of its level (the record, or a struct) that the schema
// does not declare. It is never read from the input.
const Extra = "_extra"

// TimeUnit is a timestamp's resolution.
type TimeUnit string

const (
	Millis TimeUnit = "ms"
	Micros TimeUnit = "us"
)

// Type is a field's type. Elem is set for list and map, Fields for struct,
// Unit for timestamp.
type Type struct {
	Kind   Kind
	Unit   TimeUnit
	Elem   *Type
	Fields []Field
}

// Field is one named, typed, documented column.
type Field struct {
	Name     string
	Type     Type
	Nullable bool
	// Default is the value of a missing field, in the field's JSON form;
	// nil means null (allowed only for nullable fields) or, for a required
	// field, that the record is invalid without it.
	Default any
	Doc     string
	// From is the dotted path, from the root of the record, that fills a
	// top-level field when it is not the field's own name: a promoted
	// property is {Name: "price", From: "properties.price"}. Empty means
	// the field's name.
	From string
	// Aliases are the field's former names (Avro's aliases; "aliases" in
	// YAML): an Iceberg table renames its column of such a name, keeping
	// the column's id, so old files read under the new name. They go to
	// the Arrow field's metadata under AliasesKey.
	Aliases []string
}

// AliasesKey is the Arrow field metadata key of a field's aliases,
// comma-separated (formats/iceberg reads it).
const AliasesKey = "aliases"

// Schema is a named list of fields, the columns of a topic's events.
type Schema struct {
	Name    string
	Version int
	Doc     string
	Fields  []Field
}

// Field returns the top-level field called name.
func (s *Schema) Field(name string) (Field, bool) {
	for _, f := range s.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// String renders a type as the schema language writes it:
// "list<string>", "map<int64>", "timestamp(ms)", "struct".
func (t Type) String() string {
	switch t.Kind {
	case List:
		return "list<" + t.Elem.String() + ">"
	case Map:
		return "map<" + t.Elem.String() + ">"
	case Timestamp:
		return "timestamp(" + string(t.Unit) + ")"
	}
	return string(t.Kind)
}

// Arrow is the Arrow type of t: timestamps are UTC, strings UTF-8, maps
// have string keys, so that Hive, Spark, Trino and pyarrow read the Parquet
// without surprises.
func (t Type) Arrow() (arrow.DataType, error) {
	switch t.Kind {
	case String:
		return arrow.BinaryTypes.String, nil
	case Int32:
		return arrow.PrimitiveTypes.Int32, nil
	case Int64:
		return arrow.PrimitiveTypes.Int64, nil
	case Float:
		return arrow.PrimitiveTypes.Float32, nil
	case Double:
		return arrow.PrimitiveTypes.Float64, nil
	case Bool:
		return arrow.FixedWidthTypes.Boolean, nil
	case Timestamp:
		if t.Unit == Micros {
			return &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, nil
		}
		return &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}, nil
	case Date:
		return arrow.FixedWidthTypes.Date32, nil
	case Bytes:
		return arrow.BinaryTypes.Binary, nil
	case List:
		if t.Elem == nil {
			return nil, fmt.Errorf("formats/schema: list without an element type")
		}
		elem, err := t.Elem.Arrow()
		if err != nil {
			return nil, err
		}
		return arrow.ListOf(elem), nil
	case Map:
		if t.Elem == nil {
			return nil, fmt.Errorf("formats/schema: map without a value type")
		}
		elem, err := t.Elem.Arrow()
		if err != nil {
			return nil, err
		}
		return arrow.MapOf(arrow.BinaryTypes.String, elem), nil
	case Struct:
		fields, err := arrowFields(t.Fields)
		if err != nil {
			return nil, err
		}
		return arrow.StructOf(fields...), nil
	}
	return nil, fmt.Errorf("formats/schema: unknown type %q", t.Kind)
}

func arrowFields(fs []Field) ([]arrow.Field, error) {
	out := make([]arrow.Field, len(fs))
	for i, f := range fs {
		dt, err := f.Type.Arrow()
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", f.Name, err)
		}
		var keys, values []string
		if f.Doc != "" {
			keys, values = append(keys, "doc"), append(values, f.Doc)
		}
		if len(f.Aliases) > 0 {
			keys, values = append(keys, AliasesKey), append(values, strings.Join(f.Aliases, ","))
		}
		var md arrow.Metadata
		if len(keys) > 0 {
			md = arrow.NewMetadata(keys, values)
		}
		out[i] = arrow.Field{Name: f.Name, Type: dt, Nullable: f.Nullable, Metadata: md}
	}
	return out, nil
}

// Arrow is the Arrow schema of s, with each field's documentation in its
// metadata under "doc".
func (s *Schema) Arrow() (*arrow.Schema, error) {
	fields, err := arrowFields(s.Fields)
	if err != nil {
		return nil, fmt.Errorf("formats/schema: %s: %w", s.Name, err)
	}
	md := arrow.NewMetadata([]string{"tributary.schema", "tributary.schema.version"}, []string{s.Name, fmt.Sprint(s.Version)})
	return arrow.NewSchema(fields, &md), nil
}

// Path names a nested field for error messages: "context.page.url".
func Path(parts ...string) string { return strings.Join(parts, ".") }
