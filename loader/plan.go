package loader

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tributary-io/tributary/formats/iceberg"
)

// PlanVersion is the version of the plan file format. A loader refuses a plan
// of a newer version rather than guess at it. Version 2 adds the catalog
// and partitionBy settings: a plan that uses either is written as version
// 2, so that an older loader (a rollback, mixed versions among the
// schedulers) refuses it instead of ignoring them and committing to a
// second table beside the SQL catalog's, or splitting files by other
// values than the table's. Other plans stay version 1, readable by both.
const PlanVersion = 2

// version is the plan file version p needs (PlanVersion).
func (p *Plan) version() int {
	if p.Catalog != "" || len(p.PartitionBy) > 0 {
		return 2
	}
	return 1
}

// Plan is everything a worker needs to run any of a run's units, on any
// machine: it is the contract between `load run` and `load worker`.
//
// The file (_tributary/plans/<run>.json) is JSON, written once, atomically,
// before any unit starts, and never changed.
type Plan struct {
	Version int       `json:"version"`
	Run     string    `json:"run"`
	Job     string    `json:"job"`
	Kind    string    `json:"kind"` // "load" or "backfill"
	Created time.Time `json:"created"`

	Bootstrap string `json:"bootstrap"`
	Settings

	// Schemas are the YAML schemas of the topics, for the json and avro
	// formats: chosen at plan time so that every unit of a run, and every
	// worker, writes the same columns.
	Schemas map[string]string `json:"schemas,omitempty"`
	// Inferred marks the topics whose schema was inferred from a sample
	// (their string columns take numbers and booleans too).
	Inferred map[string]bool `json:"inferred,omitempty"`

	Units []Unit `json:"units"`
	// Next is, per topic and partition, the offset committed when the run
	// commits (load runs only).
	Next map[string]map[int32]int64 `json:"next,omitempty"`
	// Gaps are ranges that were gone from the broker (retention, deletion)
	// and skipped with AllowGaps.
	Gaps []Gap `json:"gaps,omitempty"`
	// Replaces are the files a backfill replaces: removed at commit unless
	// the backfill wrote the same name.
	Replaces []string `json:"replaces,omitempty"`
	// TopicIDs are the topics' ids at plan time, with FromTier: the
	// remote directories are named by them.
	TopicIDs map[string]string `json:"topicIds,omitempty"`
	// TableSchemas are, in the Iceberg mode, the table schemas the
	// topics' files are written with: their Parquet field ids are these
	// (fieldids.go). Plans written before them have none: files without
	// ids, read through the table's name mapping.
	TableSchemas map[string]*iceberg.Schema `json:"tableSchemas,omitempty"`
}

// Settings are the choices of a job that a plan carries to its workers.
type Settings struct {
	Format     string `json:"format"` // json, avro, avro-confluent, raw
	AvroSchema string `json:"avroSchema,omitempty"`
	AvroDir    string `json:"avroDir,omitempty"`
	// Registry is the schema registry's URL: with format avro, records are
	// Confluent-framed and their schemas come from it (registry.go).
	Registry string `json:"registry,omitempty"`
	// ProtoMessage is the top-level message whose fields are the columns
	// of a protobuf topic; empty means the file's first.
	ProtoMessage string `json:"protoMessage,omitempty"`
	// TimeField is the dotted path of the event-time column; empty means
	// the record's Kafka timestamp.
	TimeField string `json:"timeField,omitempty"`
	TimeZone  string `json:"timeZone"`
	// Lateness is how long after an hour ends events for it may still come;
	// the hour's _SUCCESS marker waits for it.
	Lateness        Duration `json:"lateness"`
	Codec           string   `json:"codec"`
	TargetFileBytes int64    `json:"targetFileBytes"`
	// MaxMemory caps what one unit's open Parquet writers buffer; past it
	// the largest file is completed early.
	MaxMemory int64 `json:"maxMemory"`
	AllowGaps bool  `json:"allowGaps,omitempty"`
	// TableFormat is "iceberg" when each run also commits its files as a
	// snapshot of an Iceberg table per topic (iceberg.go); empty is the
	// plain Parquet lake.
	TableFormat string `json:"tableFormat,omitempty"`
	// PartitionBy are the identity partition columns of the tables, after
	// the hour (partition.go).
	PartitionBy []string `json:"partitionBy,omitempty"`
	// Catalog is where the tables' current versions are kept: "" for the
	// Hadoop convention (version-hint.text), "sql:<dsn>" for a SQL
	// catalog (catalog.go). A plan keeps it, so that a rerun after a
	// crash commits where the run began.
	Catalog string `json:"catalog,omitempty"`
	// FromTier is the brokers' remote tier (rsm.config.storage.uri):
	// units read the remote part of their ranges from it (tier.go).
	FromTier string `json:"fromTier,omitempty"`
}

// Unit is one work unit: the offsets [From, To) of one partition.
type Unit struct {
	Index     int    `json:"index"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      int64  `json:"from"`
	To        int64  `json:"to"`
}

func (u Unit) String() string {
	return fmt.Sprintf("unit %d: %s/%d [%d, %d)", u.Index, u.Topic, u.Partition, u.From, u.To)
}

// Gap is a range of offsets that was no longer on the broker.
type Gap struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      int64  `json:"from"`
	To        int64  `json:"to"`
	Reason    string `json:"reason"`
}

// Records is the number of offsets the plan covers.
func (p *Plan) Records() int64 {
	var n int64
	for _, u := range p.Units {
		n += u.To - u.From
	}
	return n
}

func (p *Plan) marshal() ([]byte, error) {
	q := *p
	q.Version = p.version()
	return json.MarshalIndent(&q, "", "  ")
}

func parsePlan(data []byte, where string) (*Plan, error) {
	var p Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("plan %s: %w", where, err)
	}
	if p.Version > PlanVersion {
		return nil, fmt.Errorf("plan %s has version %d; this loader reads up to %d: upgrade tributary", where, p.Version, PlanVersion)
	}
	for i, u := range p.Units {
		if u.Index != i || u.From < 0 || u.To <= u.From {
			return nil, fmt.Errorf("plan %s: bad %v", where, u)
		}
	}
	return &p, nil
}

// Duration is a time.Duration written as "10m0s" in JSON.
type Duration time.Duration

func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	*d = Duration(v)
	return err
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
