package iceberg

import (
	"encoding/json"
	"fmt"
)

// FormatVersion is the Iceberg table format version this package writes.
const FormatVersion = 2

// Metadata is an Iceberg table metadata file (v<N>.metadata.json), format
// version 2: https://iceberg.apache.org/spec/#table-metadata. Fields this
// package does not use are kept as read, so a commit on a table another
// engine also wrote keeps what that engine put there.
type Metadata struct {
	// pending are the manifest files of the snapshot this metadata
	// commits, not written yet: the commit writes them with the metadata
	// file (Catalog.write).
	pending []newFile

	FormatVersion      int               `json:"format-version"`
	TableUUID          string            `json:"table-uuid"`
	Location           string            `json:"location"`
	LastSequenceNumber int64             `json:"last-sequence-number"`
	LastUpdatedMs      int64             `json:"last-updated-ms"`
	LastColumnID       int               `json:"last-column-id"`
	Schemas            []*Schema         `json:"schemas"`
	CurrentSchemaID    int               `json:"current-schema-id"`
	PartitionSpecs     []PartitionSpec   `json:"partition-specs"`
	DefaultSpecID      int               `json:"default-spec-id"`
	LastPartitionID    int               `json:"last-partition-id"`
	Properties         map[string]string `json:"properties,omitempty"`
	CurrentSnapshotID  *int64            `json:"current-snapshot-id,omitempty"`
	Snapshots          []Snapshot        `json:"snapshots,omitempty"`
	SnapshotLog        []SnapshotLog     `json:"snapshot-log,omitempty"`
	MetadataLog        []MetadataLog     `json:"metadata-log,omitempty"`
	SortOrders         []json.RawMessage `json:"sort-orders"`
	DefaultSortOrderID int               `json:"default-sort-order-id"`
	Refs               map[string]Ref    `json:"refs,omitempty"`
	Statistics         []json.RawMessage `json:"statistics,omitempty"`
}

// PartitionSpec says how rows map to partition values.
type PartitionSpec struct {
	ID     int              `json:"spec-id"`
	Fields []PartitionField `json:"fields"`
}

// PartitionField is one partition value: Transform applied to the column
// SourceID.
type PartitionField struct {
	SourceID  int    `json:"source-id"`
	FieldID   int    `json:"field-id"`
	Name      string `json:"name"`
	Transform string `json:"transform"`
}

// Snapshot is the table's state after one commit.
type Snapshot struct {
	ID             int64             `json:"snapshot-id"`
	ParentID       *int64            `json:"parent-snapshot-id,omitempty"`
	SequenceNumber int64             `json:"sequence-number"`
	TimestampMs    int64             `json:"timestamp-ms"`
	ManifestList   string            `json:"manifest-list"`
	Summary        map[string]string `json:"summary"`
	SchemaID       *int              `json:"schema-id,omitempty"`
}

type SnapshotLog struct {
	TimestampMs int64 `json:"timestamp-ms"`
	SnapshotID  int64 `json:"snapshot-id"`
}

type MetadataLog struct {
	TimestampMs  int64  `json:"timestamp-ms"`
	MetadataFile string `json:"metadata-file"`
}

// Ref is a named branch or tag; "main" is the table's current state.
type Ref struct {
	SnapshotID int64  `json:"snapshot-id"`
	Type       string `json:"type"`
}

// CurrentSchema is the schema new data is written with.
func (m *Metadata) CurrentSchema() *Schema {
	for _, s := range m.Schemas {
		if s.ID == m.CurrentSchemaID {
			return s
		}
	}
	return nil
}

// Spec is the default partition spec.
func (m *Metadata) Spec() PartitionSpec {
	for _, s := range m.PartitionSpecs {
		if s.ID == m.DefaultSpecID {
			return s
		}
	}
	return PartitionSpec{ID: m.DefaultSpecID}
}

// Current is the current snapshot, nil for a table without one.
func (m *Metadata) Current() *Snapshot {
	if m.CurrentSnapshotID == nil {
		return nil
	}
	return m.Snapshot(*m.CurrentSnapshotID)
}

// Snapshot finds a snapshot by id.
func (m *Metadata) Snapshot(id int64) *Snapshot {
	for i := range m.Snapshots {
		if m.Snapshots[i].ID == id {
			return &m.Snapshots[i]
		}
	}
	return nil
}

// ParseMetadata reads a metadata file and checks what this package relies on.
func ParseMetadata(b []byte) (*Metadata, error) {
	var m Metadata
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m.FormatVersion != 1 && m.FormatVersion != 2 {
		return nil, fmt.Errorf("formats/iceberg: format version %d is not supported (want 1 or 2)", m.FormatVersion)
	}
	if m.CurrentSchema() == nil {
		return nil, fmt.Errorf("formats/iceberg: current schema %d is not among the schemas", m.CurrentSchemaID)
	}
	return &m, nil
}
