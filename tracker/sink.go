// Package tracker owns the activity-tracking agent: the HTTP collector
// (Segment-compatible API, pixel, tracker.js), enrichment, the disk spool
// that keeps acknowledged events while the broker is away, the producer that
// delivers them, and the log-file tailer.
package tracker

import "context"

// Event is one message ready for the broker: already validated and
// enriched, serialized as JSON, keyed by userId or anonymousId so that one
// visitor's events stay in order in one partition.
type Event struct {
	Topic     string
	Key       []byte
	Value     []byte
	Timestamp int64 // Unix milliseconds
	// MessageID identifies the event for deduplication and for the tests
	// that count delivered events.
	MessageID string
}

// AckMode is when an event counts as accepted.
type AckMode string

const (
	// AckSpool acknowledges once the event is written and fsynced to the
	// spool (the default): the sender never waits for the broker.
	AckSpool AckMode = "spool"
	// AckBroker acknowledges once the broker acknowledged it with acks=all.
	AckBroker AckMode = "broker"
)

// Sink accepts events for delivery. Submit returns nil only when every event
// is durable in the sense of the sink's AckMode; an error means none of
// them may be acknowledged to the sender (ErrSpoolFull is the 503 case).
type Sink interface {
	Submit(ctx context.Context, events []Event) error
	Close() error
}
