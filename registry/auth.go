package registry

import (
	"crypto/sha256"
	"net/http"
	"sync"
	"time"
)

// Basic auth (Config.Authenticate): the registry asks the caller whether a
// user name and password are good; inside the broker the users are the
// broker's own (its SCRAM credentials and the PLAIN users of its
// listeners, docs/registry.md), so one set of users opens both the Kafka
// listeners and the registry, as Redpanda does.
//
// Checking a SCRAM password derives its key (PBKDF2, 4096 iterations or
// more: milliseconds of CPU), which a client that sends its credentials
// on every request would pay each time. Credentials that passed are
// remembered for authTTL by their SHA-256 (the password is not kept), so
// a changed or deleted user is refused within authTTL. Failures are never
// cached: each costs the check, which bounds a guesser's rate to the
// CPU it makes us spend, as a Kafka listener's SCRAM exchange does.

const (
	authTTL     = time.Minute
	authMaxKept = 10_000
)

type authCache struct {
	mu   sync.Mutex
	seen map[[32]byte]time.Time // mu must be held; when each passed
}

func (c *authCache) passed(key [32]byte, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.seen[key]
	return ok && now.Sub(at) < authTTL
}

func (c *authCache) note(key [32]byte, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil || len(c.seen) >= authMaxKept {
		c.seen = map[[32]byte]time.Time{}
	}
	c.seen[key] = now
}

// authorized answers 401 (Confluent's body, and a WWW-Authenticate
// challenge) and returns false unless the request carries credentials
// Config.Authenticate accepts.
func (r *Registry) authorized(w http.ResponseWriter, req *http.Request) bool {
	if r.cfg.Authenticate == nil {
		return true
	}
	user, pass, ok := req.BasicAuth()
	if ok {
		key := sha256.Sum256([]byte(user + "\x00" + pass))
		now := time.Now()
		if r.passed.passed(key, now) {
			return true
		}
		if r.cfg.Authenticate(user, pass) {
			r.passed.note(key, now)
			return true
		}
	}
	w.Header().Set("WWW-Authenticate", `Basic realm="tributary schema registry"`)
	writeJSON(w, http.StatusUnauthorized, errf(401, "Unauthorized"))
	return false
}
