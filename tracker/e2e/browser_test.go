package e2e

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tributary-io/tributary/internal/testbroker"
	trackerjs "github.com/tributary-io/tributary/tracker/js"
)

// snippet is the snippet of docs/tracker.md, as a site pastes it, with the
// host and write key filled in: the test runs what the docs tell users.
func snippet(t *testing.T, host, key string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(testbroker.RepoRoot(), "docs", "tracker.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "\n```html\n<script>\n!function")
	code, _, ok2 := strings.Cut(rest, "\n```")
	if !ok || !ok2 || !strings.Contains(code, docHost) || !strings.Contains(code, docKey) {
		t.Fatalf("docs/tracker.md has no html snippet with %s and %s", docHost, docKey)
	}
	code = "<script>\n!function" + code
	return strings.NewReplacer(docHost, host, docKey, key).Replace(code)
}

// The placeholders of the documented snippet.
const (
	docHost = "https://tracker.example.com"
	docKey  = "YOUR_WRITE_KEY"
)

// The pages of the test site. The home page counts sendBeacon calls in
// sessionStorage, which the next page (same tab, same origin) reads.
const homePage = `<!doctype html><html><head><meta charset="utf-8"><title>Shop home</title>
<script>
var realBeacon = navigator.sendBeacon.bind(navigator);
navigator.sendBeacon = function (u, d) {
  sessionStorage.setItem('beacons', (+sessionStorage.getItem('beacons') || 0) + 1);
  return realBeacon(u, d);
};
addEventListener('pagehide', function () { tributary.track('Left Page', {from: location.pathname}); });
</script>
%s
</head><body>
<button id="buy" onclick="tributary.track('Clicked Buy', {sku: 'SKU-1', price: 19.99, tags: ['a', 'b']})">Buy</button>
<button id="login" onclick="tributary.identify('user-42', {plan: 'pro'})">Log in</button>
<a id="next" href="/next?from=home">Next</a>
</body></html>`

const nextPage = `<!doctype html><html><head><meta charset="utf-8"><title>Next</title>%s</head>
<body><h1 id="next-page">Next</h1></body></html>`

// noStoragePage is a page where localStorage throws, as in some privacy
// modes: the anonymous id lives in a first-party cookie instead.
const noStoragePage = `<!doctype html><html><head><meta charset="utf-8"><title>No storage</title>
<script>
Object.defineProperty(window, 'localStorage', {get: function () { throw new DOMException('denied', 'SecurityError'); }});
</script>
%s</head><body><h1 id="no-storage">No storage</h1></body></html>`

// chromium finds Debian's chromium ($TRIBUTARY_CHROMIUM to override), or
// skips the test (fails it under CI).
func chromium(t *testing.T) string {
	p, err := lookPath("TRIBUTARY_CHROMIUM", "chromium", "chromium-browser")
	testbroker.Require(t, err == nil, "chromium", "apt-get install chromium (Debian's package), or set TRIBUTARY_CHROMIUM")
	return p
}

// browser starts headless Chromium with a fresh profile and returns a
// chromedp context for one tab, and the tab's console. Uncaught exceptions
// and tracker.js's warnings fail the test, unless they hold one of expect.
func browser(t *testing.T, expect ...string) (context.Context, *consoleLog) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts chromium, the broker and the tracker")
	}
	exe := chromium(t)
	profile, err := os.MkdirTemp("", "tributary-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.UserDataDir(profile),
		chromedp.NoSandbox, // root in CI; the page is the test's own
		chromedp.DisableGPU,
		// This machine has no network but loopback: nothing may try.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-proxy-server", true),
	)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		cancel()
		acancel()
		os.RemoveAll(profile)
		t.Fatalf("starting %s: %v", exe, err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	log := &consoleLog{}
	console := chromedp.Console(ctx)
	go func() {
		defer wg.Done()
		for m, err := range console {
			if err != nil {
				return
			}
			log.add(m.String())
			expected := false
			for _, e := range expect {
				expected = expected || strings.Contains(m.Text, e)
			}
			if (m.IsException() || strings.Contains(m.Text, "tributary")) && !expected {
				t.Errorf("browser console: %s", m)
			} else {
				t.Logf("browser console: %s", m)
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		acancel()
		wg.Wait()
		os.RemoveAll(profile)
	})
	return ctx, log
}

// consoleLog is what a tab wrote to its console.
type consoleLog struct {
	mu    sync.Mutex
	lines []string
}

func (c *consoleLog) add(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, s)
}

