package admin

import (
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
)

// Access is who may use an admin endpoint (docs/security.md). On a
// loopback address everything is open, as before: only local users reach
// it. On any other address every path needs "Authorization: Bearer
// <Token>", except the probes (/healthz, /readyz: an orchestrator's health
// checks, which reveal nothing) and /metrics when MetricsOpen, for a
// Prometheus that scrapes without credentials.
type Access struct {
	Token       string
	MetricsOpen bool
}

// ReadToken is the token of admin.token or, when that is empty, the first
// line of admin.token.file (a mounted secret).
func ReadToken(token, file string) (string, error) {
	if token != "" || file == "" {
		return strings.TrimSpace(token), nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("admin.token.file: %w", err)
	}
	t, _, _ := strings.Cut(string(data), "\n")
	if t = strings.TrimSpace(t); t == "" {
		return "", fmt.Errorf("admin.token.file %s is empty", file)
	}
	return t, nil
}

// openPaths never need the token.
var openPaths = map[string]bool{"/healthz": true, "/readyz": true}

// Guard wraps h, served on a listener at addr, with a's rules. The token
// is never logged; a refusal says how to get in without echoing what was
// sent.
func Guard(h http.Handler, addr net.Addr, a Access, logger *slog.Logger) http.Handler {
	if isLoopback(addr) {
		return h
	}
	if a.Token == "" {
		logger.Warn("admin endpoint on a non-loopback address without admin.token: only /healthz, /readyz"+
			map[bool]string{true: " and /metrics", false: ""}[a.MetricsOpen]+" answer; set admin.token (or admin.token.file) to use the others",
			"addr", addr.String())
	}
	want := []byte("Bearer " + a.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if openPaths[r.URL.Path] || (a.MetricsOpen && r.URL.Path == "/metrics") {
			h.ServeHTTP(w, r)
			return
		}
		if a.Token == "" {
			http.Error(w, "this admin endpoint listens on "+addr.String()+", not on loopback: it needs admin.token (or admin.token.file) set, and the token sent as Authorization: Bearer <token>", http.StatusForbidden)
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="tributary admin"`)
			http.Error(w, "this admin endpoint needs Authorization: Bearer <admin.token>", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// WithAccess guards the endpoint with a (Guard).
func WithAccess(a Access) Option {
	return func(o *options) { o.access = &a }
}
