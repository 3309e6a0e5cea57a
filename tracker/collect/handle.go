package collect

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"unicode/utf8"

	"github.com/tributary-io/tributary/formats/decode"
	"github.com/tributary-io/tributary/tracker"
)

// result of handing a request's events to the Sink.
type result struct {
	accepted, duplicates, private int
	rejected                      []Rejection // by index
	err                           error       // from the Sink: nothing was accepted
}

// handle prepares, validates, dedups and submits the events of w.elems (a
// nil one was rejected before, and is in w.rejected).
func (s *Server) handle(ctx context.Context, src *source, q *request, w *work, typ string) result {
	var res result
	src.received.Add(float64(len(w.elems)))
	for i, raw := range w.elems {
		if raw == nil {
			continue
		}
		var top []member
		if i < len(w.spans) {
			top = w.members[w.spans[i][0]:w.spans[i][1]:w.spans[i][1]]
		}
		rej, private := s.prepare(w, src, q, i, raw, top, typ)
		switch {
		case private:
			res.private++
		case rej != nil:
			rej.Index = i
			w.rejected = append(w.rejected, *rej)
		}
	}
	s.validate(w, src)
	if err := s.checkRegistry(ctx, w, src); err != nil {
		s.m.rejected.WithLabelValues(src.Name, ReasonUnavailable).Add(float64(len(w.elems)))
		s.cfg.Logger.Warn("schema registry unavailable, strict source refused events", "source", src.Name, "err", err)
		res.err = err
		return res
	}
	keys := s.dedupe(w, src, q, &res)

	slices.SortFunc(w.rejected, func(a, b Rejection) int { return a.Index - b.Index })
	res.rejected = w.rejected
	var invalid, bad []tracker.Event
	for _, r := range res.rejected {
		s.m.rejected.WithLabelValues(src.Name, r.Code).Inc()
		switch {
		case src.BadTopic != "" && (r.Code == ReasonSchema || r.Code == ReasonRegistry):
			bad = append(bad, s.badEvent(src, q, w.elems[r.Index], &r))
		case src.InvalidTopic != "" && r.Code == ReasonSchema:
			invalid = append(invalid, tracker.Event{Topic: src.InvalidTopic, Value: bytes.Clone(w.elems[r.Index]), Timestamp: q.received.UnixMilli(), MessageID: r.MessageID})
		}
	}
	if res.private > 0 {
		s.m.privacy.WithLabelValues(src.Name).Add(float64(res.private))
	}
	if res.duplicates > 0 {
		s.m.duplicates.WithLabelValues(src.Name).Add(float64(res.duplicates))
	}
	// Bad events go with the valid ones, in one Submit: they are kept as
	// surely as the valid ones, and a 503 refuses both.
	if evs := s.events(w, src, q); len(evs)+len(bad) > 0 {
		if err := s.sink.Submit(ctx, append(evs, bad...)); err != nil {
			s.m.rejected.WithLabelValues(src.Name, ReasonUnavailable).Add(float64(len(evs) + len(bad)))
			s.cfg.Logger.Warn("sink refused events", "source", src.Name, "events", len(evs), "err", err)
			if ctx.Err() == nil { // else the sender left: no news of the Sink
				s.refused.note(s.cfg.Now(), err)
			}
			res.err = err
			return res
		}
		s.refused.clear()
		if s.dedup != nil {
			s.dedup.mark(keys, q.received)
		}
		res.accepted = len(evs)
		src.accepted.Add(float64(len(evs)))
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

// validate checks the prepared events against the source's schema, all in
// one call to the decoder.
func (s *Server) validate(w *work, src *source) {
	if len(w.ready) == 0 {
		return
	}
	w.recs = w.recs[:0]
	for k := range w.ready {
		r := &w.ready[k]
		w.recs = append(w.recs, decode.Record{Offset: int64(k), Value: w.out[r.valStart:r.key]})
	}
	for _, e := range src.check(w.recs) {
		r := &w.ready[e.Offset]
		r.invalid = true
		rj := Rejection{Index: r.index, Path: e.Path, Reason: e.Reason, Code: ReasonSchema}
		if r.idIsString {
			rj.MessageID = string(w.ids[r.idStart:r.idEnd])
		}
		w.rejected = append(w.rejected, rj)
	}
}

// dedupe marks the valid events whose messageId was accepted within the
// window, or earlier in the request, and returns the keys of the others to
// mark once the Sink took them. Events without a string messageId (a
// custom schema's) are not deduplicated.
func (s *Server) dedupe(w *work, src *source, q *request, res *result) []dedupKey {
	if s.dedup == nil {
		return nil
	}
	if w.inBatch == nil {
		w.inBatch = map[dedupKey]struct{}{}
	}
	clear(w.inBatch)
	keys, idx := w.keys[:0], w.idx[:0]
	for k := range w.ready {
		r := &w.ready[k]
		if r.invalid || !r.idIsString {
			continue
		}
		key := src.seeds.key(w.ids[r.idStart:r.idEnd])
		if _, ok := w.inBatch[key]; ok {
			r.dup = true
			res.duplicates++
			continue
		}
		w.inBatch[key] = struct{}{}
		keys = append(keys, key)
		idx = append(idx, k)
	}
	w.seen = s.dedup.seenAll(keys, q.received, w.seen[:0])
	seen := w.seen
	w.keys, w.idx = keys, idx
	out := keys[:0]
	for j, k := range idx {
		if seen[j] {
			w.ready[k].dup = true
			res.duplicates++
			continue
		}
		out = append(out, keys[j])
	}
	return out
}

// events are the accepted events, their bytes copied into one allocation
// that the Sink may keep: w is reused by the next request.
func (s *Server) events(w *work, src *source, q *request) []tracker.Event {
	n, size := 0, 0
	for k := range w.ready {
		if r := &w.ready[k]; !r.invalid && !r.dup {
			n++
			size += r.end - r.valStart
		}
	}
	if n == 0 {
		return nil
	}
	slab := make([]byte, 0, size)
	ids := string(w.ids)
	evs := make([]tracker.Event, 0, n)
	ts := q.received.UnixMilli()
	for k := range w.ready {
		r := &w.ready[k]
		if r.invalid || r.dup {
			continue
		}
		start := len(slab)
		slab = append(slab, w.out[r.valStart:r.end]...)
		mid := start + r.key - r.valStart
		e := tracker.Event{Topic: src.Topic, Key: slab[mid:len(slab):len(slab)], Value: slab[start:mid:mid], Timestamp: ts}
		if r.idIsString {
			e.MessageID = ids[r.idStart:r.idEnd]
		}
		evs = append(evs, e)
	}
	return evs
}

func (s *Server) single(w http.ResponseWriter, r *http.Request, typ string) {
	wk := getWork()
	defer putWork(wk)
	label := s.labelOf(r)
	if code, msg := readBody(w, r, &wk.body, s.cfg.MaxEventBytes); code != 0 {
		s.m.received.WithLabelValues(label).Inc()
		s.m.rejected.WithLabelValues(label, reasonOfCode(code)).Inc()
		writeError(w, code, msg, "", reasonOfCode(code))
		return
	}
	body := wk.body.Bytes()
	key, canon, err := parseSingle(wk, body)
	if err != nil {
		s.m.received.WithLabelValues(label).Inc()
		s.m.rejected.WithLabelValues(label, ReasonMalformed).Inc()
		writeError(w, http.StatusBadRequest, "malformed JSON: "+err.Error(), "", ReasonMalformed)
		return
	}
	if k := basicKey(r); k != "" {
		key = k
	}
	src := s.sourceOf(w, key, 1)
	if src == nil || !s.checkOrigin(w, r, src, 1) {
		return
	}
	q := s.requestOf(r, wk, "")
	q.canon = canon
	wk.elems = append(wk.elems, body)
	wk.members = append(wk.members, wk.top...)
	wk.spans = append(wk.spans, [2]int{0, len(wk.members)})
	res := s.handle(r.Context(), src, q, wk, typ)
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
		writeRaw(w, http.StatusOK, answerOK)
	}
}

// parseSingle checks that body is one JSON object and returns its
// writeKey, if a string; canon says whether the event may need canonical.
func parseSingle(wk *work, body []byte) (key string, canon bool, err error) {
	sc := scanner{b: body}
	i := skipWS(body, 0)
	if i == len(body) {
		return "", false, errEOF
	}
	var end int
	if body[i] == '{' {
		wk.top = wk.top[:0]
		end, err = sc.object(i, 1, &wk.top)
	} else {
		end, err = sc.value(i, 0)
		if err == nil {
			err = fmt.Errorf("%w: %s", errNotObject, kindOf(body[i:end]))
		}
	}
	if err != nil {
		return "", false, err
	}
	if skipWS(body, end) != len(body) {
		return "", false, errors.New("data after the JSON object")
	}
	dedupe(wk.top)
	if j := find(wk.top, "writeKey"); j >= 0 {
		if k, ok := stringOf(wk.top[j].val); ok {
			key = string(k)
		}
	}
	return key, sc.surrogate || !utf8.Valid(body), nil
}

var errEOF = errors.New("EOF")

func (s *Server) batch(w http.ResponseWriter, r *http.Request) {
	wk := getWork()
	defer putWork(wk)
	label := s.labelOf(r)
	if code, msg := readBody(w, r, &wk.body, s.cfg.MaxBatchBytes); code != 0 {
		s.m.received.WithLabelValues(label).Inc()
		s.m.rejected.WithLabelValues(label, reasonOfCode(code)).Inc()
		writeError(w, code, msg, "", reasonOfCode(code))
		return
	}
	env, err := parseBatch(wk, wk.body.Bytes())
	if err != nil {
		s.m.received.WithLabelValues(label).Inc()
		s.m.rejected.WithLabelValues(label, ReasonMalformed).Inc()
		writeError(w, http.StatusBadRequest, "malformed JSON: "+err.Error(), "batch", ReasonMalformed)
		return
	}
	key := basicKey(r)
	if key == "" {
		key = env.writeKey
	}
	n := len(wk.elems)
	src := s.sourceOf(w, key, n)
	if src == nil || !s.checkOrigin(w, r, src, n) {
		return
	}
	q := s.requestOf(r, wk, "")
	q.canon = env.canon
	if env.sentAt != nil && !isNull(env.sentAt) {
		q.sentAt = env.sentAt
		if env.canon && needsCanonical(q.sentAt) {
			if c, err := canonical(q.sentAt); err == nil {
				q.sentAt = c
			}
		}
		q.sentTime, q.sentOK = parseTime(q.sentAt)
	}
	if c := env.context; isObject(c) {
		if env.canon && needsCanonical(c) {
			if cc, err := canonical(c); err == nil {
				c = cc
			}
		}
		sc := scanner{b: c}
		sc.object(0, 1, &q.context)
		dedupe(q.context)
	}
	for i, raw := range wk.elems {
		switch {
		case len(raw) > s.cfg.MaxEventBytes:
			wk.rejected = append(wk.rejected, Rejection{Index: i, Reason: fmt.Sprintf("event larger than the limit of %d bytes", s.cfg.MaxEventBytes), Code: ReasonTooLarge})
			wk.elems[i] = nil
		case !isObject(raw):
			wk.rejected = append(wk.rejected, Rejection{Index: i, Reason: "not a JSON object: " + kindOf(raw), Code: ReasonMalformed})
			wk.elems[i] = nil
		}
	}
	res := s.handle(r.Context(), src, q, wk, "")
	if res.err != nil {
		s.unavailable(w, res.err)
		return
	}
	ans := batchAnswer{Success: true, Accepted: res.accepted, Duplicates: res.duplicates, Rejected: res.rejected}
	code := http.StatusOK
	if len(res.rejected) > 0 && len(res.rejected) == n {
		ans.Success = false
		ans.Error = "every event of the batch was rejected"
		code = http.StatusBadRequest
	}
	writeJSON(w, code, ans)
}

// envelope is what a batch body says besides its events.
type envelope struct {
	writeKey        string
	sentAt, context []byte // as sent
	canon           bool   // some event may need canonical
}

// parseBatch checks a batch body and puts its events, as sent, in
// wk.elems. As encoding/json did when it decoded the body into a struct,
// field names match case-insensitively, the last of a repeated field wins
// and what follows the body's JSON value is ignored.
func parseBatch(wk *work, body []byte) (env envelope, err error) {
	sc := scanner{b: body}
	i := skipWS(body, 0)
	if i == len(body) {
		return env, errEOF
	}
	if body[i] != '{' {
		end, err := sc.value(i, 0)
		switch {
		case err != nil:
			return env, err
		case isNull(body[i:end]):
			return env, errNoBatch
		}
		return env, fmt.Errorf("a batch body is a JSON object, not %s", kindOf(body[i:end]))
	}
	start := i
	found := false
	i = skipWS(body, i+1)
	for i < len(body) && body[i] != '}' {
		if body[i] != '"' {
			return env, sc.unexpected(i, "looking for beginning of object key string")
		}
		ks := i
		if i, err = sc.str(i); err != nil {
			return env, err
		}
		k := unquoteKey(body[ks:i])
		if i = skipWS(body, i); i >= len(body) || body[i] != ':' {
			return env, sc.unexpected(i, "after object key")
		}
		i = skipWS(body, i+1)
		vs := i
		isBatch := bytes.EqualFold(k, []byte("batch"))
		if isBatch && i < len(body) && body[i] == '[' {
			i, err = sc.events(i, wk)
		} else {
			i, err = sc.value(i, 1)
		}
		if err != nil {
			return env, err
		}
		v := body[vs:i]
		switch {
		case isBatch:
			found = v[0] == '['
			if !found && !isNull(v) {
				return env, fmt.Errorf(`"batch" is an array of events, not %s`, kindOf(v))
			}
		case bytes.EqualFold(k, []byte("writeKey")):
			if s, ok := stringOf(v); ok {
				env.writeKey = string(s)
			} else if !isNull(v) {
				return env, fmt.Errorf(`"writeKey" is a string, not %s`, kindOf(v))
			}
		case bytes.EqualFold(k, []byte("sentAt")):
			env.sentAt = v
		case bytes.EqualFold(k, []byte("context")):
			env.context = v
		}
		if i = skipWS(body, i); i < len(body) && body[i] == ',' {
			i = skipWS(body, i+1)
			if i < len(body) && body[i] == '}' {
				return env, sc.unexpected(i, "looking for beginning of object key string")
			}
			continue
		}
		if i >= len(body) || body[i] != '}' {
			return env, sc.unexpected(i, "after object key:value pair")
		}
	}
	if i >= len(body) {
		return env, sc.unexpected(i, "")
	}
	if !found {
		return env, errNoBatch
	}
	env.canon = sc.surrogate || !utf8.Valid(body[start:i+1])
	return env, nil
}

var errNoBatch = errors.New(`no "batch" array`)

// events checks the batch array at b[i] ('[') and puts its elements in
// wk.elems and the top-level members of those that are objects in
// wk.members, so that preparing them need not scan them again.
func (s *scanner) events(i int, wk *work) (int, error) {
	wk.elems, wk.members, wk.spans = wk.elems[:0], wk.members[:0], wk.spans[:0]
	b := s.b
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, nil
	}
	for {
		vs, from := i, len(wk.members)
		var err error
		if i < len(b) && b[i] == '{' {
			i, err = s.object(i, 3, &wk.members) // the body is depth 1, the array 2
		} else {
			i, err = s.value(i, 2)
		}
		if err != nil {
			return i, err
		}
		wk.elems = append(wk.elems, b[vs:i])
		wk.spans = append(wk.spans, [2]int{from, len(wk.members)})
		i = skipWS(b, i)
		if i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == ']' {
			return i + 1, nil
		}
		return i, s.unexpected(i, "after array element")
	}
}
