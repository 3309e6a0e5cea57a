package collect

import (
	"bytes"
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tributary-io/tributary/formats/decode"
	"github.com/tributary-io/tributary/internal/jsonstr"
	"github.com/tributary-io/tributary/tracker/validate"
)

// request is what enrichment needs from the HTTP request, worked out once
// for all the events of a batch.
type request struct {
	received   time.Time
	receivedAt []byte // received as a JSON string
	ip         netip.Addr
	ipJSON     []byte // context.ip for this peer, per Config.IP; nil: none
	ua         []byte // the User-Agent header
	uaJSON     []byte // ua as a JSON string
	channel    []byte // a JSON string
	private    bool   // DNT or GPC, honoured

	sentAt   []byte    // the batch's sentAt as sent; nil when absent or null
	sentTime time.Time // sentAt parsed, when sentOK
	sentOK   bool
	context  []member // the batch's context (duplicates marked dropped)
	// canon is set when some event may need canonical: the body is not
	// valid UTF-8 or escapes a surrogate.
	canon bool
}

func (s *Server) requestOf(r *http.Request, w *work, channel string) *request {
	q := &w.req
	*q = request{received: s.cfg.Now().UTC(), ip: ClientIP(r, s.cfg.TrustedProxies), context: q.context[:0]}
	// The slices taken of b stay valid when a later append moves it.
	b := jsonstr.Append(w.reqVals[:0], formatTime(q.received))
	q.receivedAt = b
	if ip := q.ip; ip.IsValid() && s.cfg.IP != IPDrop {
		if s.cfg.IP == IPAnonymize {
			ip = AnonymizeIP(ip)
		}
		n := len(b)
		b = jsonstr.Append(b, ip.String())
		q.ipJSON = b[n:]
	}
	if ua := r.Header.Get("User-Agent"); ua != "" {
		n := len(b)
		b = append(b, ua...)
		q.ua = b[n:]
		n = len(b)
		b = jsonstr.Append(b, ua)
		q.uaJSON = b[n:]
	}
	if channel != "" {
		n := len(b)
		b = jsonstr.Append(b, channel)
		q.channel = b[n:]
	}
	w.reqVals = b
	switch {
	case channel != "":
	case r.Header.Get("Origin") != "":
		q.channel = jsonBrowser
	default:
		q.channel = jsonServer
	}
	q.private = (s.cfg.HonorDNT && r.Header.Get("DNT") == "1") || (s.cfg.HonorGPC && r.Header.Get("Sec-GPC") == "1")
	return q
}

var (
	jsonBrowser = []byte(`"browser"`)
	jsonServer  = []byte(`"server"`)
	jsonBot     = []byte(`"bot"`)
)

// work is the scratch space of one request, pooled: after the first few
// requests, preparing events allocates nothing but what is handed to the
// Sink.
type work struct {
	body    bytes.Buffer
	req     request
	reqVals []byte

	elems   [][]byte // the events as sent (nil: rejected before prepare)
	members []member // the top-level members of the events of a batch
	spans   [][2]int // elems[i]'s members are members[spans[i][0]:spans[i][1]]

	top, ctx, sub []member
	add, cadd     []field
	vals          []byte // new values of the event being prepared

	out      []byte  // enriched events and their keys, back to back
	ids      []byte  // their message ids, back to back
	ready    []ready // the events prepared, in order
	recs     []decode.Record
	rejected []Rejection
	inBatch  map[dedupKey]struct{}
	keys     []dedupKey
	idx      []int
	seen     []bool

	lastUA   []byte // a memo of the last user agent looked up
	lastInfo *uaInfo
}

var works = sync.Pool{New: func() any { return new(work) }}

// maxPooledBody is the largest body buffer a work keeps for the next
// request; a larger one (a gzip bomb stopped at the limit) is let go.
const maxPooledBody = 1 << 20

func getWork() *work { return works.Get().(*work) }

func putWork(w *work) {
	if w.body.Cap() > maxPooledBody {
		w.body = bytes.Buffer{}
	}
	w.body.Reset()
	w.elems, w.members, w.spans = w.elems[:0], w.members[:0], w.spans[:0]
	w.out, w.ids, w.ready, w.rejected = w.out[:0], w.ids[:0], w.ready[:0], w.rejected[:0]
	clear(w.recs)
	w.recs = w.recs[:0]
	w.lastUA, w.lastInfo = nil, nil
	works.Put(w)
}

