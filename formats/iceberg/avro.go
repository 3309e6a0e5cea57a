package iceberg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/hamba/avro/v2"
	"github.com/hamba/avro/v2/ocf"
)

// Manifests and manifest lists are Avro container files whose schemas carry
// Iceberg's field ids ("field-id" on every field): readers such as
// pyiceberg and iceberg-core resolve the fields by those ids, so the ids
// below are part of the format (https://iceberg.apache.org/spec/#manifests)
// and must never change. Optional fields this package does not fill
// (column sizes, bounds, key metadata ...) are left out of the writer's
// schema; readers take them as null.

// ManifestFile is one entry of a manifest list.
type ManifestFile struct {
	Path              string          `avro:"manifest_path"`
	Length            int64           `avro:"manifest_length"`
	SpecID            int32           `avro:"partition_spec_id"`
	Content           int32           `avro:"content"` // 0 data, 1 deletes
	SequenceNumber    int64           `avro:"sequence_number"`
	MinSequenceNumber int64           `avro:"min_sequence_number"`
	AddedSnapshotID   int64           `avro:"added_snapshot_id"`
	AddedFiles        int32           `avro:"added_files_count"`
	ExistingFiles     int32           `avro:"existing_files_count"`
	DeletedFiles      int32           `avro:"deleted_files_count"`
	AddedRows         int64           `avro:"added_rows_count"`
	ExistingRows      int64           `avro:"existing_rows_count"`
	DeletedRows       int64           `avro:"deleted_rows_count"`
	Partitions        *[]FieldSummary `avro:"partitions"`
}

// FieldSummary bounds one partition field over a manifest's files.
type FieldSummary struct {
	ContainsNull bool    `avro:"contains_null"`
	ContainsNaN  *bool   `avro:"contains_nan"`
	Lower        *[]byte `avro:"lower_bound"`
	Upper        *[]byte `avro:"upper_bound"`
}

const manifestListSchema = `{"type":"record","name":"manifest_file","fields":[
{"name":"manifest_path","type":"string","field-id":500},
{"name":"manifest_length","type":"long","field-id":501},
{"name":"partition_spec_id","type":"int","field-id":502},
{"name":"content","type":"int","field-id":517},
{"name":"sequence_number","type":"long","field-id":515},
{"name":"min_sequence_number","type":"long","field-id":516},
{"name":"added_snapshot_id","type":"long","field-id":503},
{"name":"added_files_count","type":"int","field-id":504},
{"name":"existing_files_count","type":"int","field-id":505},
{"name":"deleted_files_count","type":"int","field-id":506},
{"name":"added_rows_count","type":"long","field-id":512},
{"name":"existing_rows_count","type":"long","field-id":513},
{"name":"deleted_rows_count","type":"long","field-id":514},
{"name":"partitions","type":["null",{"type":"array","element-id":508,"items":{"type":"record","name":"r508","fields":[
  {"name":"contains_null","type":"boolean","field-id":509},
  {"name":"contains_nan","type":["null","boolean"],"default":null,"field-id":518},
  {"name":"lower_bound","type":["null","bytes"],"default":null,"field-id":510},
  {"name":"upper_bound","type":["null","bytes"],"default":null,"field-id":511}]}}],"default":null,"field-id":507}
]}`

// DataFile is a data file as a manifest entry describes it.
type DataFile struct {
	Content   int32          `avro:"content"` // 0 data
	Path      string         `avro:"file_path"`
	Format    string         `avro:"file_format"`
	Partition map[string]any `avro:"partition"`
	Records   int64          `avro:"record_count"`
	SizeBytes int64          `avro:"file_size_in_bytes"`
	// Column statistics by field id (stats.go); nil when unknown.
	ValueCounts *[]KV `avro:"value_counts"`
	NullCounts  *[]KV `avro:"null_value_counts"`
	LowerBounds *[]KB `avro:"lower_bounds"`
	UpperBounds *[]KB `avro:"upper_bounds"`
}

// Entry is one entry of a manifest. Status: 0 existing, 1 added, 2 deleted.
type Entry struct {
	Status             int32    `avro:"status"`
	SnapshotID         *int64   `avro:"snapshot_id"`
	SequenceNumber     *int64   `avro:"sequence_number"`
	FileSequenceNumber *int64   `avro:"file_sequence_number"`
	File               DataFile `avro:"data_file"`
}

