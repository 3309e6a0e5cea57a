package collect

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/tributary-io/tributary/tracker/deliver"
	"github.com/tributary-io/tributary/tracker/spool"
)

// errorBody is the answer to a refused request.
type errorBody struct {
	Success bool   `json:"success"`
	Error   string `json:"error"`
	Path    string `json:"path,omitempty"`
	Code    string `json:"code,omitempty"`
}

// batchAnswer is the answer to a batch; its fields are in the order
// encoding/json gave them when it was a map.
type batchAnswer struct {
	Accepted   int         `json:"accepted"`
	Duplicates int         `json:"duplicates,omitempty"`
	Error      string      `json:"error,omitempty"`
	Rejected   []Rejection `json:"rejected,omitempty"`
	Success    bool        `json:"success"`
}

var answerOK = []byte("{\"success\":true}\n")

func writeError(w http.ResponseWriter, code int, msg, path, reason string) {
	writeJSON(w, code, errorBody{Error: msg, Path: path, Code: reason})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, _ := json.Marshal(v)
	writeRaw(w, code, append(b, '\n'))
}

func writeRaw(w http.ResponseWriter, code int, b []byte) {
	w.Header()["Content-Type"] = contentJSON
	w.WriteHeader(code)
	w.Write(b)
}

var contentJSON = []string{"application/json"}

// unavailable answers 503 with Retry-After: the Sink did not take the
// events. The Retry-After is the error's own (a RetryAfter method), else
// Config.RetryAfter.
func (s *Server) unavailable(w http.ResponseWriter, err error) {
	after := s.cfg.RetryAfter
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) && ra.RetryAfter() > 0 {
		after = ra.RetryAfter()
	}
	w.Header().Set("Retry-After", strconv.Itoa(int((after+time.Second-1)/time.Second)))
	writeError(w, http.StatusServiceUnavailable, "events not accepted, retry later: "+unavailableWhy(err), "", ReasonUnavailable)
}

// unavailableWhy says in words why delivery refused events, for the
// sender's operator reading the 503.
func unavailableWhy(err error) string {
	switch {
	case errors.Is(err, spool.ErrSpoolFull):
		return "the tracker's disk spool is full (the broker is away or slower than the traffic): " + err.Error()
	case errors.Is(err, deliver.ErrNotAcknowledged):
		return "the broker did not acknowledge them (ack=broker): " + err.Error()
	case errors.Is(err, deliver.ErrClosed), errors.Is(err, spool.ErrClosed):
		return "the tracker is shutting down: " + err.Error()
	}
	return err.Error()
}

// refusals remembers the Sink's last refusal for Ready. Every accepted
// request clears it, so it costs an atomic load when all is well.
type refusals struct {
	at  atomic.Int64 // Unix nanoseconds of the last refusal; 0: none since the last success
	err atomic.Pointer[error]
}

func (r *refusals) note(now time.Time, err error) {
	r.err.Store(&err)
	r.at.Store(now.UnixNano())
}

func (r *refusals) clear() {
	if r.at.Load() != 0 {
		r.at.Store(0)
	}
}

// Ready reports why the collector should not be sent traffic now, for
// /readyz: the Sink says it cannot take events (a Sink with a Ready method,
// such as a full spool), or it refused events within the last
// Config.RetryAfter (the time the 503s ask senders to wait). That window
// ends by itself, so that a load balancer that stopped sending to a
// not-ready collector sends again and finds out whether the Sink recovered.
func (s *Server) Ready() error {
	if r, ok := s.sink.(interface{ Ready() error }); ok {
		if err := r.Ready(); err != nil {
			return err
		}
	}
	at := s.refused.at.Load()
	if at == 0 {
		return nil
	}
	if ago := s.cfg.Now().Sub(time.Unix(0, at)); ago < s.cfg.RetryAfter {
		return errors.New("delivery refused events " + ago.Round(time.Millisecond).String() + " ago: " + unavailableWhy(*s.refused.err.Load()))
	}
	return nil
}
