// Package decode turns Kafka records into Arrow record batches, per topic
// format: JSON events against a schema, Avro (plain or Confluent-framed), or
// raw records that need no schema. Each decoder reports the records it could
// not decode with a reason and a field path; a bad record never fails its
// batch.
//
// A Decoder is not safe for concurrent use: each worker has its own.
package decode

import (
	"fmt"

	"github.com/apache/arrow/go/v15/arrow"
)

// Header is a record header.
type Header struct {
	Key   string
	Value []byte
}

// Record is one Kafka record as a loader reads it.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp int64 // Unix milliseconds
	Key       []byte
	Value     []byte
	Headers   []Header
}

// RecordError is a record that could not be decoded, and why.
type RecordError struct {
	Partition int32
	Offset    int64
	// Path is the field at fault, "context.page.url"; empty when the
	// record as a whole is unreadable (not JSON, wrong framing).
	Path   string
	Reason string
}

func (e RecordError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("offset %d of partition %d: %s", e.Offset, e.Partition, e.Reason)
	}
	return fmt.Sprintf("offset %d of partition %d: %s: %s", e.Offset, e.Partition, e.Path, e.Reason)
}

// Decoder decodes records into Arrow batches of one schema.
type Decoder interface {
	// Schema is the Arrow schema of every batch Decode returns.
	Schema() *arrow.Schema
	// Decode appends recs to the batch being built and returns the records
	// that failed. A failed record adds no row.
	Decode(recs []Record) []RecordError
	// Flush returns the rows decoded since the last Flush as one batch
	// (nil when there are none). The caller releases it.
	Flush() arrow.Record
}