// ready is an event that passed the collector's own checks, waiting for
// schema validation and deduplication. Spans index work.out and work.ids.
type ready struct {
	index          int // in the request
	valStart, key  int // the value is out[valStart:key], the key out[key:end]
	end            int
	idStart, idEnd int // the messageId, when a string
	idIsString     bool
	invalid, dup   bool // refused by the schema, a duplicate
	// typ and event name the event's registry subject; set only for a
	// source with a Registry.
	typ, event string
}

// Rejection is an event refused, as the answer lists it.
type Rejection struct {
	Index     int    `json:"index"`
	MessageID string `json:"messageId,omitempty"`
	Path      string `json:"path,omitempty"`
	Reason    string `json:"reason"`
	Code      string `json:"code"`
	// Subject and Version name the registered schema that refused it.
	Subject string `json:"subject,omitempty"`
	Version int    `json:"version,omitempty"`

	schemaID   int
	violations []validate.Violation // all of them, for the bad-events topic
}

// Top-level fields the collector reads or writes.
const (
	fType = iota
	fWriteKey
	fUserID
	fAnonymousID
	fGroupID
	fPreviousID
	fEvent
	fMessageID
	fTimestamp
	fOriginalTimestamp
	fSentAt
	fReceivedAt
	fChannel
	fContext
	nFields
)

var fieldNames = [nFields]string{"type", "writeKey", "userId", "anonymousId", "groupId", "previousId", "event",
	"messageId", "timestamp", "originalTimestamp", "sentAt", "receivedAt", "channel", "context"}

func topField(k []byte) int {
	switch string(k) {
	case "type":
		return fType
	case "writeKey":
		return fWriteKey
	case "userId":
		return fUserID
	case "anonymousId":
		return fAnonymousID
	case "groupId":
		return fGroupID
	case "previousId":
		return fPreviousID
	case "event":
		return fEvent
	case "messageId":
		return fMessageID
	case "timestamp":
		return fTimestamp
	case "originalTimestamp":
		return fOriginalTimestamp
	case "sentAt":
		return fSentAt
	case "receivedAt":
		return fReceivedAt
	case "channel":
		return fChannel
	case "context":
		return fContext
	}
	return -1
}

// fields indexes the top-level members of the event being prepared.
type fields struct {
	w   *work
	top []member
	idx [nFields]int
}

func (f *fields) get(k int) []byte {
	if i := f.idx[k]; i >= 0 {
		return f.top[i].val
	}
	return nil
}

func (f *fields) has(k int) bool { return f.idx[k] >= 0 }

// str is field k when it is a non-empty string ("" otherwise), decoded.
func (f *fields) str(k int) []byte {
	s, _ := stringOf(f.get(k))
	return s
}

func (f *fields) set(k int, v []byte) {
	if i := f.idx[k]; i >= 0 {
		f.top[i].repl = v
		return
	}
	f.w.add = append(f.w.add, field{fieldNames[k], v})
}

func (f *fields) del(k int) {
	if i := f.idx[k]; i >= 0 {
		f.top[i].drop = true
	}
}