// waitFor waits up to timeout for a line holding substr.
func (c *consoleLog) waitFor(substr string, timeout time.Duration) bool {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		c.mu.Lock()
		for _, l := range c.lines {
			if strings.Contains(l, substr) {
				c.mu.Unlock()
				return true
			}
		}
		c.mu.Unlock()
	}
	return false
}

// site serves the test pages, each with the snippet pointing at tracker
// with key.
func site(t *testing.T, tracker, key string) string {
	t.Helper()
	code := snippet(t, tracker, key)
	mux := http.NewServeMux()
	page := func(html string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprintf(w, html, code)
		}
	}
	mux.HandleFunc("/{$}", page(homePage))
	mux.HandleFunc("/next", page(nextPage))
	mux.HandleFunc("/no-storage", page(noStoragePage))
	mux.HandleFunc("/favicon.ico", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	return serve(t, mux)
}

func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

func run[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

// Issue 9, test 1: a page with the snippet, in a real browser, sends a page
// view, a click's track, an identify and an event on pagehide; each is in
// the topic, enriched, with the page's anonymous id, and the click's event
// arrives within a second.
func TestBrowser(t *testing.T) {
	ctx, _ := browser(t)
	s := startStack(t)
	base := site(t, s.URL, writeKey)
	home := base + "/"

	start := time.Now()
	run(t, ctx, "open the home page", chromedp.Navigate(home))
	run(t, ctx, "tracker.js loaded", chromedp.Poll[bool](`window.tributary.initialized === true`))
	aid := run(t, ctx, "localStorage", chromedp.Evaluate[string](`localStorage.getItem('trb_aid')`))
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(aid) {
		t.Fatalf("anonymous id in localStorage: %q, want a UUID v4", aid)
	}
	userAgent := run(t, ctx, "user agent", chromedp.Evaluate[string](`navigator.userAgent`))
	uaVersion := regexp.MustCompile(`Chrome/([0-9.]+)`).FindStringSubmatch(userAgent)
	if uaVersion == nil {
		t.Fatalf("navigator.userAgent %q names no Chrome version", userAgent)
	}

	ofType := func(typ, event string) func(record) bool {
		return func(r record) bool { return r.Value["type"] == typ && (event == "" || r.Value["event"] == event) }
	}
	view := s.records.wait(t, 30*time.Second, "the home page view", func(r record) bool {
		return ofType("page", "")(r) && dig(r.Value, "context", "page", "path") == "/"
	})
	t.Logf("page view in the topic %v after the navigation started", view.Arrived.Sub(start).Round(time.Millisecond))

	clicked := time.Now()
	run(t, ctx, "click Buy", chromedp.Click(chromedp.CSS("#buy")))
	buy := s.records.wait(t, 30*time.Second, "the click's track", ofType("track", "Clicked Buy"))
	// The latency is a measurement (scripts/bench-tracker.sh measures it
	// on a quiet machine): Chromium, the collector and the broker share a
	// loaded CI machine here, where a correct pipeline can take seconds.
	latency := buy.Arrived.Sub(clicked)
	t.Logf("click to topic: %v (target: under a second)", latency.Round(time.Millisecond))
	if p := buy.Value["properties"]; dig(p, "sku") != "SKU-1" || dig(p, "price") != 19.99 || fmt.Sprint(dig(p, "tags")) != "[a b]" {
		t.Errorf("track properties %v", p)
	}

	run(t, ctx, "click Log in", chromedp.Click(chromedp.CSS("#login")))
	id := s.records.wait(t, 30*time.Second, "the identify", ofType("identify", ""))
	if id.Value["userId"] != "user-42" || dig(id.Value, "traits", "plan") != "pro" || id.Key != "user-42" {
		t.Errorf("identify: key %q %v", id.Key, id.Value)
	}

	// Leaving the page: its pagehide listener tracks an event, which only
	// sendBeacon can still deliver.
	run(t, ctx, "follow the link", chromedp.Steps(chromedp.Click(chromedp.CSS("#next")), chromedp.WaitVisible(chromedp.CSS("#next-page"))))
	left := s.records.wait(t, 30*time.Second, "the pagehide event", ofType("track", "Left Page"))
	if dig(left.Value, "properties", "from") != "/" || left.Value["userId"] != "user-42" {
		t.Errorf("pagehide event: %v", left.Value)
	}
	beacons := run(t, ctx, "beacon count", chromedp.Evaluate[string](`sessionStorage.getItem('beacons') || '0'`))
	if beacons == "0" {
		t.Errorf("no navigator.sendBeacon call when the page went away")
	}
	next := s.records.wait(t, 30*time.Second, "the next page's view", func(r record) bool {
		return ofType("page", "")(r) && dig(r.Value, "context", "page", "path") == "/next"
	})
	if aid2 := run(t, ctx, "localStorage on the next page", chromedp.Evaluate[string](`localStorage.getItem('trb_aid')`)); aid2 != aid {
		t.Errorf("anonymous id changed across pages: %q, then %q", aid, aid2)
	}
	if dig(next.Value, "context", "page", "referrer") != home || dig(next.Value, "context", "page", "search") != "?from=home" || next.Value["userId"] != "user-42" {
		t.Errorf("next page view: %v", next.Value)
	}

	// Without localStorage, the id is in a cookie, and the same on the
	// next page.
	run(t, ctx, "open a page without localStorage", chromedp.Navigate(base+"/no-storage"))
	run(t, ctx, "tracker.js loaded", chromedp.Poll[bool](`window.tributary.initialized === true`))
	cookieID := run(t, ctx, "cookie", chromedp.Evaluate[string](`(document.cookie.match(/(?:^|; )trb_aid=([^;]*)/) || ['', ''])[1]`))
	if cookieID == "" || cookieID == aid {
		t.Fatalf("anonymous id in the trb_aid cookie: %q (localStorage had %q)", cookieID, aid)
	}
	run(t, ctx, "reload it", chromedp.Navigate(base+"/no-storage?again"))
	for _, search := range []string{"", "?again"} {
		r := s.records.wait(t, 30*time.Second, "the page view without localStorage "+search, func(r record) bool {
			return dig(r.Value, "context", "page", "path") == "/no-storage" && dig(r.Value, "context", "page", "search") == search
		})
		if r.Value["anonymousId"] != cookieID || r.Value["userId"] != nil {
			t.Errorf("page view without localStorage: anonymousId %v userId %v, the cookie holds %s", r.Value["anonymousId"], r.Value["userId"], cookieID)
		}
	}

	// What every event of the page shares: the ids, the enrichment, the
	// library's context; and each is in the topic once.
	all := []record{view, buy, id, left, next}
	for _, r := range all {
		v, what := r.Value, fmt.Sprintf("%s %v", r.Value["type"], r.Value["event"])
		if v["anonymousId"] != aid {
			t.Errorf("%s: anonymousId %v, localStorage says %s", what, v["anonymousId"], aid)
		}
		if want := firstNonEmpty(v["userId"], v["anonymousId"]); r.Key != want {
			t.Errorf("%s: key %q, want %q", what, r.Key, want)
		}
		if ip := dig(v, "context", "ip"); ip != "127.0.0.0" {
			t.Errorf("%s: context.ip %v, want 127.0.0.1 anonymised to 127.0.0.0", what, ip)
		}
		if dig(v, "context", "userAgent") != userAgent {
			t.Errorf("%s: context.userAgent %v, the browser says %q", what, dig(v, "context", "userAgent"), userAgent)
		}
		if b := dig(v, "context", "browser", "name"); b != "Chrome" && b != "HeadlessChrome" && b != "Headless Chrome" {
			t.Errorf("%s: context.browser.name %v", what, b)
		}
		if dig(v, "context", "browser", "version") != uaVersion[1] || dig(v, "context", "os", "name") != "Linux" {
			t.Errorf("%s: browser %v, os %v; user agent %q", what, dig(v, "context", "browser"), dig(v, "context", "os"), userAgent)
		}
		if dig(v, "context", "library", "name") != "tributary.js" || dig(v, "context", "library", "version") != trackerjs.Version {
			t.Errorf("%s: context.library %v", what, dig(v, "context", "library"))
		}
		if loc, _ := dig(v, "context", "locale").(string); loc == "" {
			t.Errorf("%s: no context.locale", what)
		}
		if v["channel"] != "browser" || v["sentAt"] == nil || v["receivedAt"] == nil || v["originalTimestamp"] == nil {
			t.Errorf("%s: channel, sentAt, receivedAt or originalTimestamp missing: %v", what, v)
		}
		pageURL, _ := dig(v, "context", "page", "url").(string)
		if u, err := url.Parse(pageURL); err != nil || u.Path != dig(v, "context", "page", "path") {
			t.Errorf("%s: context.page %v", what, dig(v, "context", "page"))
		}
		if dig(v, "context", "page", "path") == "/" && dig(v, "context", "page", "title") != "Shop home" {
			t.Errorf("%s: context.page.title %v", what, dig(v, "context", "page", "title"))
		}
		id := v["messageId"]
		if n := s.records.count(func(o record) bool { return o.Value["messageId"] == id }); n != 1 {
			t.Errorf("%s: messageId %v is %d times in the topic", what, id, n)
		}
	}
}

func firstNonEmpty(vs ...any) string {
	for _, v := range vs {
		if s, _ := v.(string); s != "" {
			return s
		}
	}
	return ""
}

// failing is a reverse proxy to the tracker that answers 503 to the next
// `fail` POSTs, as the collector does when its spool is full.
type failing struct {
	fail, posts atomic.Int32
	proxy       *httputil.ReverseProxy
}

func (f *failing) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		f.posts.Add(1)
		if f.fail.Add(-1) >= 0 {
			w.Header().Set("Access-Control-Allow-Origin", r.Header.Get("Origin"))
			w.Header().Set("Retry-After", "1")
			http.Error(w, `{"success":false,"error":"spool full"}`, http.StatusServiceUnavailable)
			return
		}
	}
	f.proxy.ServeHTTP(w, r)
}

