package collect

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
)

// gif1x1 is a transparent 1×1 GIF.
var gif1x1 = []byte{
	0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 0x01, 0x00, 0x01, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00,
	0xff, 0xff, 0xff, 0x21, 0xf9, 0x04, 0x01, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x00, 0x00, 0x00, 0x00,
	0x01, 0x00, 0x01, 0x00, 0x00, 0x02, 0x02, 0x44, 0x01, 0x00, 0x3b,
}

// pixelFields are query parameters copied to the event as they are; any
// other parameter (or properties.NAME) becomes a property.
var pixelFields = map[string]bool{"type": true, "event": true, "name": true, "category": true, "userId": true, "anonymousId": true, "messageId": true, "timestamp": true, "groupId": true, "previousId": true}

// pixel records an event from a GET and always answers the GIF: an e-mail
// client shows no error. Failures are counted (and logged at debug).
//
// The event is the query's data parameter, a base64 JSON object (as
// Segment's pixel API takes it), or else built from the parameters:
// writeKey, the top-level fields (type, default track; event, userId,
// anonymousId, ...), properties.NAME=value and any other NAME=value as
// properties, traits.NAME=value as traits.
func (s *Server) pixel(w http.ResponseWriter, r *http.Request) {
	defer func() {
		h := w.Header()
		h.Set("Content-Type", "image/gif")
		h.Set("Cache-Control", "no-cache, no-store, must-revalidate")
		h.Set("Content-Length", strconv.Itoa(len(gif1x1)))
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			w.Write(gif1x1)
		}
	}()
	typ := "track"
	if t := strings.TrimPrefix(r.URL.Path, "/v1/pixel/"); t != r.URL.Path {
		typ = t
	}
	fail := func(label, reason, msg string) {
		s.m.received.WithLabelValues(label).Inc()
		s.m.rejected.WithLabelValues(label, reason).Inc()
		s.cfg.Logger.Debug("pixel event refused", "source", label, "reason", msg)
	}
	q := r.URL.Query()
	if len(r.URL.RawQuery) > s.cfg.MaxEventBytes {
		fail("unknown", ReasonTooLarge, "query too large")
		return
	}
	wk := getWork()
	defer putWork(wk)
	var raw []byte
	var key string
	canon := false
	if data := q.Get("data"); data != "" {
		var err error
		raw, err = decodeBase64(data)
		if err == nil {
			key, canon, err = parseSingle(wk, raw)
		}
		if err != nil {
			fail("unknown", ReasonMalformed, "data: "+err.Error())
			return
		}
		if j := find(wk.top, "type"); j >= 0 {
			if t, ok := stringOf(wk.top[j].val); ok && len(t) > 0 {
				typ = string(t)
			}
		}
	} else {
		obj := map[string]any{}
		props, traits := map[string]any{}, map[string]any{}
		for k, vs := range q {
			v := vs[0]
			switch {
			case k == "writeKey":
				key = v
			case pixelFields[k]:
				obj[k] = v
			case strings.HasPrefix(k, "traits."):
				traits[strings.TrimPrefix(k, "traits.")] = v
			default:
				props[strings.TrimPrefix(k, "properties.")] = v
			}
		}
		if len(props) > 0 {
			obj["properties"] = props
		}
		if len(traits) > 0 {
			obj["traits"] = traits
		}
		if t, ok := obj["type"].(string); ok && t != "" {
			typ = t
		}
		raw, _ = json.Marshal(obj)
	}
	if k := basicKey(r); k != "" {
		key = k
	}
	if key == "" {
		key = q.Get("writeKey")
	}
	src := s.byKey[key]
	if src == nil {
		fail("unknown", ReasonUnauthorized, "missing or unknown write key")
		return
	}
	if !isEventType(typ) {
		fail(src.Name, ReasonSchema, "unknown type "+typ)
		return
	}
	rq := s.requestOf(r, wk, "pixel")
	rq.canon = canon
	wk.elems = append(wk.elems, raw)
	res := s.handle(r.Context(), src, rq, wk, typ)
	if res.err != nil {
		s.cfg.Logger.Debug("pixel event not accepted", "source", src.Name, "err", res.err)
	}
}

func isEventType(t string) bool {
	for _, et := range EventTypes {
		if t == et {
			return true
		}
	}
	return false
}

func decodeBase64(s string) ([]byte, error) {
	s = strings.ReplaceAll(strings.TrimRight(s, "="), " ", "+") // a '+' the query decoding made a space
	for _, enc := range []*base64.Encoding{base64.RawURLEncoding, base64.RawStdEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}