// prepare checks and enriches one event, raw as sent; typ is the
// endpoint's call type ("" in a batch, where the event names its own). An
// event that passes is appended to w.ready; one that does not is returned
// as a Rejection (without its index); private is an event dropped for
// DNT/GPC.
func (s *Server) prepare(w *work, src *source, q *request, index int, raw []byte, top []member, typ string) (rej *Rejection, private bool) {
	if q.canon && needsCanonical(raw) {
		if c, err := canonical(raw); err == nil {
			raw, top = c, nil
		}
	}
	w.add, w.vals = w.add[:0], w.vals[:0]
	if top == nil {
		w.top = w.top[:0]
		sc := scanner{b: raw}
		if _, err := sc.object(skipWS(raw, 0), 1, &w.top); err != nil {
			return &Rejection{Reason: "not a JSON object: " + err.Error(), Code: ReasonMalformed}, false
		}
		top = w.top
	}
	dedupe(top)
	f := fields{w: w, top: top}
	for i := range f.idx {
		f.idx[i] = -1
	}
	for i := range top {
		if !top[i].drop {
			if k := topField(top[i].key); k >= 0 {
				f.idx[k] = i
			}
		}
	}
	reject := func(code, path, reason string) (*Rejection, bool) {
		return &Rejection{MessageID: string(f.str(fMessageID)), Path: path, Reason: reason, Code: code}, false
	}

	if typ != "" {
		w.vals = jsonstr.Append(w.vals, typ)
		f.set(fType, w.vals)
	} else {
		t := f.str(fType)
		for _, et := range EventTypes {
			if string(t) == et {
				typ = et
			}
		}
		if typ == "" {
			return reject(ReasonSchema, "type", "missing or unknown type: want one of "+strings.Join(EventTypes, ", "))
		}
	}
	if len(src.types) > 0 && !src.types[typ] {
		return reject(ReasonType, "type", fmt.Sprintf("event type %q is not allowed for this source", typ))
	}
	if q.private && s.cfg.PrivacyAction == PrivacyDrop {
		return nil, true
	}
	f.del(fWriteKey)
	// Analytics libraries coerce ids to strings; so does the collector.
	var ids [fPreviousID + 1][]byte
	for k := fUserID; k <= fPreviousID; k++ {
		v := f.get(k)
		if isNumber(v) {
			start := len(w.vals)
			w.vals = jsonstr.Append(w.vals, v)
			f.set(k, w.vals[start:])
			ids[k] = v
		} else {
			ids[k], _ = stringOf(v)
		}
	}
	userID, anonID := ids[fUserID], ids[fAnonymousID]
	if len(userID) == 0 && len(anonID) == 0 {
		return reject(ReasonSchema, "userId", "missing: userId or anonymousId is required")
	}
	switch typ {
	case "track":
		if len(f.str(fEvent)) == 0 {
			return reject(ReasonSchema, "event", "missing: a track call names its event")
		}
	case "group":
		if len(ids[fGroupID]) == 0 {
			return reject(ReasonSchema, "groupId", "missing: a group call needs a groupId")
		}
	case "alias":
		if len(userID) == 0 || len(ids[fPreviousID]) == 0 {
			return reject(ReasonSchema, "previousId", "missing: an alias call needs userId and previousId")
		}
	}

	// Enrichment.
	f.set(fReceivedAt, q.receivedAt)
	idStart := len(w.ids)
	idIsString := true
	switch id := f.get(fMessageID); {
	case id == nil || isNull(id) || string(id) == `""`:
		w.ids = appendMessageID(w.ids)
		start := len(w.vals)
		w.vals = jsonstr.Append(w.vals, w.ids[idStart:])
		f.set(fMessageID, w.vals[start:])
	case isString(id):
		s, _ := stringOf(id)
		w.ids = append(w.ids, s...)
	default:
		idIsString = false // a custom schema's business
	}
	sentAt := f.get(fSentAt)
	sentFromBatch := false
	if sentAt == nil && q.sentAt != nil {
		sentAt, sentFromBatch = q.sentAt, true
		f.set(fSentAt, sentAt)
	}
	if ts := f.get(fTimestamp); ts == nil || isNull(ts) {
		f.set(fTimestamp, q.receivedAt)
	} else if t, ok := parseTime(ts); ok {
		// Segment's clock-skew correction: receivedAt - (sentAt - originalTimestamp).
		sent, ok := q.sentTime, q.sentOK
		if !sentFromBatch {
			sent, ok = parseTime(sentAt)
		}
		if ok {
			if !f.has(fOriginalTimestamp) {
				f.set(fOriginalTimestamp, ts)
			}
			start := len(w.vals)
			w.vals = jsonstr.Append(w.vals, formatTime(q.received.Add(-sent.Sub(t))))
			f.set(fTimestamp, w.vals[start:])
		}
	}
	if ch := f.get(fChannel); ch == nil || isNull(ch) {
		f.set(fChannel, q.channel)
	}
	if c := f.get(fContext); c == nil || isNull(c) || isObject(c) {
		f.set(fContext, s.enrichContext(w, src, q, c))
	}

	r := ready{index: index, valStart: len(w.out), idStart: idStart, idEnd: len(w.ids), idIsString: idIsString}
	if src.Registry != nil {
		r.typ, r.event = typ, string(f.str(fEvent))
	}
	w.out = writeObject(w.out, top, w.add)
	r.key = len(w.out)
	if len(userID) > 0 {
		w.out = append(w.out, userID...)
	} else {
		w.out = append(w.out, anonID...)
	}
	r.end = len(w.out)
	w.ready = append(w.ready, r)
	return nil, false
}

// Context fields the collector reads or writes.
const (
	cIP = iota
	cUserAgent
	cBrowser
	cOS
	cDevice
	nContext
)

var contextNames = [nContext]string{"ip", "userAgent", "browser", "os", "device"}

