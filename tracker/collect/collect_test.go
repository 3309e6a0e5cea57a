package collect

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/tributary-io/tributary/tracker"
)

// memSink is an in-memory tracker.Sink; fail makes Submit refuse.
type memSink struct {
	mu     sync.Mutex
	events []tracker.Event
	fail   error
}

func (m *memSink) Submit(_ context.Context, evs []tracker.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return m.fail
	}
	m.events = append(m.events, evs...)
	return nil
}

func (m *memSink) Close() error { return nil }

func (m *memSink) all() []tracker.Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]tracker.Event(nil), m.events...)
}

func (m *memSink) topic(t string) []tracker.Event {
	var out []tracker.Event
	for _, e := range m.all() {
		if e.Topic == t {
			out = append(out, e)
		}
	}
	return out
}

const (
	key     = "wk-test"
	keyWeb  = "wk-web"
	ua      = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.6367.60 Safari/537.36"
	uaPhone = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1"
	uaBot   = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
)

var testNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

type fixture struct {
	s    *Server
	sink *memSink
	reg  *prometheus.Registry
	ts   *httptest.Server
}

func newFixture(t *testing.T, mod func(*Config)) *fixture {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg := Config{
		Sources: []Source{
			{Name: "server", WriteKey: key, Topic: "events", InvalidTopic: "events.invalid"},
			{Name: "web", WriteKey: keyWeb, Topic: "web", Types: []string{"page", "track", "identify"}, CORSOrigins: []string{"https://shop.example"}},
		},
		Registry: reg,
		Now:      func() time.Time { return testNow },
	}
	if mod != nil {
		mod(&cfg)
	}
	sink := &memSink{}
	s, err := New(cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return &fixture{s: s, sink: sink, reg: reg, ts: ts}
}

type resp struct {
	code int
	hdr  http.Header
	body map[string]any
	raw  []byte
}

func (f *fixture) do(t *testing.T, method, path, wk, body string, hdr map[string]string) resp {
	t.Helper()
	req, err := http.NewRequest(method, f.ts.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if wk != "" {
		req.SetBasicAuth(wk, "")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	r := resp{code: res.StatusCode, hdr: res.Header, raw: raw}
	json.Unmarshal(raw, &r.body)
	return r
}

func decodeEvent(t *testing.T, e tracker.Event) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.Value, &m); err != nil {
		t.Fatalf("event value %s: %v", e.Value, err)
	}
	return m
}

func dig(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[p]
	}
	return v
}

func counter(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

func TestEndpointsHappyPath(t *testing.T) {
	f := newFixture(t, nil)
	cases := []struct{ path, body, typ string }{
		{"/v1/track", `{"userId":"u1","event":"Signed Up","properties":{"plan":"pro"}}`, "track"},
		{"/v1/page", `{"anonymousId":"a1","name":"Home","properties":{"path":"/"}}`, "page"},
		{"/v1/screen", `{"userId":"u1","name":"Settings"}`, "screen"},
		{"/v1/identify", `{"userId":"u1","traits":{"email":"u1@example.com"}}`, "identify"},
		{"/v1/group", `{"userId":"u1","groupId":"g1","traits":{"name":"Acme"}}`, "group"},
		{"/v1/alias", `{"userId":"u1","previousId":"a1"}`, "alias"},
		{"/v1/t", `{"userId":"u1","event":"Short"}`, "track"},
	}
	for _, c := range cases {
		r := f.do(t, "POST", c.path, key, c.body, map[string]string{"User-Agent": ua})
		if r.code != 200 || r.body["success"] != true {
			t.Fatalf("%s: %d %s", c.path, r.code, r.raw)
		}
	}
	evs := f.sink.all()
	if len(evs) != len(cases) {
		t.Fatalf("%d events, want %d", len(evs), len(cases))
	}
	for i, e := range evs {
		m := decodeEvent(t, e)
		if m["type"] != cases[i].typ || e.Topic != "events" {
			t.Errorf("%s: type %v topic %s", cases[i].path, m["type"], e.Topic)
		}
		if m["messageId"] == "" || m["messageId"] != e.MessageID {
			t.Errorf("%s: messageId %v / %s", cases[i].path, m["messageId"], e.MessageID)
		}
		if m["receivedAt"] != "2026-11-30T12:00:00.000Z" || m["timestamp"] != m["receivedAt"] {
			t.Errorf("%s: receivedAt %v timestamp %v", cases[i].path, m["receivedAt"], m["timestamp"])
		}
		if m["channel"] != "server" || dig(m, "context", "ip") != "127.0.0.0" {
			t.Errorf("%s: channel %v ip %v", cases[i].path, m["channel"], dig(m, "context", "ip"))
		}
		if dig(m, "context", "browser", "name") != "Chrome" {
			t.Errorf("%s: context %v", cases[i].path, m["context"])
		}
		if _, ok := m["writeKey"]; ok {
			t.Errorf("the write key was stored")
		}
	}
	if string(evs[1].Key) != "a1" || string(evs[0].Key) != "u1" {
		t.Errorf("keys %q %q", evs[0].Key, evs[1].Key)
	}
	if got := counter(t, f.s.m.accepted.WithLabelValues("server")); got != float64(len(cases)) {
		t.Errorf("accepted metric %v", got)
	}
}

func TestKeyUserIDElseAnonymousID(t *testing.T) {
	f := newFixture(t, nil)
	f.do(t, "POST", "/v1/track", key, `{"userId":"u9","anonymousId":"a9","event":"E"}`, nil)
	f.do(t, "POST", "/v1/track", key, `{"anonymousId":"a9","event":"E"}`, nil)
	f.do(t, "POST", "/v1/track", key, `{"userId":42,"event":"E"}`, nil)
	evs := f.sink.all()
	if len(evs) != 3 || string(evs[0].Key) != "u9" || string(evs[1].Key) != "a9" || string(evs[2].Key) != "42" {
		t.Fatalf("keys: %v", evs)
	}
}

func TestWriteKeyFieldAndAuth(t *testing.T) {
	f := newFixture(t, nil)
	if r := f.do(t, "POST", "/v1/track", "", `{"writeKey":"wk-test","userId":"u","event":"E"}`, nil); r.code != 200 {
		t.Fatalf("writeKey field: %d %s", r.code, r.raw)
	}
	r := f.do(t, "POST", "/v1/track", "", `{"userId":"u","event":"E"}`, nil)
	if r.code != 401 || !strings.Contains(r.body["error"].(string), "missing write key") {
		t.Fatalf("no key: %d %s", r.code, r.raw)
	}
	r = f.do(t, "POST", "/v1/track", "nope", `{"userId":"u","event":"E"}`, nil)
	if r.code != 401 || !strings.Contains(r.body["error"].(string), "unknown write key") {
		t.Fatalf("unknown key: %d %s", r.code, r.raw)
	}
	r = f.do(t, "POST", "/v1/batch", "", `{"writeKey":"bad","batch":[{"type":"track","userId":"u","event":"E"}]}`, nil)
	if r.code != 401 {
		t.Fatalf("batch unknown key: %d %s", r.code, r.raw)
	}
	if got := counter(t, f.s.m.rejected.WithLabelValues("unknown", ReasonUnauthorized)); got != 3 {
		t.Errorf("unauthorized count %v", got)
	}
	if len(f.sink.all()) != 1 {
		t.Errorf("sink got %d", len(f.sink.all()))
	}
}

func TestMalformedJSON(t *testing.T) {
	f := newFixture(t, nil)
	for _, body := range []string{`{"userId":`, `[1,2]`, `"x"`, ``, `{"userId":"u","event":"E"} trailing`, `null`} {
		r := f.do(t, "POST", "/v1/track", key, body, nil)
		if r.code != 400 || r.body["code"] != ReasonMalformed {
			t.Errorf("%q: %d %s", body, r.code, r.raw)
		}
	}
	r := f.do(t, "POST", "/v1/batch", key, `{"batch":{}}`, nil)
	if r.code != 400 {
		t.Errorf("batch not an array: %d %s", r.code, r.raw)
	}
	r = f.do(t, "POST", "/v1/batch", key, `{}`, nil)
	if r.code != 400 || !strings.Contains(r.body["error"].(string), "batch") {
		t.Errorf("no batch: %d %s", r.code, r.raw)
	}
	if n := len(f.sink.all()); n != 0 {
		t.Errorf("%d events stored", n)
	}
}

func TestOversize(t *testing.T) {
	f := newFixture(t, nil)
	big := `{"userId":"u","event":"E","properties":{"x":"` + strings.Repeat("a", 33<<10) + `"}}`
	r := f.do(t, "POST", "/v1/track", key, big, nil)
	if r.code != 413 || !strings.Contains(r.body["error"].(string), "32768") {
		t.Fatalf("event: %d %s", r.code, r.raw)
	}
	var sb strings.Builder
	sb.WriteString(`{"batch":[`)
	for i := range 20 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"type":"track","userId":"u","event":"E","properties":{"x":"%s"}}`, strings.Repeat("b", 30<<10))
	}
	sb.WriteString(`]}`)
	r = f.do(t, "POST", "/v1/batch", key, sb.String(), nil)
	if r.code != 413 || !strings.Contains(r.body["error"].(string), "512000") {
		t.Fatalf("batch: %d %s", r.code, r.raw)
	}
	// One oversize event in a batch is rejected alone.
	body := `{"batch":[{"type":"track","userId":"u","event":"ok"},` + big + `]}`
	body = strings.Replace(body, `{"userId":"u","event":"E","properties"`, `{"type":"track","userId":"u","event":"E","properties"`, 1)
	r = f.do(t, "POST", "/v1/batch", key, body, nil)
	if r.code != 200 || r.body["accepted"] != 1.0 {
		t.Fatalf("batch with a big event: %d %s", r.code, r.raw)
	}
	rej := r.body["rejected"].([]any)[0].(map[string]any)
	if rej["index"] != 1.0 || rej["code"] != ReasonTooLarge || !strings.Contains(rej["reason"].(string), "32768") {
		t.Fatalf("rejection %v", rej)
	}
	// Configurable.
	f2 := newFixture(t, func(c *Config) { c.MaxEventBytes = 100 })
	r = f2.do(t, "POST", "/v1/track", key, `{"userId":"u","event":"E","properties":{"x":"`+strings.Repeat("a", 100)+`"}}`, nil)
	if r.code != 413 || !strings.Contains(r.body["error"].(string), "100 bytes") {
		t.Fatalf("limit 100: %d %s", r.code, r.raw)
	}
}

func TestSchemaViolation(t *testing.T) {
	f := newFixture(t, nil)
	cases := []struct{ body, path string }{
		{`{"userId":"u","event":"E","timestamp":"yesterday"}`, "timestamp"},
		{`{"userId":"u","event":"E","context":{"page":{"url":7}}}`, "context.page.url"},
		{`{"userId":"u","event":"E","context":"x"}`, "context"},
		{`{"userId":"u","event":"E","messageId":5}`, "messageId"},
		{`{"event":"E"}`, "userId"},
		{`{"userId":"u"}`, "event"},
		{`{"userId":"u","event":["E"]}`, "event"},
	}
	for _, c := range cases {
		r := f.do(t, "POST", "/v1/track", key, c.body, nil)
		if r.code != 400 || r.body["path"] != c.path || r.body["code"] != ReasonSchema || !strings.HasPrefix(r.body["error"].(string), c.path+": ") {
			t.Errorf("%s: %d %s", c.body, r.code, r.raw)
		}
	}
	if got := counter(t, f.s.m.rejected.WithLabelValues("server", ReasonSchema)); got != float64(len(cases)) {
		t.Errorf("schema rejections counted %v", got)
	}
	// Sent raw to events.invalid (this source has an invalid topic).
	inv := f.sink.topic("events.invalid")
	if len(inv) != len(cases) || string(inv[0].Value) != cases[0].body {
		t.Fatalf("invalid topic: %d events: %v", len(inv), inv)
	}
	if n := len(f.sink.topic("events")); n != 0 {
		t.Errorf("%d invalid events in the topic", n)
	}
	for _, r := range []resp{
		f.do(t, "POST", "/v1/group", key, `{"userId":"u"}`, nil),
		f.do(t, "POST", "/v1/alias", key, `{"userId":"u"}`, nil),
	} {
		if r.code != 400 {
			t.Errorf("%d %s", r.code, r.raw)
		}
	}
}

func TestBatchPartlyInvalid(t *testing.T) {
	f := newFixture(t, nil)
	body := `{"sentAt":"2026-11-30T12:00:10Z","context":{"library":{"name":"analytics-node","version":"2.0"}},"batch":[
		{"type":"track","userId":"u1","event":"A","timestamp":"2026-11-30T12:00:05Z"},
		{"type":"nope","userId":"u1"},
		{"type":"identify","userId":"u1","traits":{"a":1}},
		7,
		{"type":"page","anonymousId":"a1","context":{"page":{"url":false}}},
		{"type":"track","userId":"u2","event":"B","messageId":"m-b"}
	]}`
	r := f.do(t, "POST", "/v1/batch", key, body, nil)
	if r.code != 200 || r.body["accepted"] != 3.0 {
		t.Fatalf("%d %s", r.code, r.raw)
	}
	rej := r.body["rejected"].([]any)
	var got []string
	for _, x := range rej {
		m := x.(map[string]any)
		got = append(got, fmt.Sprintf("%v:%v:%v", m["index"], m["code"], m["path"]))
	}
	want := "1:schema:type 3:malformed_json:<nil> 4:schema:context.page.url"
	if strings.Join(got, " ") != want {
		t.Fatalf("rejected %v, want %s", got, want)
	}
	evs := f.sink.topic("events")
	if len(evs) != 3 {
		t.Fatalf("%d events", len(evs))
	}
	m := decodeEvent(t, evs[0])
	// Skew correction: sent 5 s after it happened by the client's clock.
	if m["timestamp"] != "2026-11-30T11:59:55.000Z" || m["originalTimestamp"] != "2026-11-30T12:00:05Z" || m["sentAt"] != "2026-11-30T12:00:10Z" {
		t.Errorf("timestamps %v %v %v", m["timestamp"], m["originalTimestamp"], m["sentAt"])
	}
	if dig(m, "context", "library", "name") != "analytics-node" {
		t.Errorf("batch context not merged: %v", m["context"])
	}
	if evs[2].MessageID != "m-b" {
		t.Errorf("messageId %s", evs[2].MessageID)
	}
	// All invalid: 400 with the list.
	r = f.do(t, "POST", "/v1/batch", key, `{"batch":[{"type":"track"},{}]}`, nil)
	if r.code != 400 || len(r.body["rejected"].([]any)) != 2 {
		t.Fatalf("all invalid: %d %s", r.code, r.raw)
	}
}

func TestTypesAllowed(t *testing.T) {
	f := newFixture(t, nil)
	r := f.do(t, "POST", "/v1/group", keyWeb, `{"userId":"u","groupId":"g"}`, nil)
	if r.code != 403 || r.body["code"] != ReasonType {
		t.Fatalf("%d %s", r.code, r.raw)
	}
	r = f.do(t, "POST", "/v1/batch", keyWeb, `{"batch":[{"type":"alias","userId":"u","previousId":"p"},{"type":"page","userId":"u"}]}`, nil)
	if r.code != 200 || r.body["accepted"] != 1.0 {
		t.Fatalf("%d %s", r.code, r.raw)
	}
	if e := f.sink.all(); len(e) != 1 || e[0].Topic != "web" {
		t.Fatalf("%v", e)
	}
}

func TestCORS(t *testing.T) {
	f := newFixture(t, nil)
	pre := func(origin string) resp {
		return f.do(t, "OPTIONS", "/v1/track", "", "", map[string]string{"Origin": origin, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"})
	}
	r := pre("https://shop.example")
	if r.code != 204 || r.hdr.Get("Access-Control-Allow-Origin") != "https://shop.example" || !strings.Contains(r.hdr.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Fatalf("allowed preflight: %d %v", r.code, r.hdr)
	}
	r = pre("https://evil.example")
	if r.code != 403 || r.hdr.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("refused preflight: %d %v", r.code, r.hdr)
	}
	// The request itself is checked against its own source.
	ok := map[string]string{"Origin": "https://shop.example", "User-Agent": ua}
	r = f.do(t, "POST", "/v1/page", keyWeb, `{"anonymousId":"a","name":"Home"}`, ok)
	if r.code != 200 || r.hdr.Get("Access-Control-Allow-Origin") != "https://shop.example" {
		t.Fatalf("allowed request: %d %v", r.code, r.hdr)
	}
	if m := decodeEvent(t, f.sink.all()[0]); m["channel"] != "browser" {
		t.Errorf("channel %v", m["channel"])
	}
	r = f.do(t, "POST", "/v1/page", key, `{"anonymousId":"a","name":"Home"}`, ok) // source "server" allows no browser
	if r.code != 403 || r.body["code"] != ReasonOrigin || r.hdr.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("origin of another source: %d %v %s", r.code, r.hdr, r.raw)
	}
	r = f.do(t, "POST", "/v1/page", keyWeb, `{"anonymousId":"a","name":"Home"}`, map[string]string{"Origin": "https://evil.example"})
	if r.code != 403 {
		t.Fatalf("unknown origin: %d", r.code)
	}
	if n := len(f.sink.all()); n != 1 {
		t.Errorf("%d events", n)
	}
}

func TestPixel(t *testing.T) {
	f := newFixture(t, nil)
	get := func(q string) resp {
		r := f.do(t, "GET", "/v1/pixel.gif?"+q, "", "", map[string]string{"User-Agent": ua})
		if r.code != 200 || r.hdr.Get("Content-Type") != "image/gif" || !bytes.Equal(r.raw, gif1x1) {
			t.Fatalf("%s: %d %v", q, r.code, r.hdr)
		}
		return r
	}
	get("writeKey=wk-test&event=Email+Opened&userId=u1&campaign=nov&properties.list=weekly")
	data := base64.URLEncoding.EncodeToString([]byte(`{"writeKey":"wk-test","type":"page","anonymousId":"a1","name":"Offline"}`))
	get("data=" + data)
	evs := f.sink.all()
	if len(evs) != 2 {
		t.Fatalf("%d events", len(evs))
	}
	m := decodeEvent(t, evs[0])
	if m["event"] != "Email Opened" || m["channel"] != "pixel" || dig(m, "properties", "campaign") != "nov" {
		t.Errorf("pixel event %v", m)
	}
	if p, _ := json.Marshal(m["properties"]); !bytes.Contains(p, []byte("weekly")) {
		t.Errorf("properties %s", p)
	}
	if m := decodeEvent(t, evs[1]); m["type"] != "page" || m["name"] != "Offline" {
		t.Errorf("data event %v", m)
	}
	// Garbage always gets the GIF and is counted.
	for _, q := range []string{"", "data=%%%", "data=bm90IGpzb24", "writeKey=nope&event=E&userId=u", "writeKey=wk-test&type=bogus&userId=u", "writeKey=wk-test&event=E", "writeKey=wk-test&userId=u&timestamp=garbage&event=E", "x=" + strings.Repeat("y", 40<<10)} {
		get(q)
	}
	if n := len(f.sink.topic("events")); n != 2 {
		t.Errorf("%d events after garbage", n)
	}
	// Invalid ones from a known source went raw to its invalid topic,
	// without the write key the pixel's parameters carried.
	inv := f.sink.topic("events.invalid")
	if len(inv) != 2 || string(inv[0].Value) != `{"event":"E"}` {
		t.Errorf("invalid topic: %v", inv)
	}
	total := 0.0
	for _, src := range []string{"unknown", "server"} {
		for _, reason := range []string{ReasonMalformed, ReasonUnauthorized, ReasonSchema, ReasonTooLarge} {
			total += counter(t, f.s.m.rejected.WithLabelValues(src, reason))
		}
	}
	if total != 8 {
		t.Errorf("pixel errors counted %v, want 8", total)
	}
	if r := f.do(t, "POST", "/v1/pixel.gif", "", "", nil); r.code != 405 {
		t.Errorf("POST pixel: %d", r.code)
	}
}

func TestSinkFull503(t *testing.T) {
	f := newFixture(t, nil)
	f.sink.fail = errors.New("tracker/spool: spool full")
	r := f.do(t, "POST", "/v1/track", key, `{"userId":"u","event":"E","messageId":"m1"}`, nil)
	if r.code != 503 || r.hdr.Get("Retry-After") != "5" || !strings.Contains(r.body["error"].(string), "spool full") {
		t.Fatalf("%d %v %s", r.code, r.hdr, r.raw)
	}
	r = f.do(t, "POST", "/v1/batch", key, `{"batch":[{"type":"track","userId":"u","event":"E"}]}`, nil)
	if r.code != 503 {
		t.Fatalf("batch %d", r.code)
	}
	// The retry after the 503 is not a duplicate.
	f.sink.fail = nil
	r = f.do(t, "POST", "/v1/track", key, `{"userId":"u","event":"E","messageId":"m1"}`, nil)
	if r.code != 200 || len(f.sink.all()) != 1 {
		t.Fatalf("retry: %d %d", r.code, len(f.sink.all()))
	}
	f.sink.fail = retryErr{}
	if r := f.do(t, "POST", "/v1/track", key, `{"userId":"u","event":"E"}`, nil); r.hdr.Get("Retry-After") != "30" {
		t.Fatalf("RetryAfter from the error: %v", r.hdr)
	}
}

type retryErr struct{}

func (retryErr) Error() string             { return "busy" }
func (retryErr) RetryAfter() time.Duration { return 30 * time.Second }

func TestDedup(t *testing.T) {
	now := testNow
	f := newFixture(t, func(c *Config) { c.Now = func() time.Time { return now }; c.DedupWindow = time.Minute })
	ev := `{"userId":"u","event":"E","messageId":"dup-1"}`
	for range 3 {
		if r := f.do(t, "POST", "/v1/track", key, ev, nil); r.code != 200 {
			t.Fatal(r.code)
		}
	}
	r := f.do(t, "POST", "/v1/batch", key, `{"batch":[{"type":"track","userId":"u","event":"E","messageId":"dup-1"},{"type":"track","userId":"u","event":"E","messageId":"dup-2"},{"type":"track","userId":"u","event":"E","messageId":"dup-2"}]}`, nil)
	if r.code != 200 || r.body["accepted"] != 1.0 || r.body["duplicates"] != 2.0 {
		t.Fatalf("batch: %s", r.raw)
	}
	// The same id from another source is not a duplicate.
	f.do(t, "POST", "/v1/track", keyWeb, ev, nil)
	if n := len(f.sink.all()); n != 3 {
		t.Fatalf("%d events, want 3", n)
	}
	if got := counter(t, f.s.m.duplicates.WithLabelValues("server")); got != 4 {
		t.Errorf("duplicates %v", got)
	}
	// After the window (at most two), the id is forgotten.
	now = now.Add(2*time.Minute + time.Second)
	f.do(t, "POST", "/v1/track", key, ev, nil)
	if n := len(f.sink.all()); n != 4 {
		t.Fatalf("after the window %d events", n)
	}
	// Disabled.
	f2 := newFixture(t, func(c *Config) { c.DedupDisabled = true })
	f2.do(t, "POST", "/v1/track", key, ev, nil)
	f2.do(t, "POST", "/v1/track", key, ev, nil)
	if n := len(f2.sink.all()); n != 2 {
		t.Fatalf("dedup off: %d", n)
	}
}

func TestDedupBounded(t *testing.T) {
	d := newDedup(time.Hour, 100)
	seeds := newDedupSeeds()
	k := func(id string) dedupKey { return seeds.key([]byte(id)) }
	for i := range 1000 {
		d.mark([]dedupKey{k(fmt.Sprint(i))}, testNow)
	}
	if n := len(d.cur) + len(d.prev); n > 100 {
		t.Fatalf("%d ids kept, max 100", n)
	}
	if !d.seen(k("999"), testNow) || d.seen(k("0"), testNow) {
		t.Fatal("recent id forgotten or old id kept")
	}
}

func TestAnonymizeIP(t *testing.T) {
	for in, want := range map[string]string{
		"203.0.113.77":                 "203.0.113.0",
		"::ffff:203.0.113.77":          "203.0.113.0",
		"2001:db8:abcd:12:34:56:78:9a": "2001:db8:abcd::",
		"::1":                          "::",
	} {
		if got := AnonymizeIP(netip.MustParseAddr(in)).String(); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

func TestIPModesAndProxies(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}
	req := func(peer string, xff ...string) *http.Request {
		r := httptest.NewRequest("POST", "/v1/track", nil)
		r.RemoteAddr = peer
		for _, x := range xff {
			r.Header.Add("X-Forwarded-For", x)
		}
		return r
	}
	for _, c := range []struct {
		r    *http.Request
		want string
	}{
		{req("198.51.100.7:5000", "1.2.3.4"), "198.51.100.7"},           // untrusted peer: XFF ignored
		{req("10.1.1.1:5000", "1.2.3.4"), "1.2.3.4"},                    // trusted peer
		{req("10.1.1.1:5000", "6.6.6.6, 1.2.3.4, 10.2.2.2"), "1.2.3.4"}, // right-most untrusted
		{req("10.1.1.1:5000", "6.6.6.6", "1.2.3.4"), "1.2.3.4"},         // several headers
		{req("10.1.1.1:5000", "garbage"), "10.1.1.1"},
		{req("10.1.1.1:5000"), "10.1.1.1"},
		{req("[2001:db8::1]:80", "1.2.3.4"), "2001:db8::1"},
	} {
		if got := ClientIP(c.r, trusted).String(); got != c.want {
			t.Errorf("%s %v: %s, want %s", c.r.RemoteAddr, c.r.Header.Values("X-Forwarded-For"), got, c.want)
		}
	}
	for mode, want := range map[IPMode]any{IPAnonymize: "127.0.0.0", IPKeep: "127.0.0.1", IPDrop: nil} {
		f := newFixture(t, func(c *Config) { c.IP = mode })
		f.do(t, "POST", "/v1/track", key, `{"userId":"u","event":"E","context":{"ip":"9.9.9.9"}}`, nil)
		if got := dig(decodeEvent(t, f.sink.all()[0]), "context", "ip"); got != want {
			t.Errorf("%s: ip %v, want %v", mode, got, want)
		}
	}
	f := newFixture(t, func(c *Config) {
		c.TrustedProxies = trusted
		c.Sources[0].TrustContextIP = true
	})
	f.do(t, "POST", "/v1/track", key, `{"userId":"u","event":"E","context":{"ip":"9.9.9.9"}}`, nil)
	f.do(t, "POST", "/v1/track", key, `{"userId":"u","event":"E"}`, map[string]string{"X-Forwarded-For": "8.8.4.4"})
	evs := f.sink.all()
	if got := dig(decodeEvent(t, evs[0]), "context", "ip"); got != "9.9.9.0" {
		t.Errorf("trusted context.ip: %v", got)
	}
	if got := dig(decodeEvent(t, evs[1]), "context", "ip"); got != "8.8.4.0" {
		t.Errorf("forwarded: %v", got)
	}
}

func TestUserAgent(t *testing.T) {
	for s, want := range map[string]UA{
		ua:      {Browser: "Chrome", BrowserVersion: "124.0.6367.60", OS: "Windows", OSVersion: "10.0", DeviceType: "desktop"},
		uaPhone: {Browser: "Safari", BrowserVersion: "17.4", OS: "iOS", OSVersion: "17.4", DeviceType: "mobile", DeviceModel: "iPhone"},
		uaBot:   {Browser: "Googlebot", BrowserVersion: "2.1", DeviceType: "bot", Bot: true},
	} {
		got := ParseUA(s)
		if got != want {
			t.Errorf("%s:\n got %+v\nwant %+v", s, got, want)
		}
	}
	f := newFixture(t, nil)
	f.do(t, "POST", "/v1/track", key, `{"userId":"u","event":"E"}`, map[string]string{"User-Agent": uaPhone})
	f.do(t, "POST", "/v1/track", key, `{"userId":"u","event":"E","context":{"userAgent":"`+uaBot+`"}}`, map[string]string{"User-Agent": "server-lib/1"})
	f.do(t, "POST", "/v1/track", key, `{"userId":"u","event":"E","context":{"os":{"name":"Android","version":"14"}}}`, map[string]string{"User-Agent": uaPhone})
	evs := f.sink.all()
	m := decodeEvent(t, evs[0])
	if dig(m, "context", "userAgent") != uaPhone || dig(m, "context", "os", "name") != "iOS" || dig(m, "context", "device", "type") != "mobile" || dig(m, "context", "browser", "name") != "Safari" {
		t.Errorf("phone: %v", m["context"])
	}
	m = decodeEvent(t, evs[1])
	if dig(m, "context", "device", "type") != "bot" || dig(m, "context", "userAgent") != uaBot {
		t.Errorf("bot: %v", m["context"])
	}
	if m := decodeEvent(t, evs[2]); dig(m, "context", "os", "name") != "Android" {
		t.Errorf("the sender's os was overwritten: %v", m["context"])
	}
}

func TestPrivacySignals(t *testing.T) {
	dnt := map[string]string{"DNT": "1", "User-Agent": ua}
	gpc := map[string]string{"Sec-GPC": "1", "User-Agent": ua}
	// Not honoured unless configured.
	f := newFixture(t, nil)
	f.do(t, "POST", "/v1/track", key, `{"userId":"u","event":"E"}`, dnt)
	if len(f.sink.all()) != 1 {
		t.Fatal("DNT honoured by default")
	}
	f = newFixture(t, func(c *Config) { c.HonorDNT, c.HonorGPC = true, true })
	r1 := f.do(t, "POST", "/v1/track", key, `{"userId":"u","event":"E"}`, dnt)
	r2 := f.do(t, "POST", "/v1/track", key, `{"userId":"u","event":"E"}`, gpc)
	if r1.code != 200 || r2.code != 200 || len(f.sink.all()) != 0 {
		t.Fatalf("drop: %d %d %d", r1.code, r2.code, len(f.sink.all()))
	}
	if got := counter(t, f.s.m.privacy.WithLabelValues("server")); got != 2 {
		t.Errorf("privacy count %v", got)
	}
	f = newFixture(t, func(c *Config) { c.HonorGPC, c.PrivacyAction = true, PrivacyStrip })
	f.do(t, "POST", "/v1/track", key, `{"userId":"u","event":"E","context":{"userAgent":"x"}}`, gpc)
	m := decodeEvent(t, f.sink.all()[0])
	if ctx := m["context"].(map[string]any); ctx["ip"] != nil || ctx["userAgent"] != nil || ctx["browser"] != nil {
		t.Errorf("strip kept %v", ctx)
	}
}

func TestGzipAndMethods(t *testing.T) {
	f := newFixture(t, nil)
	var buf bytes.Buffer
	zw := gzipWriter(&buf)
	zw.Write([]byte(`{"batch":[{"type":"track","userId":"u","event":"E"}]}`))
	zw.Close()
	r := f.do(t, "POST", "/v1/batch", key, buf.String(), map[string]string{"Content-Encoding": "gzip"})
	if r.code != 200 || r.body["accepted"] != 1.0 {
		t.Fatalf("gzip: %d %s", r.code, r.raw)
	}
	if r := f.do(t, "GET", "/v1/track", key, "", nil); r.code != 405 {
		t.Errorf("GET track: %d", r.code)
	}
	if r := f.do(t, "POST", "/v2/nothing", key, "{}", nil); r.code != 404 {
		t.Errorf("unknown path: %d", r.code)
	}
}

func TestNoWriteKey(t *testing.T) {
	if _, err := New(Config{}, &memSink{}); !errors.Is(err, ErrNoWriteKey) {
		t.Fatalf("%v", err)
	}
	for _, c := range []Config{
		{Sources: []Source{{WriteKey: "a", Topic: "t"}, {WriteKey: "a", Topic: "t"}}},
		{Sources: []Source{{WriteKey: "a"}}},
		{Sources: []Source{{WriteKey: "a", Topic: "t", Types: []string{"click"}}}},
		{Sources: []Source{{WriteKey: "a", Topic: "t"}}, IP: "hash"},
	} {
		if _, err := New(c, &memSink{}); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
}
