package iceberg

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
)

// Partition specs this package writes: hour(<time column>), then any
// number of identity(<column>) fields (Create), each a top-level column of
// type string, int, long or boolean. An identity field is named after its
// column, as iceberg-core names them; its value in a manifest entry is the
// value every row of the file has in that column (null included).

// identityTypes are the source types an identity field may have, with the
// Avro type of the partition value in manifests.
var identityTypes = map[string]string{"string": "string", "int": "int", "long": "long", "boolean": "boolean"}

// IdentityColumnTypes are the column types identity partitioning takes,
// for messages.
const IdentityColumnTypes = "string, int, long or boolean"

// identityField checks that column can be an identity partition source of
// schema and returns its field.
func identityField(schema *Schema, column string) (Field, error) {
	f, ok := schema.Field(column)
	if !ok {
		return Field{}, fmt.Errorf("formats/iceberg: identity partition column %q is not a top-level column of the schema", column)
	}
	if _, ok := identityTypes[f.Type.Primitive]; !ok {
		return Field{}, fmt.Errorf("formats/iceberg: identity partition column %q is %s; identity partitioning takes %s columns", column, f.Type, IdentityColumnTypes)
	}
	return f, nil
}

// partitionTypes are the Avro types of spec's partition values, in order.
func partitionTypes(spec PartitionSpec, schema *Schema) ([]string, error) {
	out := make([]string, len(spec.Fields))
	for i, pf := range spec.Fields {
		switch pf.Transform {
		case "hour":
			out[i] = "int"
		case "identity":
			var src *Field
			for j := range schema.Fields {
				if schema.Fields[j].ID == pf.SourceID {
					src = &schema.Fields[j]
				}
			}
			if src == nil {
				return nil, fmt.Errorf("formats/iceberg: partition field %s: source column %d is not a top-level column of schema %d", pf.Name, pf.SourceID, schema.ID)
			}
			t, ok := identityTypes[src.Type.Primitive]
			if !ok {
				return nil, fmt.Errorf("formats/iceberg: partition field %s: identity of a %s column is not supported by this writer", pf.Name, src.Type)
			}
			out[i] = t
		default:
			return nil, fmt.Errorf("formats/iceberg: partition transform %q (field %s) is not supported by this writer", pf.Transform, pf.Name)
		}
	}
	return out, nil
}

// partitionOf is the partition tuple of a new file under spec: the hour
// from f.Hour, the identity values from f.Identity, which must name every
// identity field (a nil value is null).
func partitionOf(spec PartitionSpec, f NewFile) (map[string]any, error) {
	part := make(map[string]any, len(spec.Fields))
	for _, pf := range spec.Fields {
		switch pf.Transform {
		case "hour":
			part[pf.Name] = f.Hour
		case "identity":
			v, ok := f.Identity[pf.Name]
			if !ok {
				return nil, fmt.Errorf("formats/iceberg: file %s has no value for the table's partition field %s (identity): a writer must split its files by it", f.Path, pf.Name)
			}
			part[pf.Name] = v
		default:
			return nil, fmt.Errorf("formats/iceberg: partition transform %q is not supported by this writer", pf.Transform)
		}
	}
	return part, nil
}

// coerce is v as the Go type the Avro encoder wants for avroType (values
// read back from a manifest come as int or int64 whatever was written).
func coerce(v any, avroType string) (any, error) {
	if v == nil {
		return nil, nil
	}
	var n int64
	isInt := true
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int32:
		n = int64(x)
	case int64:
		n = x
	default:
		isInt = false
	}
	switch avroType {
	case "int":
		if isInt {
			return int32(n), nil
		}
	case "long":
		if isInt {
			return n, nil
		}
	case "string":
		if s, ok := v.(string); ok {
			return s, nil
		}
	case "boolean":
		if b, ok := v.(bool); ok {
			return b, nil
		}
	}
	return nil, fmt.Errorf("formats/iceberg: partition value %v (%T) is not a %s", v, v, avroType)
}

