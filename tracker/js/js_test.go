package js

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// maxGzipped is the budget for tracker.js: 5 KB minified and gzipped.
const maxGzipped = 5 << 10

func get(t *testing.T, h http.Handler, method string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, Path, nil)
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// The size a browser downloads: the served bytes as a browser that
// accepts gzip receives them.
func TestSizeBudget(t *testing.T) {
	w := get(t, Handler(), "GET", map[string]string{"Accept-Encoding": "gzip, deflate, br"})
	if w.Code != 200 || w.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("status %d, Content-Encoding %q", w.Code, w.Header().Get("Content-Encoding"))
	}
	gz := w.Body.Len()
	if gz >= maxGzipped {
		t.Errorf("tracker.js is %d bytes gzipped, over the budget of %d", gz, maxGzipped)
	}
	// Also with gzip at its default level, in case a proxy recompresses.
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(Script())
	zw.Close()
	if buf.Len() >= maxGzipped {
		t.Errorf("tracker.js is %d bytes at gzip's default level, over %d", buf.Len(), maxGzipped)
	}
	if len(Script()) >= len(Source()) {
		t.Errorf("the served script (%d bytes) is not smaller than the source (%d): is tracker.min.js minified?", len(Script()), len(Source()))
	}
	t.Logf("tracker.js: source %d bytes, minified %d, minified+gzip %d (budget %d)", len(Source()), len(Script()), gz, maxGzipped)
}

// tracker.min.js names the hash of the source it was minified from: an
// edit of tracker.js without scripts/tracker-js.sh fails here, without Node.
func TestMinifiedMatchesSource(t *testing.T) {
	first, _, _ := bytes.Cut(Script(), []byte("\n"))
	m := regexp.MustCompile(`^/\*! tributary\.js (\S+) \| source sha256 ([0-9a-f]{64}) \*/$`).FindSubmatch(first)
	if m == nil {
		t.Fatalf("tracker.min.js starts with %q, not the banner of scripts/tracker-js.sh", first)
	}
	sum := sha256.Sum256(Source())
	if got := hex.EncodeToString(sum[:]); string(m[2]) != got {
		t.Errorf("tracker.min.js was made from a source of sha256 %s, tracker.js is %s: run bash scripts/tracker-js.sh", m[2], got)
	}
	if string(m[1]) != Version {
		t.Errorf("tracker.min.js is version %s, Version is %s", m[1], Version)
	}
	if !bytes.Contains(Source(), []byte("VERSION = '"+Version+"'")) {
		t.Errorf("tracker.js does not say VERSION = '%s'", Version)
	}
}

func TestHandler(t *testing.T) {
	h := Handler()
	t.Run("gzip", func(t *testing.T) {
		w := get(t, h, "GET", map[string]string{"Accept-Encoding": "gzip"})
		hdr := w.Header()
		if ct := hdr.Get("Content-Type"); ct != "text/javascript; charset=utf-8" {
			t.Errorf("Content-Type %q", ct)
		}
		if hdr.Get("Cache-Control") != "public, max-age=3600" || hdr.Get("ETag") == "" || !strings.Contains(hdr.Get("Vary"), "Accept-Encoding") {
			t.Errorf("caching headers %v", hdr)
		}
		if hdr.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("no CORS header for SRI: %v", hdr)
		}
		zr, err := gzip.NewReader(w.Body)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(b, Script()) {
			t.Fatalf("gunzipped body differs from the script (%v)", err)
		}
	})
	t.Run("identity", func(t *testing.T) {
		for _, ae := range []string{"", "br", "gzip;q=0", "gzip; q=0.000, br", "*;q=0"} {
			w := get(t, h, "GET", map[string]string{"Accept-Encoding": ae})
			if w.Header().Get("Content-Encoding") != "" || !bytes.Equal(w.Body.Bytes(), Script()) {
				t.Errorf("Accept-Encoding %q: Content-Encoding %q, %d bytes", ae, w.Header().Get("Content-Encoding"), w.Body.Len())
			}
			if w.Header().Get("Content-Length") == "" {
				t.Errorf("Accept-Encoding %q: no Content-Length", ae)
			}
		}
	})
	t.Run("revalidation", func(t *testing.T) {
		for _, ae := range []string{"", "gzip"} {
			etag := get(t, h, "GET", map[string]string{"Accept-Encoding": ae}).Header().Get("ETag")
			w := get(t, h, "GET", map[string]string{"Accept-Encoding": ae, "If-None-Match": etag})
			if w.Code != http.StatusNotModified || w.Body.Len() != 0 {
				t.Errorf("Accept-Encoding %q, If-None-Match %s: %d with %d bytes", ae, etag, w.Code, w.Body.Len())
			}
			if w := get(t, h, "GET", map[string]string{"Accept-Encoding": ae, "If-None-Match": `"stale"`}); w.Code != 200 {
				t.Errorf("stale ETag: %d", w.Code)
			}
		}
		plain := get(t, h, "GET", nil).Header().Get("ETag")
		gz := get(t, h, "GET", map[string]string{"Accept-Encoding": "gzip"}).Header().Get("ETag")
		if plain == gz {
			t.Errorf("the gzip and identity representations share the ETag %s", plain)
		}
	})
	t.Run("methods", func(t *testing.T) {
		if w := get(t, h, "HEAD", nil); w.Code != 200 || w.Body.Len() != 0 || w.Header().Get("Content-Length") != strconv.Itoa(len(Script())) {
			t.Errorf("HEAD: %d, %d bytes, Content-Length %q", w.Code, w.Body.Len(), w.Header().Get("Content-Length"))
		}
		if w := get(t, h, "POST", nil); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("POST: %d %v", w.Code, w.Header())
		}
	})
}

func TestMount(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	})
	h := Mount(next)
	if w := get(t, h, "GET", nil); w.Code != 200 || !bytes.Equal(w.Body.Bytes(), Script()) {
		t.Errorf("%s: %d", Path, w.Code)
	}
	for _, p := range []string{"/v1/batch", "/tracker.js/x", "/"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", p, nil))
		if w.Code != http.StatusTeapot {
			t.Errorf("%s went to the script handler: %d", p, w.Code)
		}
	}
}

func TestAcceptsGzip(t *testing.T) {
	for h, want := range map[string]bool{
		"":                   false,
		"gzip":               true,
		"GZIP":               true,
		"deflate, gzip;q=1":  true,
		"gzip;q=0.5":         true,
		"gzip;q=0":           false,
		"gzip; q=0.0":        false,
		"br":                 false,
		"*":                  true,
		"*, gzip;q=0":        false,
		"gzip;q=0, *":        false,
		"identity, *;q=0.1":  true,
		"x-gzip":             false,
		"br;q=1.0, gzip;q=0": false,
	} {
		if got := acceptsGzip(h); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", h, got, want)
		}
	}
}
