package collect

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// The collector copies what it does not change as it was sent; these are
// the cases where that could have differed from decoding the event into a
// map and encoding it again, as the collector did before: each must read
// the same to whoever decodes the stored event.
func TestSpliceReadsAsDecoded(t *testing.T) {
	f := newFixture(t, nil)
	post := func(path, body string, hdr map[string]string) map[string]any {
		t.Helper()
		n := len(f.sink.all())
		r := f.do(t, "POST", path, key, body, hdr)
		if r.code != 200 || len(f.sink.all()) != n+1 {
			t.Fatalf("%s: %d %s", body, r.code, r.raw)
		}
		e := f.sink.all()[n]
		if !json.Valid(e.Value) || !utf8.Valid(e.Value) {
			t.Fatalf("%s: stored %q", body, e.Value)
		}
		return decodeEvent(t, e)
	}

	// A repeated key: the last one counts, and is the only one stored.
	m := post("/v1/track", `{"userId":"first","event":"E","userId":"last","messageId":"m1","messageId":"m2"}`, nil)
	if m["userId"] != "last" || m["messageId"] != "m2" {
		t.Errorf("repeated keys: %v", m)
	}
	if e := f.sink.all()[0]; strings.Count(string(e.Value), `"userId"`) != 1 || string(e.Key) != "last" || e.MessageID != "m2" {
		t.Errorf("repeated keys stored as %s (key %s, id %s)", e.Value, e.Key, e.MessageID)
	}
	// An escaped key is the key it decodes to.
	m = post("/v1/track", `{"\u0075serId":"u-esc","event":"E","context":{"\u0069p":"1.2.3.4"}}`, nil)
	if m["userId"] != "u-esc" || dig(m, "context", "ip") != "127.0.0.0" {
		t.Errorf("escaped keys: %v", m)
	}
	// Numeric ids become strings; escaped string values are decoded for the key.
	post("/v1/track", `{"userId":"caf\u00e9","anonymousId":12.50,"event":"E"}`, nil)
	if e := f.sink.all()[len(f.sink.all())-1]; string(e.Key) != "café" {
		t.Errorf("key %q", e.Key)
	}
	m = post("/v1/track", `{"anonymousId":12.50,"event":"E"}`, nil)
	if m["anonymousId"] != "12.50" {
		t.Errorf("numeric id %v", m["anonymousId"])
	}
	// Nulls: messageId, timestamp, channel and context are filled in;
	// a null originalTimestamp is kept, as a present key.
	m = post("/v1/track", `{"userId":"u","event":"E","messageId":null,"timestamp":null,"channel":null,"context":null,"sentAt":null}`, nil)
	if id, _ := m["messageId"].(string); !strings.HasPrefix(id, "trb-") || m["timestamp"] != m["receivedAt"] || m["channel"] != "server" || dig(m, "context", "ip") != "127.0.0.0" {
		t.Errorf("nulls: %v", m)
	}
	// What the sender set in context.browser stays; what it left out (or
	// null) is filled in from the user agent; a bot is a bot whatever the
	// sender said.
	m = post("/v1/track", `{"userId":"u","event":"E","context":{"browser":{"name":"Mine","version":null},"device":{"type":"desktop"},"userAgent":"`+uaBot+`"}}`, nil)
	if dig(m, "context", "browser", "name") != "Mine" || dig(m, "context", "browser", "version") != "2.1" || dig(m, "context", "device", "type") != "bot" {
		t.Errorf("context objects: %v", m["context"])
	}
	// The batch's context goes under each event's, without overriding it;
	// envelope names match case-insensitively, and what follows the body's
	// JSON value is ignored, as encoding/json did.
	m = post("/v1/batch", `{"Batch":[{"type":"page","userId":"u","context":{"locale":"de-DE"}}],"SENTAT":"2026-11-30T12:00:00Z","context":{"locale":"en-US","timezone":"Europe/Paris","library":{"name":"lib"}}} trailing`, nil)
	if dig(m, "context", "locale") != "de-DE" || dig(m, "context", "timezone") != "Europe/Paris" || dig(m, "context", "library", "name") != "lib" || m["sentAt"] != "2026-11-30T12:00:00Z" {
		t.Errorf("batch context: %v", m)
	}
	// Bytes that are not UTF-8 and escaped lone surrogates read as U+FFFD.
	m = post("/v1/track", "{\"userId\":\"u\xff\",\"event\":\"E\",\"properties\":{\"s\":\"\\ud800x\"}}", nil)
	if m["userId"] != "u\ufffd" || dig(m, "properties", "s") != "\ufffdx" {
		t.Errorf("invalid UTF-8: %q %q", m["userId"], dig(m, "properties", "s"))
	}
	// Whitespace anywhere is fine.
	m = post("/v1/batch", " {\n \"batch\" : [ { \"type\" : \"track\" , \"userId\" : \"u\" , \"event\" : \"E\" , \"properties\" : { \"a\" : [ 1 , 2 ] } } ] } ", nil)
	if p, _ := json.Marshal(m["properties"]); string(p) != `{"a":[1,2]}` {
		t.Errorf("properties %s", p)
	}
}

// The scanner accepts exactly what encoding/json accepts.
func FuzzScannerAgreesWithEncodingJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[1,2,{"a":null}]`, `"\u00e9\ud800"`, `-0.5e+3`, `01`, `1.`, `{"a":1,}`, `[1,]`, "\"\x01\"", `"\x"`, `tru`, `nul`, ` { "a" : [ ] } `, `NaN`, `{"a" "b"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		sc := scanner{b: b}
		end, err := sc.value(skipWS(b, 0), 0)
		ok := err == nil && skipWS(b, end) == len(b)
		if want := json.Valid(b); ok != want {
			t.Fatalf("%q: scanner says %v (%v), encoding/json %v", b, ok, err, want)
		}
	})
}
