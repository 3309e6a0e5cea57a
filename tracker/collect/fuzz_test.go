package collect

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzEventDecoding drives arbitrary bodies through the single-event and
// batch paths: no panic, only the documented statuses, and whatever is
// accepted is JSON that the schema accepts, with a messageId and a key.
func FuzzEventDecoding(f *testing.F) {
	for _, s := range []string{
		`{"userId":"u","event":"E","properties":{"a":[1,2,{"b":null}]}}`,
		`{"anonymousId":"a","event":"E","timestamp":"2026-01-02T03:04:05Z","sentAt":"2026-01-02T03:04:06Z"}`,
		`{"userId":1e3,"event":"E","context":{"ip":"::1","page":{"url":"x"},"userAgent":"Googlebot/2.1"}}`,
		`{"batch":[{"type":"track","userId":"u","event":"E"},{"type":"page"},5,null]}`,
		`{"batch":[],"sentAt":12,"context":[]}`,
		`{"userId":"u","event":"E","messageId":"m","timestamp":1700000000000}`,
		`{"userId":"u","event":"E","context":null,"integrations":{"All":false}}`,
		`{"userId":"\ud800","event":"E"}`,
		`[`, ``, `null`,
	} {
		f.Add(s, false)
		f.Add(s, true)
	}
	sink := &memSink{}
	s, err := New(Config{Sources: []Source{{Name: "s", WriteKey: key, Topic: "events", InvalidTopic: "events.invalid"}}}, sink)
	if err != nil {
		f.Fatal(err)
	}
	src := s.byKey[key]
	f.Fuzz(func(t *testing.T, body string, batch bool) {
		path := "/v1/track"
		if batch {
			path = "/v1/batch"
		}
		req := httptest.NewRequest("POST", path, strings.NewReader(body))
		req.SetBasicAuth(key, "")
		req.Header.Set("User-Agent", body[:min(len(body), 64)])
		w := httptest.NewRecorder()
		sink.events = sink.events[:0]
		s.ServeHTTP(w, req)
		switch w.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusForbidden, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d for %q", w.Code, body)
		}
		if !json.Valid(w.Body.Bytes()) {
			t.Fatalf("answer is not JSON: %q", w.Body.String())
		}
		for _, e := range sink.events {
			if e.Topic != "events" {
				continue
			}
			if path, reason := src.validate(e.Value); reason != "" {
				t.Fatalf("accepted event fails its schema at %s: %s: %s", path, reason, e.Value)
			}
			if e.MessageID == "" || len(e.Key) == 0 {
				t.Fatalf("accepted event without messageId or key: %s", e.Value)
			}
		}
	})
}