// manifestSchema is the manifest entry schema of a partition spec: the
// partition struct (field id 102) has one field per partition field.
func manifestSchema(spec PartitionSpec, types []string) string {
	parts := []map[string]any{}
	for i, f := range spec.Fields {
		parts = append(parts, map[string]any{"name": f.Name, "type": []any{"null", types[i]}, "default": nil, "field-id": f.FieldID})
	}
	partition, _ := json.Marshal(map[string]any{"type": "record", "name": "r102", "fields": parts})
	return `{"type":"record","name":"manifest_entry","fields":[
{"name":"status","type":"int","field-id":0},
{"name":"snapshot_id","type":["null","long"],"default":null,"field-id":1},
{"name":"sequence_number","type":["null","long"],"default":null,"field-id":3},
{"name":"file_sequence_number","type":["null","long"],"default":null,"field-id":4},
{"name":"data_file","type":{"type":"record","name":"r2","fields":[
  {"name":"content","type":"int","field-id":134},
  {"name":"file_path","type":"string","field-id":100},
  {"name":"file_format","type":"string","field-id":101},
  {"name":"partition","type":` + string(partition) + `,"field-id":102},
  {"name":"record_count","type":"long","field-id":103},
  {"name":"file_size_in_bytes","type":"long","field-id":104},
  {"name":"value_counts","type":["null",{"type":"array","items":{"type":"record","name":"k119_v120","fields":[{"name":"key","type":"int","field-id":119},{"name":"value","type":"long","field-id":120}]},"logicalType":"map"}],"default":null,"field-id":109},
  {"name":"null_value_counts","type":["null",{"type":"array","items":{"type":"record","name":"k121_v122","fields":[{"name":"key","type":"int","field-id":121},{"name":"value","type":"long","field-id":122}]},"logicalType":"map"}],"default":null,"field-id":110},
  {"name":"lower_bounds","type":["null",{"type":"array","items":{"type":"record","name":"k126_v127","fields":[{"name":"key","type":"int","field-id":126},{"name":"value","type":"bytes","field-id":127}]},"logicalType":"map"}],"default":null,"field-id":125},
  {"name":"upper_bounds","type":["null",{"type":"array","items":{"type":"record","name":"k129_v130","fields":[{"name":"key","type":"int","field-id":129},{"name":"value","type":"bytes","field-id":130}]},"logicalType":"map"}],"default":null,"field-id":128}]},"field-id":2}
]}`
}

// parse parses a schema with a cache of its own: manifests of different
// specs use the same record names with different fields.
func parse(s string) (avro.Schema, error) {
	return avro.ParseWithCache(s, "", &avro.SchemaCache{})
}

func writeOCF(w io.Writer, schema string, meta map[string]string, rows func(*ocf.Encoder) error) error {
	sch, err := parse(schema)
	if err != nil {
		return fmt.Errorf("formats/iceberg: avro schema: %w", err)
	}
	md := map[string][]byte{}
	for k, v := range meta {
		md[k] = []byte(v)
	}
	enc, err := ocf.NewEncoderWithSchema(sch, w, ocf.WithMetadata(md), ocf.WithCodec(ocf.Deflate),
		ocf.WithSchemaMarshaler(ocf.FullSchemaMarshaler))
	if err != nil {
		return err
	}
	if err := rows(enc); err != nil {
		return err
	}
	return enc.Close()
}

// encodeManifest writes the manifest of the entries, all of one spec.
// Their partition tuples are replaced by ones of the spec's types.
func encodeManifest(schema *Schema, spec PartitionSpec, entries []Entry) ([]byte, error) {
	types, err := partitionTypes(spec, schema)
	if err != nil {
		return nil, err
	}
	if err := coercePartitions(spec, types, entries); err != nil {
		return nil, err
	}
	sj, _ := json.Marshal(schema)
	pj, _ := json.Marshal(spec.Fields)
	meta := map[string]string{
		"schema": string(sj), "schema-id": strconv.Itoa(schema.ID),
		"partition-spec": string(pj), "partition-spec-id": strconv.Itoa(spec.ID),
		"format-version": strconv.Itoa(FormatVersion), "content": "data",
	}
	var buf bytes.Buffer
	err = writeOCF(&buf, manifestSchema(spec, types), meta, func(enc *ocf.Encoder) error {
		for i := range entries {
			if err := enc.Encode(&entries[i]); err != nil {
				return fmt.Errorf("formats/iceberg: manifest entry: %w", err)
			}
		}
		return nil
	})
	return buf.Bytes(), err
}

// encodeManifestList writes a snapshot's manifest list.
func encodeManifestList(snap *Snapshot, files []ManifestFile) ([]byte, error) {
	meta := map[string]string{
		"snapshot-id":     strconv.FormatInt(snap.ID, 10),
		"sequence-number": strconv.FormatInt(snap.SequenceNumber, 10),
		"format-version":  strconv.Itoa(FormatVersion),
	}
	if snap.ParentID != nil {
		meta["parent-snapshot-id"] = strconv.FormatInt(*snap.ParentID, 10)
	} else {
		meta["parent-snapshot-id"] = "null"
	}
	var buf bytes.Buffer
	err := writeOCF(&buf, manifestListSchema, meta, func(enc *ocf.Encoder) error {
		for i := range files {
			if err := enc.Encode(&files[i]); err != nil {
				return fmt.Errorf("formats/iceberg: manifest list entry: %w", err)
			}
		}
		return nil
	})
	return buf.Bytes(), err
}

// DecodeManifestList reads a manifest list.
func DecodeManifestList(r io.Reader) ([]ManifestFile, error) {
	dec, err := ocf.NewDecoder(r, ocf.WithDecoderSchemaCache(&avro.SchemaCache{}))
	if err != nil {
		return nil, fmt.Errorf("formats/iceberg: manifest list: %w", err)
	}
	var out []ManifestFile
	for dec.HasNext() {
		var f ManifestFile
		if err := dec.Decode(&f); err != nil {
			return nil, fmt.Errorf("formats/iceberg: manifest list: %w", err)
		}
		out = append(out, f)
	}
	return out, dec.Error()
}

// DecodeManifest reads a manifest's entries.
func DecodeManifest(r io.Reader) ([]Entry, error) {
	dec, err := ocf.NewDecoder(r, ocf.WithDecoderSchemaCache(&avro.SchemaCache{}))
	if err != nil {
		return nil, fmt.Errorf("formats/iceberg: manifest: %w", err)
	}
	var out []Entry
	for dec.HasNext() {
		var e Entry
		if err := dec.Decode(&e); err != nil {
			return nil, fmt.Errorf("formats/iceberg: manifest: %w", err)
		}
		out = append(out, e)
	}
	return out, dec.Error()
}
