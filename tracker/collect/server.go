package collect

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary-io/tributary/formats/decode"
	"github.com/tributary-io/tributary/formats/schema"
	"github.com/tributary-io/tributary/tracker"
)

// Server is the collector, an http.Handler. It is safe for concurrent use:
// what requests share (the UA cache, the dedup window, the validators'
// pools, the readiness state) has its own lock; the rest is read-only after
// New.
type Server struct {
	cfg     Config
	sink    tracker.Sink
	byKey   map[string]*source
	origins map[string]bool // union of the sources' CORS allowlists, for preflights
	anyOrig bool
	dedup   *dedup
	ua      uaCache
	m       *metrics
	refused refusals
}

type source struct {
	Source
	types     map[string]bool
	origins   map[string]bool
	anyOrigin bool
	seeds     dedupSeeds
	validators
	received, accepted prometheus.Counter
}

// New returns a collector that hands accepted events to sink.
func New(cfg Config, sink tracker.Sink) (*Server, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, sink: sink, byKey: map[string]*source{}, origins: map[string]bool{}, m: newMetrics(cfg.Registry)}
	if !cfg.DedupDisabled {
		s.dedup = newDedup(cfg.DedupWindow, cfg.DedupMax)
	}
	for _, src := range cfg.Sources {
		sc := src.Schema
		if sc == nil {
			sc = schema.Activity()
		}
		if _, err := decode.NewJSON(sc, nil); err != nil {
			return nil, fmt.Errorf("source %s: %w", src.Name, err)
		}
		so := &source{Source: src, types: map[string]bool{}, origins: map[string]bool{}, seeds: newDedupSeeds()}
		so.validators.init(sc)
		for _, t := range src.Types {
			so.types[t] = true
		}
		for _, o := range src.CORSOrigins {
			o = strings.TrimRight(o, "/")
			if o == "*" {
				so.anyOrigin, s.anyOrig = true, true
			}
			so.origins[o], s.origins[o] = true, true
		}
		// Making the series here also makes them exist at zero, so
		// dashboards see every source.
		so.received = s.m.received.WithLabelValues(src.Name)
		so.accepted = s.m.accepted.WithLabelValues(src.Name)
		s.byKey[src.WriteKey] = so
	}
	return s, nil
}

// HTTPServer is an http.Server for the collector on addr with the
// configured timeouts, which keep slow or idle clients (slowloris) from
// holding connections: ReadHeaderTimeout for the headers, ReadTimeout for
// the whole request, IdleTimeout between keep-alive requests; and a bound
// on header bytes. Bodies are bounded by the event and batch limits.
func (s *Server) HTTPServer(addr string) *http.Server {
	return &http.Server{
		Addr:              addr,
		Handler:           s,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		ErrorLog:          log.New(io.Discard, "", 0),
	}
}

// endpoints maps a path to its call type.
var endpoints = map[string]string{
	"/v1/track": "track", "/v1/page": "page", "/v1/screen": "screen",
	"/v1/identify": "identify", "/v1/group": "group", "/v1/alias": "alias",
	// analytics.js's short forms.
	"/v1/t": "track", "/v1/p": "page", "/v1/i": "identify", "/v1/g": "group", "/v1/a": "alias",
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	endpoint := r.URL.Path
	rw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
	defer func() {
		if _, ok := endpoints[endpoint]; !ok && !isBatch(endpoint) && !isPixel(endpoint) {
			endpoint = "other"
		}
		s.m.requests.WithLabelValues(endpoint, strconv.Itoa(rw.code)).Inc()
		s.m.duration.WithLabelValues(endpoint).Observe(time.Since(start).Seconds())
	}()
	w = rw
	switch p := r.URL.Path; {
	case isPixel(p):
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeError(w, http.StatusMethodNotAllowed, "method not allowed: use GET", "", "")
			return
		}
		s.pixel(w, r)
	case r.Method == http.MethodOptions && strings.HasPrefix(p, "/v1/"):
		s.preflight(w, r)
	case isBatch(p):
		if !s.post(w, r) {
			return
		}
		s.batch(w, r)
	default:
		typ, ok := endpoints[p]
		if !ok {
			writeError(w, http.StatusNotFound, "no such endpoint: "+p, "", "")
			return
		}
		if !s.post(w, r) {
			return
		}
		s.single(w, r, typ)
	}
}