// An event whose sends fail is retried, with backoff, until the collector
// takes it, and is in the topic once.
func TestBrowserRetry(t *testing.T) {
	ctx, _ := browser(t)
	s := startStack(t)
	target, _ := url.Parse(s.URL)
	f := &failing{proxy: httputil.NewSingleHostReverseProxy(target)}
	f.fail.Store(2)
	home := site(t, serve(t, f), writeKey) + "/"

	start := time.Now()
	run(t, ctx, "open the home page", chromedp.Navigate(home))
	view := s.records.wait(t, 60*time.Second, "the page view, after two 503s", func(r record) bool { return r.Value["type"] == "page" })
	if n := f.posts.Load(); n != 3 {
		t.Errorf("%d POSTs for one page view, want 2 refused and 1 accepted", n)
	}
	// Two backoffs of at least 0.5 s and 1 s.
	if d := view.Arrived.Sub(start); d < 1500*time.Millisecond {
		t.Errorf("page view in the topic %v after the navigation: the retries did not back off", d)
	}
	if n := s.records.count(func(r record) bool { return r.Value["messageId"] == view.Value["messageId"] }); n != 1 {
		t.Errorf("page view %d times in the topic", n)
	}
}

// A batch the collector refuses for good (401, an unknown write key) is
// dropped, not retried, and the page's console says why.
func TestBrowserBadWriteKey(t *testing.T) {
	ctx, console := browser(t, "tributary: 401")
	s := startStack(t)
	target, _ := url.Parse(s.URL)
	f := &failing{proxy: httputil.NewSingleHostReverseProxy(target)}
	home := site(t, serve(t, f), "wk-unknown") + "/"

	run(t, ctx, "open the home page", chromedp.Navigate(home))
	if !console.waitFor("tributary: 401", 10*time.Second) {
		t.Fatalf("no warning in the console about the 401")
	}
	time.Sleep(2 * time.Second) // a retry would come within 1 s
	if n := f.posts.Load(); n != 1 {
		t.Errorf("%d POSTs with an unknown write key, want 1 (no retry)", n)
	}
	if n := s.records.count(func(record) bool { return true }); n != 0 {
		t.Errorf("%d records in the topic", n)
	}
}
