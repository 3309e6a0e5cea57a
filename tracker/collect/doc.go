// Package collect is the tracker's HTTP collector: a Segment-compatible
// tracking API (/v1/track, /v1/page, /v1/screen, /v1/identify, /v1/group,
// /v1/alias, /v1/batch) and a 1×1 pixel (/v1/pixel.gif) that validate
// events against their source's schema, enrich them (receivedAt, messageId,
// anonymised client IP, parsed user agent), drop retried duplicates and
// hand them to a tracker.Sink. An event is acknowledged (2xx) only once the
// Sink accepted it; a Sink error is a 503 with Retry-After.
//
// # How an event goes through
//
// Events are never decoded into Go values. json.go checks the body's
// syntax exactly as encoding/json would and notes where each event and
// each of its top-level members is; event.go checks the fields the
// collector reads and writes the enriched event by copying every member it
// does not change byte for byte, with its own values (receivedAt, context,
// ...) spliced in; validate.go checks the result against the schema with
// formats/decode, a whole batch per call; registry.go checks what passed
// against the JSON schema a schema registry holds for each event, for a
// source with a Registry (tracker/validate), and wraps refused events for
// the bad-events topic; handle.go drops duplicates and submits. An event whose bytes are not UTF-8, or that escapes a lone
// surrogate, is first rewritten as encoding/json would (canonical), so that
// what is stored reads the same to any decoder.
//
// Files: server.go (routing, CORS, write keys), body.go (reading bodies),
// handle.go (single and batch requests, validation, dedup, submission),
// registry.go (validation against the registry, bad events),
// event.go (checks and enrichment of one event), json.go (the scanner),
// enrich.go (client IP, user agent), dedup.go, validate.go, alloc.go (the
// validators' memory), pixel.go, respond.go (answers, 503s, readiness),
// config.go, metrics.go.
//
// # Concurrency
//
// A Server is safe for concurrent use once New returns. What requests
// share has its own synchronisation: the user-agent cache and the dedup
// window a mutex each, the validators a sync.Pool (a decoder serves one
// request at a time), the readiness state atomics. Everything else is
// read-only after New. Each request takes its scratch space (a work) from
// a pool and returns it when answered; what it hands to the Sink is
// allocated afresh, so a Sink may keep the events it is given.
package collect
