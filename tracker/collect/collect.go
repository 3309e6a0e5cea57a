package collect

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tributary-io/tributary/formats/decode"
	"github.com/tributary-io/tributary/formats/schema"
	"github.com/tributary-io/tributary/tracker"
)

// Server is the collector, an http.Handler.
type Server struct {
	cfg     Config
	sink    tracker.Sink
	byKey   map[string]*source
	origins map[string]bool // union of the sources' CORS allowlists, for preflights
	anyOrig bool
	dedup   *dedup
	ua      uaCache
	m       *metrics
}

type source struct {
	Source
	types     map[string]bool
	origins   map[string]bool
	anyOrigin bool
	pool      sync.Pool // *validator
}

// validator is a schema decoder used only to check events; the rows it
// builds are released every so often.
type validator struct {
	d    *decode.JSON
	rows int
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
		so := &source{Source: src, types: map[string]bool{}, origins: map[string]bool{}}
		so.pool.New = func() any {
			d, err := decode.NewJSON(sc, nil)
			if err != nil {
				panic(err) // checked above
			}
			return &validator{d: d}
		}
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
		s.byKey[src.WriteKey] = so
		// Make the series exist at zero, so dashboards see every source.
		s.m.received.WithLabelValues(src.Name)
		s.m.accepted.WithLabelValues(src.Name)
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

// endpoints maps a path to its call type ("" for batch).
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

// readBody reads at most limit bytes of body (after gzip, if encoded).
func readBody(w http.ResponseWriter, r *http.Request, limit int) ([]byte, int, string) {
	var rd io.Reader = http.MaxBytesReader(w, r.Body, int64(limit)+1)
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(rd)
		if err != nil {
			return nil, http.StatusBadRequest, "bad gzip body: " + err.Error()
		}
		rd = zr
	}
	body, err := io.ReadAll(io.LimitReader(rd, int64(limit)+1))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe) || len(body) > limit:
		return nil, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than the limit of %d bytes", limit)
	case err != nil && isTimeout(err):
		return nil, http.StatusRequestTimeout, "request body not received in time"
	case err != nil:
		return nil, http.StatusBadRequest, "reading the body: " + err.Error()
	}
	return body, 0, ""
}

func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &te) && te.Timeout())
}

// parseObject decodes one JSON object, numbers kept as written.
func parseObject(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("not a JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON object")
	}
	return m, nil
}

