package console

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tributary-io/tributary/formats/compat"
	"github.com/tributary-io/tributary/formats/schema"
	"github.com/tributary-io/tributary/formats/srclient"
	"github.com/tributary-io/tributary/internal/testbroker"
	"github.com/tributary-io/tributary/jobs"
)

const paymentSchema = `{"type":"record","name":"Payment","fields":[{"name":"id","type":"string"},{"name":"cents","type":"long"}]}`

// env is one real broker and two consoles on it, one read-only, shared by
// every subtest of TestConsole.
type env struct {
	broker   *testbroker.Broker
	cl       *kgo.Client // the test's own client, to check what the console did
	adm      *kadm.Client
	rw, ro   *httptest.Server
	rwServer *Server
	registry string // the broker's schema registry
	tracker  string // a real tracker's URL, sending to clicks
	lake     string // the clicks-lake job's target directory
}

func startEnv(t *testing.T) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a broker")
	}
	reg := fmt.Sprintf("http://127.0.0.1:%d", testbroker.FreePort(t))
	b := testbroker.Start(t, "group.initial.rebalance.delay.ms=0", "schema.registry.listeners="+reg)
	e := &env{broker: b, registry: reg}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	e.cl, e.adm = cl, kadm.NewClient(cl)
	jobsURL, lake := startJobs(t, b.Addr())
	trackerURL, trackerAdmin := startTracker(t, b.Addr(), "clicks")
	e.tracker, e.lake = trackerURL, lake
	serve := func(readOnly bool) (*httptest.Server, *Server) {
		s, err := New(Config{Seeds: []string{b.Addr()}, ReadOnly: readOnly, LoopbackOnly: true, RegistryURL: reg, JobsURL: jobsURL,
			TrackerURL: trackerAdmin, LakeURI: "file://" + lake, SampleEvery: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(s)
		t.Cleanup(func() { hs.Close(); s.Close() })
		return hs, s
	}
	e.rw, e.rwServer = serve(false)
	e.ro, _ = serve(true)
	return e
}

// startJobs runs a real jobs scheduler in the test's process, as
// `tributary dev` runs one, with a job loading clicks into a directory every
// hour (so only a trigger runs it), and returns its API's URL and the
// job's target directory.
func startJobs(t *testing.T, bootstrap string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	schemaFile := filepath.Join(dir, "activity.yaml")
	if err := os.WriteFile(schemaFile, schema.ActivityYAML(), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "jobs.yaml")
	os.WriteFile(file, []byte(fmt.Sprintf(`jobs:
  - name: clicks-lake
    topics: [clicks]
    target: file://%s
    schema: %s
    time_field: timestamp
    every: 1h
`, filepath.Join(dir, "lake"), schemaFile)), 0o644)
	sched := jobs.New(jobs.Options{ConfigPath: file, Bootstrap: bootstrap, Registry: prometheus.NewRegistry()})
	if err := sched.Load(); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	if err := sched.Start(ctx); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(sched.Handler(nil))
	t.Cleanup(func() { hs.Close(); stop(); sched.Wait() })
	return hs.URL, filepath.Join(dir, "lake")
}

// browserish is an HTTP client with a cookie jar that does not follow
// redirects, so a test sees the 303 of a change.
type browserish struct {
	t    *testing.T
	base string
	c    *http.Client
}

func newBrowserish(t *testing.T, base string) *browserish {
	jar, _ := cookiejar.New(nil)
	return &browserish{t: t, base: base, c: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browserish) get(path string) (int, string) {
	b.t.Helper()
	resp, err := b.c.Get(b.base + path)
	if err != nil {
		b.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

var csrfRE = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// token loads a page and returns the CSRF token its forms carry.
func (b *browserish) token(path string) string {
	b.t.Helper()
	code, body := b.get(path)
	m := csrfRE.FindStringSubmatch(body)
	if code != 200 || m == nil {
		b.t.Fatalf("GET %s: %d, no csrf token in the page:\n%s", path, code, body)
	}
	return m[1]
}

// post sends a form with the token of the page at from (none if from is "").
func (b *browserish) post(path string, form url.Values, headers ...string) (int, string, string) {
	b.t.Helper()
	req, _ := http.NewRequest("POST", b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(body)
}

func form(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

func mustContain(t *testing.T, what, body string, subs ...string) {
	t.Helper()
	for _, s := range subs {
		if !strings.Contains(body, s) {
			t.Fatalf("%s: no %q in\n%s", what, s, body)
		}
	}
}

func (e *env) topicConfig(t *testing.T, topic, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rcs, err := e.adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc.Configs {
		if c.Key == key && c.Value != nil {
			return *c.Value
		}
	}
	return ""
}

func (e *env) partitions(t *testing.T, topic string) int {
	t.Helper()
	// Uncached (see ctxOf): the test checks what the broker says now.
	ctx, cancel := context.WithTimeout(kadm.WithAuthorizedOps(context.Background()), 10*time.Second)
	defer cancel()
	md, err := e.adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		return 0
	}
	return len(td.Partitions)
}

// TestConsole drives every handler against a real broker: pages, changes,
// and the refusals of read-only mode, CSRF protection, foreign hosts and
// oversized bodies. The browser subtest does the same through Chromium.
func TestConsole(t *testing.T) {
	t.Parallel()
	e := startEnv(t)
	b := newBrowserish(t, e.rw.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	t.Run("overview", func(t *testing.T) {
		code, body := b.get("/")
		if code != 200 {
			t.Fatalf("GET /: %d\n%s", code, body)
		}
		mustContain(t, "overview", body, e.broker.Addr(), `<td>controller</td>`, `id="n-offline">0<`, e.broker.DataDir())
	})

	t.Run("headers", func(t *testing.T) {
		resp, err := http.Get(e.rw.URL + "/topics")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
			t.Errorf("Content-Security-Policy %q", csp)
		}
		var ck *http.Cookie
		for _, c := range resp.Cookies() {
			if c.Name == csrfCookie {
				ck = c
			}
		}
		if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
			t.Errorf("CSRF cookie %+v: want HttpOnly, SameSite=Strict", ck)
		}
	})

	t.Run("topics", func(t *testing.T) {
		tok := b.token("/topics")
		code, loc, body := b.post("/topics", form("csrf", tok, "name", "orders", "partitions", "3", "configs", "retention.ms=3600000\n# a comment\n"))
		if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/topics/orders?done=created+topic+orders&ds=") {
			t.Fatalf("create: %d %q\n%s", code, loc, body)
		}
		if n := e.partitions(t, "orders"); n != 3 {
			t.Fatalf("orders has %d partitions, want 3", n)
		}
		_, list := b.get("/topics")
		mustContain(t, "topic list", list, `<a href="/topics/orders">orders</a>`, `<td class="num">3</td><td class="num">1</td>`, `<td>1h</td>`)
		_, detail := b.get(loc)
		mustContain(t, "topic page", detail, "created topic orders", `<code>3600000</code>`, "DYNAMIC_TOPIC_CONFIG")
		// A link made elsewhere cannot put a notice on the page: the note
		// needs the console's signature, for that very text.
		for _, forged := range []string{"?done=deleted+topic+orders", "?done=deleted+topic+orders&" + loc[strings.Index(loc, "ds="):]} {
			if _, page := b.get("/topics/orders" + forged); strings.Contains(page, "deleted topic orders") {
				t.Errorf("%s: the forged notice is shown", forged)
			}
		}

		code, _, body = b.post("/topics", form("csrf", tok, "name", "orders", "partitions", "1"))
		if code != http.StatusBadGateway || !strings.Contains(body, "TOPIC_ALREADY_EXISTS") {
			t.Errorf("create again: %d, want 502 naming TOPIC_ALREADY_EXISTS\n%s", code, body)
		}
		code, _, body = b.post("/topics", form("csrf", tok, "name", "no/slash"))
		if code != http.StatusBadRequest || !strings.Contains(body, "topic name") {
			t.Errorf("bad name: %d\n%s", code, body)
		}

		code, _, body = b.post("/topics/orders/config", form("csrf", tok, "key", "retention.ms", "value", "7200000", "op", "set"))
		if code != http.StatusSeeOther || e.topicConfig(t, "orders", "retention.ms") != "7200000" {
			t.Fatalf("set retention.ms: %d, now %q\n%s", code, e.topicConfig(t, "orders", "retention.ms"), body)
		}
		code, _, body = b.post("/topics/orders/config", form("csrf", tok, "key", "retention.ms", "op", "delete"))
		if got := e.topicConfig(t, "orders", "retention.ms"); code != http.StatusSeeOther || got == "7200000" {
			t.Fatalf("remove override: %d, retention.ms still %q\n%s", code, got, body)
		}
		code, _, body = b.post("/topics/orders/config", form("csrf", tok, "key", "no.such.config", "value", "1", "op", "set"))
		if code == http.StatusSeeOther {
			t.Errorf("an unknown config was accepted: %d\n%s", code, body)
		}

		code, _, body = b.post("/topics/orders/partitions", form("csrf", tok, "count", "4"))
		if code != http.StatusSeeOther || e.partitions(t, "orders") != 4 {
			t.Fatalf("add partitions: %d, now %d\n%s", code, e.partitions(t, "orders"), body)
		}

		code, _, body = b.post("/topics/orders/delete", form("csrf", tok, "confirm", "order"))
		if code != http.StatusBadRequest || e.partitions(t, "orders") != 4 {
			t.Fatalf("delete with the wrong name: %d, want 400 and the topic kept\n%s", code, body)
		}
		code, loc, body = b.post("/topics/orders/delete", form("csrf", tok, "confirm", "orders"))
		if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/topics?done=deleted+topic+orders&ds=") {
			t.Fatalf("delete: %d %q\n%s", code, loc, body)
		}
		for deadline := time.Now().Add(30 * time.Second); e.partitions(t, "orders") != 0; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("orders still exists 30 s after its delete")
			}
		}
		if code, body := b.get("/topics/orders"); code != http.StatusNotFound {
			t.Errorf("page of a deleted topic: %d\n%s", code, body)
		}
	})

	// clicks: 4 partitions, 50 records each, values carrying their number;
	// one needle record with a header only.
	testbroker.CreateTopic(t, e.broker.Addr(), "clicks", 4)
	var recs []*kgo.Record
	for p := int32(0); p < 4; p++ {
		for i := 0; i < 50; i++ {
			recs = append(recs, &kgo.Record{Topic: "clicks", Partition: p, Key: []byte(fmt.Sprintf("user-%d", i%7)),
				Value: []byte(fmt.Sprintf(`{"seq":%d,"partition":%d,"page":"/p/%d"}`, i, p, i))})
		}
	}
	recs[77].Headers = []kgo.RecordHeader{{Key: "trace", Value: []byte("needle-in-a-header")}}
	pc, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	if err := pc.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	pc.Close()
	between := time.Now()

	t.Run("messages", func(t *testing.T) {
		code, body := b.get("/topics/clicks/messages?limit=10")
		if code != 200 || strings.Count(body, `<tr class="message">`) != 10 {
			t.Fatalf("newest 10: %d, %d rows\n%s", code, strings.Count(body, `<tr class="message">`), body)
		}
		mustContain(t, "pretty JSON", body, "<pre class=\"json\">{\n  &#34;seq&#34;: 49,")

		_, body = b.get("/topics/clicks/messages?partition=2&mode=offset&offset=45&limit=100")
		if n := strings.Count(body, `<tr class="message">`); n != 5 {
			t.Fatalf("partition 2 from offset 45: %d rows, want 5\n%s", n, body)
		}
		mustContain(t, "offset browse", body, `<td class="num">2</td><td class="num">45</td>`, "stopped at the end of every partition")

		_, body = b.get("/topics/clicks/messages?mode=oldest&limit=7")
		if n := strings.Count(body, `<tr class="message">`); n != 7 || !strings.Contains(body, "stopped at the limit of 7 messages") {
			t.Fatalf("oldest 7: %d rows\n%s", n, body)
		}
		// A forward browse streams: rows first, the summary after the
		// table, and the page whole to its end.
		if strings.Index(body, `id="summary"`) < strings.Index(body, "</table>") || !strings.HasSuffix(strings.TrimSpace(body), "</html>") ||
			strings.Contains(body, "marker") {
			t.Fatalf("a streamed page out of shape:\n%s", body)
		}

		_, body = b.get("/topics/clicks/messages?mode=time&time=" + url.QueryEscape(between.Add(time.Hour).UTC().Format(time.RFC3339)))
		if n := strings.Count(body, `<tr class="message">`); n != 0 {
			t.Fatalf("from an hour ahead: %d rows, want 0\n%s", n, body)
		}
		_, body = b.get("/topics/clicks/messages?mode=time&limit=500&time=" + url.QueryEscape(between.Add(-time.Hour).UTC().Format(time.RFC3339)))
		if n := strings.Count(body, `<tr class="message">`); n != 200 {
			t.Fatalf("from an hour ago: %d rows, want all 200\n%s", n, body)
		}

		_, body = b.get("/topics/clicks/messages?q=NEEDLE-in")
		if n := strings.Count(body, `<tr class="message">`); n != 1 {
			t.Fatalf("search in headers: %d rows, want 1\n%s", n, body)
		}
		mustContain(t, "header match", body, "<code>trace</code>: <code>needle-in-a-header</code>")
		_, body = b.get("/topics/clicks/messages?mode=oldest&q=" + url.QueryEscape(`"/p/17"`))
		if n := strings.Count(body, `<tr class="message">`); n != 4 {
			t.Fatalf("search in values: %d rows, want one per partition\n%s", n, body)
		}
		_, body = b.get("/topics/clicks/messages?q=nowhere-at-all")
		if n := strings.Count(body, `<tr class="message">`); n != 0 || !strings.Contains(body, "read 200 records") {
			t.Fatalf("search for nothing: %d rows\n%s", n, body)
		}
		if code, body := b.get("/topics/clicks/messages?limit=100000"); code != 200 || !strings.Contains(body, `value="500"`) {
			t.Errorf("limit over the maximum: %d, not capped at 500", code)
		}
		if code, _ := b.get("/topics/clicks/messages?mode=sideways"); code != http.StatusBadRequest {
			t.Errorf("unknown mode: %d, want 400", code)
		}

		tok := b.token("/topics/clicks/messages")
		code, loc, body := b.post("/topics/clicks/produce", form("csrf", tok, "partition", "3", "key", "k-42", "value", `{"hello":"console"}`, "headers", "source: test\nlang=go"))
		if code != http.StatusSeeOther || !strings.Contains(loc, "partition=3&mode=offset&offset=50") {
			t.Fatalf("produce: %d %q\n%s", code, loc, body)
		}
		// Read it back with the test's own client, not the console.
		cc, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"clicks": {3: kgo.NewOffset().At(50)}}))
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		fs := cc.PollRecords(ctx, 1)
		if fs.NumRecords() != 1 {
			t.Fatalf("no record at clicks[3]@50: %v", fs.Errors())
		}
		r := fs.Records()[0]
		if string(r.Key) != "k-42" || string(r.Value) != `{"hello":"console"}` || len(r.Headers) != 2 || r.Headers[1].Key != "lang" || string(r.Headers[1].Value) != "go" {
			t.Fatalf("produced record: key %q value %q headers %v", r.Key, r.Value, r.Headers)
		}
		_, page := b.get(loc)
		mustContain(t, "after produce", page, "produced to partition 3 at offset 50", "&#34;hello&#34;: &#34;console&#34;")
		code, _, _ = b.post("/topics/clicks/produce", form("csrf", tok, "partition", "9", "value", "x"))
		if code != http.StatusBadRequest {
			t.Errorf("produce to a partition that does not exist: %d, want 400", code)
		}
	})

	t.Run("groups", func(t *testing.T) {
		// A group that consumed part of clicks, then left: Empty, with lag.
		commit := kadm.Offsets{}
		for p := int32(0); p < 4; p++ {
			commit.Add(kadm.Offset{Topic: "clicks", Partition: p, At: 40, LeaderEpoch: -1})
		}
		if rs, err := e.adm.CommitOffsets(ctx, "reporting", commit); err != nil || rs.Error() != nil {
			t.Fatalf("commit: %v %v", err, rs.Error())
		}
		_, body := b.get("/groups")
		mustContain(t, "group list", body, `<a href="/groups/reporting">reporting</a>`, "<td>Empty</td>", `<td class="num">41</td>`) // 10*4 + the produced one
		_, body = b.get("/groups/reporting")
		mustContain(t, "group page", body, `id="group-lag">41<`, `<td class="num">3</td><td class="num">40</td><td class="num">0</td><td class="num">51</td><td class="num">11</td>`)

		_, body = b.get("/groups/reporting?topic=clicks&to=offset&value=45")
		mustContain(t, "preview", body, `<td>clicks</td><td class="num">1</td><td class="num">40</td><td class="num">45</td><td class="num">5</td>`, `id="reset-apply"`)
		fetched, err := e.adm.FetchOffsets(ctx, "reporting")
		if err != nil {
			t.Fatal(err)
		}
		if o, _ := fetched.Lookup("clicks", 1); o.At != 40 {
			t.Fatalf("a preview changed the committed offset to %d", o.At)
		}
		tok := csrfRE.FindStringSubmatch(body)[1]
		code, _, body := b.post("/groups/reporting/reset", form("csrf", tok, "topic", "clicks", "to", "earliest"))
		if code != http.StatusSeeOther {
			t.Fatalf("reset: %d\n%s", code, body)
		}
		if fetched, err = e.adm.FetchOffsets(ctx, "reporting"); err != nil {
			t.Fatal(err)
		}
		for p := int32(0); p < 4; p++ {
			if o, _ := fetched.Lookup("clicks", p); o.At != 0 {
				t.Errorf("clicks[%d] committed at %d after a reset to earliest", p, o.At)
			}
		}

		// A live member: the reset is refused, as Kafka's tool refuses it.
		live, err := kgo.NewClient(kgo.SeedBrokers(e.broker.Addr()), kgo.ConsumerGroup("live"), kgo.ConsumeTopics("clicks"))
		if err != nil {
			t.Fatal(err)
		}
		defer live.Close()
		for deadline := time.Now().Add(60 * time.Second); ; {
			pctx, c := context.WithTimeout(ctx, 200*time.Millisecond)
			live.PollRecords(pctx, 10)
			c()
			gs, err := e.adm.DescribeGroups(ctx, "live")
			if err == nil && gs["live"].State == "Stable" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("group live not Stable after 60 s")
			}
		}
		_, body = b.get("/groups/live?to=latest")
		mustContain(t, "preview of a live group", body, "The group has active members", `<td class="num">`)
		code, _, body = b.post("/groups/live/reset", form("csrf", tok, "to", "latest"))
		if code != http.StatusBadRequest || !strings.Contains(body, "stop its consumers first") {
			t.Errorf("reset of a live group: %d\n%s", code, body)
		}
	})

	t.Run("csrf", func(t *testing.T) {
		tok := b.token("/topics")
		other := newBrowserish(t, e.rw.URL)
		otherTok := other.token("/topics")
		for _, c := range []struct {
			name    string
			client  *browserish
			form    url.Values
			headers []string
			why     string
		}{
			{"no cookie, no token", newBrowserish(t, e.rw.URL), form("name", "csrf-a"), nil, "no CSRF cookie"},
			{"cookie, no token", b, form("name", "csrf-b"), nil, "no CSRF token"},
			{"another browser's token", b, form("name", "csrf-c", "csrf", otherTok), nil, "does not match"},
			{"forged token", b, form("name", "csrf-d", "csrf", tok[:len(tok)-2]+"AA"), nil, "does not match"},
			{"cross-origin", b, form("name", "csrf-e", "csrf", tok), []string{"Origin", "http://evil.example"}, "another origin"},
		} {
			code, _, body := c.client.post("/topics", c.form, c.headers...)
			if code != http.StatusForbidden || !strings.Contains(body, c.why) {
				t.Errorf("%s: %d, want 403 saying %q\n%s", c.name, code, c.why, body)
			}
			if e.partitions(t, c.form.Get("name")) != 0 {
				t.Errorf("%s: the topic was created", c.name)
			}
		}
		// Same origin, with the token: passes.
		if code, _, body := b.post("/topics", form("name", "csrf-ok", "csrf", tok), "Origin", e.rw.URL); code != http.StatusSeeOther {
			t.Errorf("same origin with the token: %d\n%s", code, body)
		}
	})

	t.Run("read-only", func(t *testing.T) {
		ro := newBrowserish(t, e.ro.URL)
		_, body := ro.get("/topics")
		if strings.Contains(body, `method="post"`) || !strings.Contains(body, "read-only") {
			t.Errorf("read-only topic list offers forms, or does not say read-only:\n%s", body)
		}
		_, body = ro.get("/topics/clicks/messages")
		if strings.Contains(body, `method="post"`) {
			t.Errorf("read-only messages page offers a form")
		}
		// A valid token, from a read-write page of the same console key
		// would not exist; the refusal must not depend on it anyway.
		// The read-only pages carry no form, hence no token: the refusal
		// comes before the CSRF check, whatever the form holds.
		tok := "any"
		for _, p := range []struct {
			path string
			form url.Values
		}{
			{"/topics", form("name", "ro-made")},
			{"/topics/clicks/config", form("key", "retention.ms", "value", "1")},
			{"/topics/clicks/partitions", form("count", "8")},
			{"/topics/clicks/delete", form("confirm", "clicks")},
			{"/topics/clicks/produce", form("value", "ro")},
			{"/groups/reporting/reset", form("to", "latest")},
			{"/acls", form("principal", "User:ro", "permission", "ALLOW", "operation", "ALL", "type", "TOPIC", "name", "*", "pattern", "LITERAL")},
			{"/acls/delete", form("principal", "User:ro", "permission", "ALLOW", "operation", "ALL", "type", "TOPIC", "name", "*", "pattern", "LITERAL")},
			{"/users", form("user", "ro-made", "password", "pw")},
			{"/users/ro-made/delete", form("confirm", "ro-made")},
			{"/jobs/clicks-lake/trigger", form()},
		} {
			p.form.Set("csrf", tok)
			code, _, body := ro.post(p.path, p.form)
			if code != http.StatusForbidden || !strings.Contains(body, "read-only") {
				t.Errorf("POST %s on a read-only console: %d\n%s", p.path, code, body)
			}
		}
		if e.partitions(t, "ro-made") != 0 || e.partitions(t, "clicks") != 4 || e.topicConfig(t, "clicks", "retention.ms") == "1" {
			t.Error("a read-only console changed the cluster")
		}
		if us, err := e.adm.DescribeUserSCRAMs(ctx); err == nil && len(us) > 0 {
			t.Errorf("a read-only console made SCRAM users: %v", us)
		}
		for _, p := range []string{"/users", "/pipeline", "/groups"} {
			if _, body := ro.get(p); strings.Contains(body, `method="post"`) {
				t.Errorf("read-only %s offers a form", p)
			}
		}
		hw := testbroker.HighWatermarks(t, e.broker.Addr(), "clicks")
		if hw[3] != 51 {
			t.Errorf("clicks[3] high watermark %d after a read-only produce, want 51", hw[3])
		}
		fetched, _ := e.adm.FetchOffsets(ctx, "reporting")
		if o, _ := fetched.Lookup("clicks", 0); o.At != 0 {
			t.Errorf("a read-only reset moved reporting to %d", o.At)
		}
	})

	t.Run("limits", func(t *testing.T) {
		req, _ := http.NewRequest("GET", e.rw.URL+"/", nil)
		req.Host = "rebind.evil.example:8088"
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("a foreign Host on a loopback console: %d, want 403", resp.StatusCode)
		}
		tok := b.token("/topics/clicks/messages")
		code, _, _ := b.post("/topics/clicks/produce", form("csrf", tok, "value", strings.Repeat("x", MaxBodyBytes+1)))
		if code != http.StatusRequestEntityTooLarge {
			t.Errorf("a body over %d bytes: %d, want 413", MaxBodyBytes, code)
		}
		if code, _ := b.get("/topics/no-such-topic/messages"); code == 200 {
			t.Errorf("messages of a topic that does not exist: 200")
		}
	})

	t.Run("schemas", func(t *testing.T) {
		src := srclient.New(e.registry)
		var id int
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			if id, err = src.Register(ctx, "payments-value", compat.Schema{Type: compat.Avro, Text: paymentSchema}); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("register: %v", err)
			}
		}
		schema := avro.MustParse(paymentSchema)
		body, err := avro.Marshal(schema, map[string]any{"id": "pay-7", "cents": int64(1250)})
		if err != nil {
			t.Fatal(err)
		}
		framed := append([]byte{0, 0, 0, 0, byte(id)}, body...)
		unknown := append([]byte{0, 0, 0, 0x27, 0x0f}, body...) // id 9999
		testbroker.CreateTopic(t, e.broker.Addr(), "payments", 1)
		if err := e.cl.ProduceSync(ctx, &kgo.Record{Topic: "payments", Value: framed}, &kgo.Record{Topic: "payments", Value: unknown}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		_, list := b.get("/schemas")
		mustContain(t, "subjects", list, `<a href="/schemas/payments-value">payments-value</a>`, "<td>AVRO</td>", `href="/schemas"`)
		_, sub := b.get("/schemas/payments-value")
		mustContain(t, "subject", sub, "Version 1", "&#34;name&#34;: &#34;Payment&#34;")
		_, msgs := b.get("/topics/payments/messages?mode=oldest")
		mustContain(t, "decoded", msgs, fmt.Sprintf("schema id %d, decoded", id), "&#34;cents&#34;: 1250", "schema id 9999</small> <small class=\"warn\">not decoded")
	})

	// What a page shows is bounded whatever a record holds: a header of
	// 300 KB and a binary value of 300 KB make a page of tens of KB.
	t.Run("big-record", func(t *testing.T) {
		testbroker.CreateTopic(t, e.broker.Addr(), "big", 1)
		bin := make([]byte, 300<<10)
		for i := range bin {
			bin[i] = byte(i*7) | 0x80
		}
		rec := &kgo.Record{Topic: "big", Value: bin, Headers: []kgo.RecordHeader{{Key: "h", Value: []byte(strings.Repeat("h", 300<<10))}}}
		if err := e.cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
			t.Fatal(err)
		}
		code, body := b.get("/topics/big/messages")
		mustContain(t, "big record", body, "1 message;", "… (truncated)", "<small>truncated</small>")
		if code != 200 || len(body) > 160<<10 {
			t.Errorf("the page of one 600 KB record: %d, %d bytes", code, len(body))
		}
	})

	// A console off loopback answers only to its names and IP addresses,
	// and never shows the registry's credentials.
	t.Run("exposed", func(t *testing.T) {
		creds := strings.Replace(e.registry, "http://", "http://alice:s3cret-pw@", 1)
		s, err := New(Config{Seeds: []string{e.broker.Addr()}, AllowedHosts: []string{"console.example"}, RegistryURL: creds})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		get := func(host, path string) (int, string) {
			req := httptest.NewRequest("GET", path, nil)
			req.Host = host
			w := httptest.NewRecorder()
			s.ServeHTTP(w, req)
			return w.Code, w.Body.String()
		}
		for host, want := range map[string]int{"console.example:8088": 204, "CONSOLE.example": 204, "10.1.2.3:8088": 204, "[::1]:8088": 204,
			"rebind.evil.example:8088": 403, "console.example.evil.example": 403} {
			if code, _ := get(host, "/favicon.ico"); code != want {
				t.Errorf("Host %s: %d, want %d", host, code, want)
			}
		}
		for _, path := range []string{"/", "/schemas"} {
			code, body := get("console.example", path)
			if code != 200 || strings.Contains(body, "s3cret") || strings.Contains(body, "alice") || !strings.Contains(body, e.registry) {
				t.Errorf("GET %s: %d, credentials shown or no registry address:\n%s", path, code, body)
			}
		}
	})

	t.Run("jobs", func(t *testing.T) {
		code, body := b.get("/jobs")
		mustContain(t, "jobs list", body, `<a href="/jobs/clicks-lake">clicks-lake</a>`, `<a href="/topics/clicks">clicks</a>`, "<td>idle")
		if code != 200 {
			t.Fatalf("GET /jobs: %d", code)
		}
		tok := b.token("/jobs/clicks-lake")
		code, loc, body := b.post("/jobs/clicks-lake/trigger", form("csrf", tok))
		if code != http.StatusSeeOther || !strings.Contains(loc, "triggered") {
			t.Fatalf("trigger: %d %q\n%s", code, loc, body)
		}
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			_, body = b.get("/jobs/clicks-lake")
			if strings.Contains(body, "<td>manual</td><td>succeeded</td><td class=\"num\">") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no succeeded manual run 30 s after the trigger:\n%s", body)
			}
		}
		if code, _, _ = b.post("/jobs/clicks-lake/pause", form("csrf", tok)); code != http.StatusSeeOther {
			t.Fatalf("pause: %d", code)
		}
		_, body = b.get("/jobs/clicks-lake")
		mustContain(t, "paused job", body, `id="job-resume"`, "paused (api)")
		if code, _, _ = b.post("/jobs/clicks-lake/resume", form("csrf", tok)); code != http.StatusSeeOther {
			t.Fatalf("resume: %d", code)
		}
		if code, _, _ := b.post("/jobs/clicks-lake/explode", form("csrf", tok)); code != http.StatusBadRequest {
			t.Errorf("an unknown job action: %d, want 400", code)
		}
		ro := newBrowserish(t, e.ro.URL)
		if code, _, _ := ro.post("/jobs/clicks-lake/trigger", form("csrf", "any")); code != http.StatusForbidden {
			t.Errorf("trigger on a read-only console: %d, want 403", code)
		}
	})

	t.Run("pipeline", func(t *testing.T) { testPipeline(t, e, b) })
	t.Run("charts", func(t *testing.T) { testCharts(t, e, b) })
	t.Run("browser", func(t *testing.T) { testBrowser(t, e) })
}