// partitionBound is a partition value in Iceberg's single-value serialization.
func partitionBound(v any) []byte {
	switch x := v.(type) {
	case int32:
		return binary.LittleEndian.AppendUint32(nil, uint32(x))
	case int64:
		return binary.LittleEndian.AppendUint64(nil, uint64(x))
	case string:
		return []byte(x)
	case bool:
		if x {
			return []byte{1}
		}
		return []byte{0}
	}
	return nil
}

// less orders two coerced partition values of one type.
func less(a, b any) bool {
	switch x := a.(type) {
	case int32:
		return x < b.(int32)
	case int64:
		return x < b.(int64)
	case string:
		return x < b.(string) // byte order: Iceberg's order of UTF-8 strings
	case bool:
		return !x && b.(bool)
	}
	return false
}

// partitionSummaries are the manifest list's bounds of spec's fields over
// entries (whose partition values are already coerced).
func partitionSummaries(spec PartitionSpec, entries []Entry) *[]FieldSummary {
	if len(spec.Fields) == 0 {
		return nil
	}
	out := make([]FieldSummary, len(spec.Fields))
	for i, pf := range spec.Fields {
		var lo, hi any
		for _, e := range entries {
			v := e.File.Partition[pf.Name]
			if v == nil {
				out[i].ContainsNull = true
				continue
			}
			if lo == nil || less(v, lo) {
				lo = v
			}
			if hi == nil || less(hi, v) {
				hi = v
			}
		}
		if lo != nil {
			l, h := partitionBound(lo), partitionBound(hi)
			out[i].Lower, out[i].Upper = &l, &h
		}
	}
	return &out
}

// coercePartitions gives every entry a partition tuple of spec's types (a
// fresh map: entries may share theirs with the snapshot they came from).
func coercePartitions(spec PartitionSpec, types []string, entries []Entry) error {
	for i := range entries {
		e := &entries[i]
		part := make(map[string]any, len(spec.Fields))
		for j, pf := range spec.Fields {
			v, err := coerce(e.File.Partition[pf.Name], types[j])
			if err != nil {
				return fmt.Errorf("%s: %w", e.File.Path, err)
			}
			part[pf.Name] = v
		}
		e.File.Partition = part
	}
	return nil
}

// hasPartition says whether e's partition tuple has every field of spec.
func hasPartition(e Entry, spec PartitionSpec) bool {
	for _, pf := range spec.Fields {
		if _, ok := e.File.Partition[pf.Name]; !ok {
			return false
		}
	}
	return true
}

// identityKey is a string naming e's identity partition values, equal for
// files of the same values: compaction groups by it.
func identityKey(e Entry, spec PartitionSpec) string {
	var b bytes.Buffer
	for _, pf := range spec.Fields {
		if pf.Transform == "identity" {
			fmt.Fprintf(&b, "%s=%T:%v;", pf.Name, e.File.Partition[pf.Name], e.File.Partition[pf.Name])
		}
	}
	return b.String()
}

// IdentityColumns are the source columns of spec's identity fields, in
// order, by name in schema.
func IdentityColumns(spec PartitionSpec, schema *Schema) []string {
	var out []string
	for _, pf := range spec.Fields {
		if pf.Transform != "identity" {
			continue
		}
		for _, f := range schema.Fields {
			if f.ID == pf.SourceID {
				out = append(out, f.Name)
			}
		}
	}
	return out
}

// CheckIdentity says whether a table partitioned by spec takes files split
// by the identity columns want (in order): a writer and the table must
// agree, or files would be committed under partition values they do not
// hold. Changing a table's spec is not supported.
func CheckIdentity(m *Metadata, want []string) error {
	have := IdentityColumns(m.Spec(), m.CurrentSchema())
	if strings.Join(have, ",") == strings.Join(want, ",") {
		return nil
	}
	show := func(cols []string) string {
		if len(cols) == 0 {
			return "none"
		}
		s := append([]string(nil), cols...)
		for i, c := range s {
			s[i] = "identity(" + c + ")"
		}
		return strings.Join(s, ", ")
	}
	return fmt.Errorf("formats/iceberg: %s is partitioned by %s after the hour, the writer by %s: a table's partition spec cannot change (yet)", m.Location, show(have), show(want))
}
