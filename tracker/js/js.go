// Package js serves tracker.js, the tracker's browser library, from the
// binary: tracker.js is the source, tracker.min.js (made from it by
// scripts/tracker-js.sh) is what is served, at /tracker.js.
//
// Everything here is immutable after package initialisation; Handler and
// Mount are safe for concurrent use.
package js

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"net/http"
	"strings"
	"time"
)

// Path is where the tracker serves the script.
const Path = "/tracker.js"

// Version is tracker.js's VERSION, the context.library.version of its events.
const Version = "1.0.0"

//go:embed tracker.js
var source []byte

//go:embed tracker.min.js
var minified []byte

// served is the script as served: its bytes, their gzip, and an ETag for
// each (a strong ETag names one representation, so the gzip has its own).
var served = newAsset(minified)

type asset struct {
	raw, gz      []byte
	etag, gzEtag string
	cacheControl string
	contentType  string
	gzipWorthIt  bool
}

func newAsset(b []byte) *asset {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(b)
	zw.Close()
	sum := sha256.Sum256(b)
	tag := hex.EncodeToString(sum[:8])
	return &asset{
		raw: b, gz: buf.Bytes(),
		etag: `"` + tag + `"`, gzEtag: `"` + tag + `-gz"`,
		// The snippet loads an unversioned URL, so a browser keeps the
		// file an hour and then revalidates it by ETag (a 304 of no
		// body): a new version reaches every visitor within the hour.
		cacheControl: "public, max-age=3600",
		contentType:  "text/javascript; charset=utf-8",
		gzipWorthIt:  buf.Len() < len(b),
	}
}

// Script is the script as served, not compressed.
func Script() []byte { return served.raw }

// Source is tracker.js as written, before minification.
func Source() []byte { return source }

// Handler serves the script: GET and HEAD only, gzip when the client
// accepts it, ETag and Cache-Control for caching, and
// Access-Control-Allow-Origin: * so that a page may load it with a
// Subresource Integrity check (which needs CORS).
func Handler() http.Handler { return http.HandlerFunc(served.serve) }

// Mount serves the script at Path and hands every other request to next.
func Mount(next http.Handler) http.Handler {
	h := Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == Path {
			h.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (a *asset) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed: use GET", http.StatusMethodNotAllowed)
		return
	}
	body, etag := a.raw, a.etag
	if a.gzipWorthIt && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		body, etag = a.gz, a.gzEtag
		h.Set("Content-Encoding", "gzip")
	}
	h.Set("Content-Type", a.contentType)
	h.Set("Cache-Control", a.cacheControl)
	h.Set("ETag", etag)
	h.Set("Vary", "Accept-Encoding")
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("X-Content-Type-Options", "nosniff")
	// ServeContent answers If-None-Match with 304, HEAD without a body,
	// and ranges, from the ETag set above.
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip: listed
// (or "*") with a q-value other than 0.
func acceptsGzip(header string) bool {
	ok := false
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding != "gzip" && coding != "*" {
			continue
		}
		q := strings.ReplaceAll(strings.ToLower(params), " ", "")
		zero := q == "q=0" || strings.HasPrefix(q, "q=0.") && strings.Trim(q[len("q=0."):], "0") == ""
		if coding == "gzip" {
			return !zero
		}
		ok = !zero // "*" counts unless gzip is named
	}
	return ok
}
