package collect

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tributary-io/tributary/tracker"
	"github.com/tributary-io/tributary/tracker/validate"
)

// checkRegistry validates the events that passed the source's own schema
// against the JSON schemas registered for them, marking those that fail
// invalid with a ReasonRegistry rejection. An error means the registry
// could not be asked and the source is strict: nothing of the request may
// be accepted (a permissive source lets the events through unchecked).
func (s *Server) checkRegistry(ctx context.Context, w *work, src *source) error {
	if src.Registry == nil {
		return nil
	}
	for k := range w.ready {
		r := &w.ready[k]
		if r.invalid {
			continue
		}
		subject := validate.Subject(src.Topic, r.typ, r.event)
		v, err := src.Registry.Check(ctx, subject, w.elems[r.index])
		if err != nil {
			if src.RegistryStrict {
				return err
			}
			s.m.unchecked.WithLabelValues(src.Name).Inc()
			continue
		}
		if !v.Found && src.RegistryStrict {
			v.Violations = []validate.Violation{{Reason: fmt.Sprintf("no schema is registered under subject %q, and the source is strict", subject)}}
		}
		if len(v.Violations) == 0 {
			continue
		}
		r.invalid = true
		rj := Rejection{Index: r.index, Path: v.Violations[0].Path, Reason: v.Violations[0].Reason, Code: ReasonRegistry,
			Subject: subject, Version: v.Version, schemaID: v.ID, violations: v.Violations}
		if r.idIsString {
			rj.MessageID = string(w.ids[r.idStart:r.idEnd])
		}
		w.rejected = append(w.rejected, rj)
	}
	return nil
}

// BadEvent is the value of a record in a source's bad-events topic: the
// event as it was sent and why it was refused.
type BadEvent struct {
	Source     string          `json:"source"`
	Topic      string          `json:"topic"` // where a valid event would have gone
	ReceivedAt json.RawMessage `json:"receivedAt"`
	MessageID  string          `json:"messageId,omitempty"`
	// Code is the answer's code: "schema" (the source's schema) or
	// "registry_schema" (the registered JSON schema of Subject).
	Code     string               `json:"code"`
	Subject  string               `json:"subject,omitempty"`
	Version  int                  `json:"version,omitempty"`
	SchemaID int                  `json:"schemaId,omitempty"`
	Errors   []validate.Violation `json:"errors"`
	Payload  json.RawMessage      `json:"payload"`
}

// badEvent wraps the refused event raw (as sent) for the bad-events topic.
func (s *Server) badEvent(src *source, q *request, raw []byte, r *Rejection) tracker.Event {
	b := BadEvent{Source: src.Name, Topic: src.Topic, ReceivedAt: q.receivedAt, MessageID: r.MessageID, Code: r.Code,
		Subject: r.Subject, Version: r.Version, SchemaID: r.schemaID, Errors: r.violations, Payload: raw}
	if len(b.Errors) == 0 {
		b.Errors = []validate.Violation{{Path: r.Path, Reason: r.Reason}}
	}
	v, err := json.Marshal(b)
	if err != nil { // raw is checked JSON; kept as a string should Marshal disagree
		b.Payload, _ = json.Marshal(string(raw))
		v, _ = json.Marshal(b)
	}
	return tracker.Event{Topic: src.BadTopic, Value: v, Timestamp: q.received.UnixMilli(), MessageID: r.MessageID}
}
