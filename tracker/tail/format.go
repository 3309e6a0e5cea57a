package tail

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
)

// Reasons, the reason label of tributary_tracker_tail_errors_total.
const (
	ReasonInvalidJSON     = "invalid_json"     // a json line that is not one JSON object
	ReasonInvalidCombined = "invalid_combined" // a combined line that does not parse
	ReasonLineTooLong     = "line_too_long"    // cut to MaxLineBytes
	ReasonProduce         = "produce"          // records in a failed produce attempt (retried)
	ReasonTooLarge        = "too_large"        // a record the broker refused as too large (dropped)
	ReasonRead            = "read"             // a file could not be opened, stat'ed or read
	ReasonCheckpoint      = "checkpoint"       // the positions file could not be written (retried)
)

// Headers of every record.
const (
	HeaderFile   = "log.file.path" // the path the line was read from
	HeaderOffset = "log.offset"    // the line's byte offset in that file, decimal
	HeaderError  = "log.error"     // on <topic>.invalid records: the reason
	HeaderCut    = "log.truncated" // "true" on a line cut to MaxLineBytes
)

// parsed is what one line becomes.
type parsed struct {
	value []byte // owned: the line's bytes are not kept
	key   []byte // nil: no key
	time  time.Time
	// reason is non-empty for a line that does not parse in the input's
	// format (value then holds the line as read).
	reason string
	skip   bool // a blank line of a json or combined file: nothing to send
}

// parse turns a line of the input's files into a record value.
func (in *Input) parse(data []byte, now time.Time) parsed {
	p := parsed{time: now}
	if in.Format != FormatRaw && len(bytes.TrimSpace(data)) == 0 {
		p.skip = true
		return p
	}
	switch in.Format {
	case FormatJSON:
		trimmed := bytes.TrimSpace(data)
		if !isObject(trimmed) {
			p.value, p.reason = bytes.Clone(data), ReasonInvalidJSON
			return p
		}
		p.value = bytes.Clone(trimmed)
		if in.Key != "" {
			p.key = jsonKey(trimmed, in.Key)
		}
	case FormatCombined:
		a, err := parseCombined(data)
		if err != nil {
			p.value, p.reason = bytes.Clone(data), ReasonInvalidCombined
			return p
		}
		p.value, p.time = a.json(), a.time
		if in.Key != "" {
			p.key = []byte(a.field(in.Key))
		}
	default:
		p.value = bytes.Clone(data)
	}
	return p
}

// isObject: "the line's object becomes the event", so arrays and scalars,
// valid JSON as they are, are not events.
func isObject(b []byte) bool {
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// jsonKey is the value at the dotted path in the object b: a string as it
// is, anything else as its JSON text; nil when absent or null.
func jsonKey(b []byte, path string) []byte {
	var v any = json.RawMessage(b)
	for part := range strings.SplitSeq(path, ".") {
		raw, ok := v.(json.RawMessage)
		if !ok {
			return nil
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return nil
		}
		if v, ok = obj[part]; !ok {
			return nil
		}
	}
	raw := v.(json.RawMessage)
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []byte(s)
	}
	if bytes.Equal(raw, []byte("null")) {
		return nil
	}
	return bytes.Clone(raw)
}