// writeKey is the key of a request: the Basic auth user name, as Segment's
// libraries send it, else the body's writeKey field.
func writeKey(r *http.Request, body map[string]any) string {
	if u, _, ok := r.BasicAuth(); ok && u != "" {
		return u
	}
	if body != nil {
		if k, ok := body["writeKey"].(string); ok {
			return k
		}
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

// request is what enrichment needs from the HTTP request.
type request struct {
	received time.Time
	ip       netip.Addr
	ua       string
	channel  string
	private  bool           // DNT or GPC, honoured
	sentAt   any            // batch-level sentAt
	context  map[string]any // batch-level context
}

func (s *Server) requestOf(r *http.Request, channel string) *request {
	q := &request{received: s.cfg.Now().UTC(), ip: ClientIP(r, s.cfg.TrustedProxies), ua: r.Header.Get("User-Agent"), channel: channel}
	if channel == "" {
		q.channel = "server"
		if r.Header.Get("Origin") != "" {
			q.channel = "browser"
		}
	}
	q.private = (s.cfg.HonorDNT && r.Header.Get("DNT") == "1") || (s.cfg.HonorGPC && r.Header.Get("Sec-GPC") == "1")
	return q
}

// Rejection is an event refused, as the answer lists it.
type Rejection struct {
	Index     int    `json:"index"`
	MessageID string `json:"messageId,omitempty"`
	Path      string `json:"path,omitempty"`
	Reason    string `json:"reason"`
	Code      string `json:"code"`
}

// outcome of preparing one event.
type outcome struct {
	ev      tracker.Event
	rej     *Rejection
	private bool // dropped for DNT/GPC
}

// prepare checks and enriches one event; typ is the endpoint's call type
// ("" in a batch, where the event names its own).
func (s *Server) prepare(src *source, q *request, obj map[string]any, typ string) outcome {
	reject := func(code, path, reason string) outcome {
		return outcome{rej: &Rejection{MessageID: stringField(obj, "messageId"), Path: path, Reason: reason, Code: code}}
	}
	if typ != "" {
		obj["type"] = typ
	} else {
		typ = stringField(obj, "type")
		if !slices.Contains(EventTypes, typ) {
			return reject(ReasonSchema, "type", "missing or unknown type: want one of "+strings.Join(EventTypes, ", "))
		}
	}
	if len(src.types) > 0 && !src.types[typ] {
		return reject(ReasonType, "type", fmt.Sprintf("event type %q is not allowed for this source", typ))
	}
	if q.private && s.cfg.PrivacyAction == PrivacyDrop {
		return outcome{private: true}
	}
	delete(obj, "writeKey")
	for _, k := range []string{"userId", "anonymousId", "groupId", "previousId"} {
		if n, ok := obj[k].(json.Number); ok { // analytics libraries coerce ids to strings; so do we
			obj[k] = n.String()
		}
	}
	userID, anonID := stringField(obj, "userId"), stringField(obj, "anonymousId")
	if userID == "" && anonID == "" {
		return reject(ReasonSchema, "userId", "missing: userId or anonymousId is required")
	}
	switch typ {
	case "track":
		if stringField(obj, "event") == "" {
			return reject(ReasonSchema, "event", "missing: a track call names its event")
		}
	case "group":
		if stringField(obj, "groupId") == "" {
			return reject(ReasonSchema, "groupId", "missing: a group call needs a groupId")
		}
	case "alias":
		if userID == "" || stringField(obj, "previousId") == "" {
			return reject(ReasonSchema, "previousId", "missing: an alias call needs userId and previousId")
		}
	}

	// Enrichment.
	obj["receivedAt"] = formatTime(q.received)
	if id, ok := obj["messageId"]; !ok || id == nil || id == "" {
		obj["messageId"] = newMessageID()
	}
	if _, ok := obj["sentAt"]; !ok && q.sentAt != nil {
		obj["sentAt"] = q.sentAt
	}
	if ts, ok := obj["timestamp"]; !ok || ts == nil {
		obj["timestamp"] = obj["receivedAt"]
	} else if t, ok := parseTime(ts); ok {
		// Segment's clock-skew correction: receivedAt - (sentAt - originalTimestamp).
		if sent, ok := parseTime(obj["sentAt"]); ok {
			if _, had := obj["originalTimestamp"]; !had {
				obj["originalTimestamp"] = ts
			}
			obj["timestamp"] = formatTime(q.received.Add(-sent.Sub(t)))
		}
	}
	setIfAbsent(obj, "channel", q.channel)
	if ctx, ok := object(obj, "context"); ok {
		for k, v := range q.context {
			if _, has := ctx[k]; !has {
				ctx[k] = v
			}
		}
		s.enrichContext(src, q, ctx)
	}

	value, err := json.Marshal(obj)
	if err != nil {
		return reject(ReasonSchema, "", "cannot encode the event: "+err.Error())
	}
	if path, reason := src.validate(value); reason != "" {
		return reject(ReasonSchema, path, reason)
	}
	key := userID
	if key == "" {
		key = anonID
	}
	id, _ := obj["messageId"].(string) // a string unless a custom schema allows otherwise
	return outcome{ev: tracker.Event{Topic: src.Topic, Key: []byte(key), Value: value, Timestamp: q.received.UnixMilli(), MessageID: id}}
}

func (s *Server) enrichContext(src *source, q *request, ctx map[string]any) {
	strip := q.private // PrivacyStrip: PrivacyDrop never gets here
	switch {
	case strip || s.cfg.IP == IPDrop:
		delete(ctx, "ip")
	default:
		ip := q.ip
		if src.TrustContextIP {
			if a, err := netip.ParseAddr(stringField(ctx, "ip")); err == nil {
				ip = a.Unmap()
			}
		}
		if !ip.IsValid() {
			delete(ctx, "ip")
			break
		}
		if s.cfg.IP == IPAnonymize {
			ip = AnonymizeIP(ip)
		}
		ctx["ip"] = ip.String()
	}
	if strip {
		delete(ctx, "userAgent")
		return
	}
	uaStr := stringField(ctx, "userAgent")
	if uaStr == "" {
		uaStr = q.ua
		if uaStr != "" {
			ctx["userAgent"] = uaStr
		}
	}
	if uaStr == "" {
		return
	}
	u := s.ua.parse(uaStr)
	if u.Browser != "" {
		if b, ok := object(ctx, "browser"); ok {
			setIfAbsent(b, "name", u.Browser)
			setIfAbsent(b, "version", u.BrowserVersion)
		}
	}
	if u.OS != "" {
		if o, ok := object(ctx, "os"); ok {
			setIfAbsent(o, "name", u.OS)
			setIfAbsent(o, "version", u.OSVersion)
		}
	}
	if d, ok := object(ctx, "device"); ok {
		if u.Bot {
			d["type"] = "bot"
		} else {
			setIfAbsent(d, "type", u.DeviceType)
		}
		setIfAbsent(d, "model", u.DeviceModel)
	}
}

// validate checks an enriched event against the source's schema.
func (src *source) validate(value []byte) (path, reason string) {
	v := src.pool.Get().(*validator)
	defer src.pool.Put(v)
	errs := v.d.Decode([]decode.Record{{Value: value}})
	if len(errs) > 0 {
		return errs[0].Path, errs[0].Reason
	}
	if v.rows++; v.rows >= 256 {
		if rec := v.d.Flush(); rec != nil {
			rec.Release()
		}
		v.rows = 0
	}
	return "", ""
}

// result of handing a set of events to the Sink.
type result struct {
	accepted, duplicates, private int
	rejected                      []Rejection
	err                           error // from the Sink: nothing was accepted
}

// handle prepares, dedups and submits events. raws are the events as sent.
func (s *Server) handle(ctx context.Context, src *source, q *request, objs []map[string]any, raws [][]byte, typ string, pre []Rejection) result {
	res := result{rejected: pre}
	s.m.received.WithLabelValues(src.Name).Add(float64(len(objs) + len(pre)))
	var (
		evs     []tracker.Event
		ids     []string
		invalid []tracker.Event
		batch   map[string]bool
	)
	for i, obj := range objs {
		if obj == nil {
			continue // rejected before (in pre)
		}
		o := s.prepare(src, q, obj, typ)
		switch {
		case o.private:
			res.private++
			continue
		case o.rej != nil:
			o.rej.Index = i
			res.rejected = append(res.rejected, *o.rej)
			if src.InvalidTopic != "" && o.rej.Code == ReasonSchema {
				invalid = append(invalid, tracker.Event{Topic: src.InvalidTopic, Value: raws[i], Timestamp: q.received.UnixMilli(), MessageID: o.rej.MessageID})
			}
			continue
		}
		if s.dedup != nil {
			id := src.Name + "\x00" + o.ev.MessageID
			if batch[id] || s.dedup.seen(id, q.received) {
				res.duplicates++
				continue
			}
			if batch == nil {
				batch = map[string]bool{}
			}
			batch[id] = true
			ids = append(ids, id)
		}
		evs = append(evs, o.ev)
	}
	slices.SortFunc(res.rejected, func(a, b Rejection) int { return a.Index - b.Index })
	for _, r := range res.rejected {
		s.m.rejected.WithLabelValues(src.Name, r.Code).Inc()
	}
	if res.private > 0 {
		s.m.privacy.WithLabelValues(src.Name).Add(float64(res.private))
	}
	if res.duplicates > 0 {
		s.m.duplicates.WithLabelValues(src.Name).Add(float64(res.duplicates))
	}
	if len(evs) > 0 {
		if err := s.sink.Submit(ctx, evs); err != nil {
			s.m.rejected.WithLabelValues(src.Name, ReasonUnavailable).Add(float64(len(evs)))
			s.cfg.Logger.Warn("sink refused events", "source", src.Name, "events", len(evs), "err", err)
			res.err = err
			return res
		}
		if s.dedup != nil {
			s.dedup.mark(ids, q.received)
		}
		res.accepted = len(evs)
		s.m.accepted.WithLabelValues(src.Name).Add(float64(len(evs)))
	}
	if len(invalid) > 0 {
		result := "ok"
		if err := s.sink.Submit(ctx, invalid); err != nil {
			result = "error"
			s.cfg.Logger.Warn("cannot forward invalid events", "source", src.Name, "topic", src.InvalidTopic, "err", err)
		}
		s.m.invalidOut.WithLabelValues(src.Name, result).Add(float64(len(invalid)))
	}
	return res
}

// unavailable answers 503 with Retry-After: the Sink did not take the
// events (its spool is full, or the broker did not acknowledge in time).
func (s *Server) unavailable(w http.ResponseWriter, err error) {
	after := s.cfg.RetryAfter
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) && ra.RetryAfter() > 0 {
		after = ra.RetryAfter()
	}
	w.Header().Set("Retry-After", strconv.Itoa(int((after+time.Second-1)/time.Second)))
	writeError(w, http.StatusServiceUnavailable, "events not accepted, retry later: "+err.Error(), "", ReasonUnavailable)
}

func (s *Server) single(w http.ResponseWriter, r *http.Request, typ string) {
	label := s.labelOf(r)
	body, code, msg := readBody(w, r, s.cfg.MaxEventBytes)
	if code != 0 {
		s.m.received.WithLabelValues(label).Inc()
		s.m.rejected.WithLabelValues(label, reasonOfCode(code)).Inc()
		writeError(w, code, msg, "", reasonOfCode(code))
		return
	}
	obj, err := parseObject(body)
	if err != nil {
		s.m.received.WithLabelValues(label).Inc()
		s.m.rejected.WithLabelValues(label, ReasonMalformed).Inc()
		writeError(w, http.StatusBadRequest, "malformed JSON: "+err.Error(), "", ReasonMalformed)
		return
	}
	src := s.sourceOf(w, writeKey(r, obj), 1)
	if src == nil || !s.checkOrigin(w, r, src, 1) {
		return
	}
	q := s.requestOf(r, "")
	res := s.handle(r.Context(), src, q, []map[string]any{obj}, [][]byte{body}, typ, nil)
	switch {
	case res.err != nil:
		s.unavailable(w, res.err)
	case len(res.rejected) > 0:
		rj := res.rejected[0]
		code := http.StatusBadRequest
		if rj.Code == ReasonType {
			code = http.StatusForbidden
		}
		msg := rj.Reason
		if rj.Path != "" {
			msg = rj.Path + ": " + rj.Reason
		}
		writeError(w, code, msg, rj.Path, rj.Code)
	default:
		writeJSON(w, http.StatusOK, map[string]any{"success": true})
	}
}

// batchBody is a /v1/batch request.
type batchBody struct {
	Batch    []json.RawMessage `json:"batch"`
	WriteKey string            `json:"writeKey"`
	SentAt   json.RawMessage   `json:"sentAt"`
	Context  json.RawMessage   `json:"context"`
}

func (s *Server) batch(w http.ResponseWriter, r *http.Request) {
	label := s.labelOf(r)
	body, code, msg := readBody(w, r, s.cfg.MaxBatchBytes)
	if code != 0 {
		s.m.received.WithLabelValues(label).Inc()
		s.m.rejected.WithLabelValues(label, reasonOfCode(code)).Inc()
		writeError(w, code, msg, "", reasonOfCode(code))
		return
	}
	var b batchBody
	dec := json.NewDecoder(bytes.NewReader(body))
	err := dec.Decode(&b)
	if err == nil && b.Batch == nil {
		err = errors.New(`no "batch" array`)
	}
	if err != nil {
		s.m.received.WithLabelValues(label).Inc()
		s.m.rejected.WithLabelValues(label, ReasonMalformed).Inc()
		writeError(w, http.StatusBadRequest, "malformed JSON: "+err.Error(), "batch", ReasonMalformed)
		return
	}
	key := writeKey(r, nil)
	if key == "" {
		key = b.WriteKey
	}
	n := len(b.Batch)
	src := s.sourceOf(w, key, n)
	if src == nil || !s.checkOrigin(w, r, src, n) {
		return
	}
	q := s.requestOf(r, "")
	if len(b.SentAt) > 0 {
		var v any
		d := json.NewDecoder(bytes.NewReader(b.SentAt))
		d.UseNumber()
		if d.Decode(&v) == nil {
			q.sentAt = v
		}
	}
	if len(b.Context) > 0 {
		if c, err := parseObject(b.Context); err == nil {
			q.context = c
		}
	}
	objs := make([]map[string]any, n)
	raws := make([][]byte, n)
	var pre []Rejection
	for i, raw := range b.Batch {
		raws[i] = raw
		if len(raw) > s.cfg.MaxEventBytes {
			pre = append(pre, Rejection{Index: i, Reason: fmt.Sprintf("event larger than the limit of %d bytes", s.cfg.MaxEventBytes), Code: ReasonTooLarge})
			continue
		}
		obj, err := parseObject(raw)
		if err != nil {
			pre = append(pre, Rejection{Index: i, Reason: "not a JSON object: " + err.Error(), Code: ReasonMalformed})
			continue
		}
		objs[i] = obj
	}
	res := s.handle(r.Context(), src, q, objs, raws, "", pre)
	if res.err != nil {
		s.unavailable(w, res.err)
		return
	}
	ans := map[string]any{"success": true, "accepted": res.accepted}
	if res.duplicates > 0 {
		ans["duplicates"] = res.duplicates
	}
	if len(res.rejected) > 0 {
		ans["rejected"] = res.rejected
	}
	code = http.StatusOK
	if len(res.rejected) > 0 && len(res.rejected) == n {
		ans["success"] = false
		ans["error"] = "every event of the batch was rejected"
		code = http.StatusBadRequest
	}
	writeJSON(w, code, ans)
}

// labelOf is the source label of a request before its body is read: the
// Basic auth key's source, else "unknown".
func (s *Server) labelOf(r *http.Request) string {
	if u, _, ok := r.BasicAuth(); ok {
		if src := s.byKey[u]; src != nil {
			return src.Name
		}
	}
	return "unknown"
}

func reasonOfCode(code int) string {
	switch code {
	case http.StatusRequestEntityTooLarge:
		return ReasonTooLarge
	case http.StatusRequestTimeout:
		return ReasonTimeout
	}
	return ReasonMalformed
}

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
	var obj map[string]any
	var raw []byte
	if data := q.Get("data"); data != "" {
		var err error
		raw, err = decodeBase64(data)
		if err == nil {
			obj, err = parseObject(raw)
		}
		if err != nil {
			fail("unknown", ReasonMalformed, "data: "+err.Error())
			return
		}
	} else {
		obj = map[string]any{}
		props, traits := map[string]any{}, map[string]any{}
		for k, vs := range q {
			v := vs[0]
			switch {
			case k == "writeKey":
				obj[k] = v
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
		wk, has := obj["writeKey"]
		delete(obj, "writeKey")
		raw, _ = json.Marshal(obj)
		if has {
			obj["writeKey"] = wk
		}
	}
	if t, ok := obj["type"].(string); ok && t != "" {
		typ = t
	}
	key := writeKey(r, obj)
	if key == "" {
		key = q.Get("writeKey")
	}
	src := s.byKey[key]
	if src == nil {
		fail("unknown", ReasonUnauthorized, "missing or unknown write key")
		return
	}
	if !slices.Contains(EventTypes, typ) {
		fail(src.Name, ReasonSchema, "unknown type "+typ)
		return
	}
	res := s.handle(r.Context(), src, s.requestOf(r, "pixel"), []map[string]any{obj}, [][]byte{raw}, typ, nil)
	if res.err != nil {
		s.cfg.Logger.Debug("pixel event not accepted", "source", src.Name, "err", res.err)
	}
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

// errorBody is the answer to a refused request.
type errorBody struct {
	Success bool   `json:"success"`
	Error   string `json:"error"`
	Path    string `json:"path,omitempty"`
	Code    string `json:"code,omitempty"`
}

func writeError(w http.ResponseWriter, code int, msg, path, reason string) {
	writeJSON(w, code, errorBody{Error: msg, Path: path, Code: reason})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}