func isBatch(p string) bool { return p == "/v1/batch" || p == "/v1/import" }

func isPixel(p string) bool {
	return p == "/v1/pixel.gif" || (strings.HasPrefix(p, "/v1/pixel/") && slices.Contains(EventTypes, strings.TrimPrefix(p, "/v1/pixel/")))
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (s *Server) post(w http.ResponseWriter, r *http.Request) bool {
	s.corsGlobal(w, r)
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST, OPTIONS")
		writeError(w, http.StatusMethodNotAllowed, "method not allowed: use POST", "", "")
		return false
	}
	return true
}

// corsGlobal sets CORS headers when the origin is allowed by some source,
// so that a browser may read an error answered before the source is known.
func (s *Server) corsGlobal(w http.ResponseWriter, r *http.Request) {
	o := r.Header.Get("Origin")
	if o != "" && (s.anyOrig || s.origins[o]) {
		setCORS(w, o)
	}
}

func setCORS(w http.ResponseWriter, origin string) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
}

// preflight answers a CORS preflight. The browser sends no credentials, so
// the write key is unknown: an origin passes if any source allows it; the
// request itself is then checked against its own source.
func (s *Server) preflight(w http.ResponseWriter, r *http.Request) {
	o := r.Header.Get("Origin")
	if o == "" || !(s.anyOrig || s.origins[o]) {
		writeError(w, http.StatusForbidden, fmt.Sprintf("origin %q is not allowed by any source's CORS allowlist", o), "", "")
		return
	}
	setCORS(w, o)
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", "POST, GET, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Content-Encoding")
	h.Set("Access-Control-Max-Age", "86400")
	w.WriteHeader(http.StatusNoContent)
}

// basicKey is the Basic auth user name, as Segment's libraries send the
// write key.
func basicKey(r *http.Request) string {
	if u, _, ok := r.BasicAuth(); ok {
		return u
	}
	return ""
}

// sourceOf resolves the write key; on failure it answers 401 and counts.
func (s *Server) sourceOf(w http.ResponseWriter, key string, n int) *source {
	if key == "" {
		s.m.rejected.WithLabelValues("unknown", ReasonUnauthorized).Add(float64(n))
		writeError(w, http.StatusUnauthorized, "missing write key: send it as the Basic auth user name or in a writeKey field", "", ReasonUnauthorized)
		return nil
	}
	src := s.byKey[key]
	if src == nil {
		s.m.rejected.WithLabelValues("unknown", ReasonUnauthorized).Add(float64(n))
		writeError(w, http.StatusUnauthorized, "unknown write key", "", ReasonUnauthorized)
		return nil
	}
	return src
}

// checkOrigin enforces the source's CORS allowlist on a browser request.
func (s *Server) checkOrigin(w http.ResponseWriter, r *http.Request, src *source, n int) bool {
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	if src.anyOrigin || src.origins[o] {
		setCORS(w, o)
		return true
	}
	w.Header().Del("Access-Control-Allow-Origin")
	s.m.rejected.WithLabelValues(src.Name, ReasonOrigin).Add(float64(n))
	writeError(w, http.StatusForbidden, fmt.Sprintf("origin %q is not allowed for this write key", o), "", ReasonOrigin)
	return false
}

// labelOf is the source label of a request before its body is read: the
// Basic auth key's source, else "unknown".
func (s *Server) labelOf(r *http.Request) string {
	if src := s.byKey[basicKey(r)]; src != nil {
		return src.Name
	}
	return "unknown"
}