// enrichContext returns the event's context (c, an object, or nil for
// none) with the batch's context under it, the client IP and the parsed
// user agent.
func (s *Server) enrichContext(w *work, src *source, q *request, c []byte) []byte {
	w.ctx, w.cadd = w.ctx[:0], w.cadd[:0]
	if isObject(c) {
		sc := scanner{b: c}
		sc.object(0, 1, &w.ctx) // checked with the event
		dedupe(w.ctx)
	}
	for _, m := range q.context {
		if !m.drop && findKey(w.ctx, m.key) < 0 {
			w.ctx = append(w.ctx, member{kraw: m.kraw, key: m.key, val: m.val})
		}
	}
	var idx [nContext]int
	for k := range idx {
		idx[k] = find(w.ctx, contextNames[k])
	}
	get := func(k int) []byte {
		if idx[k] < 0 {
			return nil
		}
		return w.ctx[idx[k]].val
	}
	set := func(k int, v []byte) {
		if idx[k] >= 0 {
			w.ctx[idx[k]].repl = v
			return
		}
		w.cadd = append(w.cadd, field{contextNames[k], v})
	}
	del := func(k int) {
		if idx[k] >= 0 {
			w.ctx[idx[k]].drop = true
		}
	}

	strip := q.private // PrivacyStrip: PrivacyDrop never gets here
	if strip || s.cfg.IP == IPDrop {
		del(cIP)
	} else {
		ip := q.ipJSON
		if src.TrustContextIP {
			if v, ok := stringOf(get(cIP)); ok {
				if a, err := netip.ParseAddr(string(v)); err == nil {
					a = a.Unmap()
					if s.cfg.IP == IPAnonymize {
						a = AnonymizeIP(a)
					}
					start := len(w.vals)
					w.vals = jsonstr.Append(w.vals, a.String())
					ip = w.vals[start:]
				}
			}
		}
		if ip == nil {
			del(cIP)
		} else {
			set(cIP, ip)
		}
	}
	if strip {
		del(cUserAgent)
	} else {
		ua, _ := stringOf(get(cUserAgent))
		if len(ua) == 0 {
			ua = q.ua
			if len(ua) > 0 {
				set(cUserAgent, q.uaJSON)
			}
		}
		if len(ua) > 0 {
			u := w.uaInfo(&s.ua, ua)
			if u.Browser != "" {
				w.setSub(&idx, cBrowser, u.browserObj, field{"name", u.jBrowser}, field{"version", u.jBrowserVersion}, false)
			}
			if u.OS != "" {
				w.setSub(&idx, cOS, u.osObj, field{"name", u.jOS}, field{"version", u.jOSVersion}, false)
			}
			w.setSub(&idx, cDevice, u.deviceObj, field{"type", u.jDeviceType}, field{"model", u.jDeviceModel}, u.Bot)
		}
	}
	start := len(w.vals)
	w.vals = writeObject(w.vals, w.ctx, w.cadd)
	return w.vals[start:]
}

// setSub fills the context member k, an object: each of a and b unless the
// sender gave it (a in any case when forceA), or, when the sender sent no
// object (or null), fresh. Fields with a nil value are left alone.
func (w *work) setSub(idx *[nContext]int, k int, fresh []byte, a, b field, forceA bool) {
	i := idx[k]
	if i < 0 {
		w.cadd = append(w.cadd, field{contextNames[k], fresh})
		return
	}
	v := w.ctx[i].val
	if isNull(v) {
		w.ctx[i].repl = fresh
		return
	}
	if !isObject(v) {
		return // the schema check will say so
	}
	w.sub = w.sub[:0]
	sc := scanner{b: v}
	sc.object(0, 1, &w.sub)
	dedupe(w.sub)
	var add [2]field
	n := 0
	for j, fl := range [2]field{a, b} {
		if fl.val == nil {
			continue
		}
		switch at := find(w.sub, fl.name); {
		case at < 0:
			add[n] = fl
			n++
		case j == 0 && forceA, isNull(w.sub[at].val):
			w.sub[at].repl = fl.val
		}
	}
	start := len(w.vals)
	w.vals = writeObject(w.vals, w.sub, add[:n])
	w.ctx[i].repl = w.vals[start:]
}

// uaInfo is the parsed user agent ua, from a one-entry memo (a batch's
// events mostly share their agent) or the server's cache.
func (w *work) uaInfo(c *uaCache, ua []byte) *uaInfo {
	if w.lastInfo != nil && bytes.Equal(w.lastUA, ua) {
		return w.lastInfo
	}
	u := c.lookup(ua)
	w.lastUA, w.lastInfo = ua, u
	return u
}

// parseTime reads a timestamp as the schema does: an RFC 3339 string or
// integral Unix milliseconds.
func parseTime(v []byte) (time.Time, bool) {
	switch {
	case isString(v):
		s, _ := stringOf(v)
		t, err := time.Parse(time.RFC3339Nano, string(s))
		return t, err == nil
	case isNumber(v):
		ms, err := strconv.ParseInt(string(v), 10, 64)
		if err != nil {
			return time.Time{}, false
		}
		return time.UnixMilli(ms), true
	}
	return time.Time{}, false
}

func formatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }
