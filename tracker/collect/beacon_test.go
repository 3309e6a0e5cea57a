package collect

import "testing"

// tracker.js sends what navigator.sendBeacon can: a text/plain POST (a CORS
// "simple" request, no preflight) with no Authorization header, so the write
// key is in the body. The collector must take it as it takes JSON.
func TestBeaconTextPlainBatch(t *testing.T) {
	f := newFixture(t, nil)
	hdr := map[string]string{"Content-Type": "text/plain;charset=UTF-8", "Origin": "https://shop.example", "User-Agent": ua}
	r := f.do(t, "POST", "/v1/batch", "", `{"writeKey":"`+keyWeb+`","sentAt":"2026-11-30T12:00:00.000Z","batch":[`+
		`{"type":"page","anonymousId":"a-1","messageId":"m-1","properties":{"path":"/"}},`+
		`{"type":"track","anonymousId":"a-1","messageId":"m-2","event":"Clicked"}]}`, hdr)
	if r.code != 200 || r.body["accepted"] != 2.0 {
		t.Fatalf("text/plain beacon: %d %s", r.code, r.raw)
	}
	if got := r.hdr.Get("Access-Control-Allow-Origin"); got != "https://shop.example" {
		t.Errorf("Access-Control-Allow-Origin %q: the page's fetch could not read the answer", got)
	}
	evs := f.sink.topic("web")
	if len(evs) != 2 {
		t.Fatalf("%d events in the source's topic", len(evs))
	}
	m := decodeEvent(t, evs[1])
	if m["event"] != "Clicked" || m["channel"] != "browser" || m["writeKey"] != nil || dig(m, "context", "ip") != "127.0.0.0" {
		t.Errorf("event %v", m)
	}

	// The body's key is checked like a Basic auth one: an origin the
	// source does not list is refused even with a valid key.
	hdr["Origin"] = "https://evil.example"
	if r := f.do(t, "POST", "/v1/batch", "", `{"writeKey":"`+keyWeb+`","batch":[{"type":"track","anonymousId":"a","event":"E"}]}`, hdr); r.code != 403 {
		t.Errorf("foreign origin with the body's key: %d %s", r.code, r.raw)
	}
}
