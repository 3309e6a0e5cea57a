package registry

import (
	"crypto/sha256"
	"encoding/binary"
	"net"
	"net/http"
	"runtime"
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
// more: milliseconds of CPU), and the standalone registry's check is a
// SASL login to the cluster, so checks are what an unauthenticated
// client can make us spend. Hence:
//   - credentials that passed are remembered for authTTL by their SHA-256
//     (the password is not kept), so a client that sends them on every
//     request pays once; a changed or deleted user is refused within
//     authTTL;
//   - credentials that failed are remembered for failTTL, so repeating a
//     wrong password costs nothing;
//   - at most authParallel checks run at once, whatever the number of
//     clients;
//   - a client address, or a user name, with maxFailures failed checks
//     within failWindow gets 429 (42901) without a check until the window
//     has passed. Credentials remembered as good still pass, so guessing a
//     user's password does not lock out a client that already logged in.

const (
	authTTL     = time.Minute
	failTTL     = 10 * time.Second
	failWindow  = time.Minute
	maxFailures = 20
	authMaxKept = 10_000
)

// authParallel bounds concurrent password checks: half the CPUs, so that
// a flood of bad logins leaves the broker the other half.
var authParallel = max(1, runtime.GOMAXPROCS(0)/2)

type authCache struct {
	mu       sync.Mutex
	seen     map[[32]byte]time.Time // mu must be held; when each passed
	failed   map[[32]byte]time.Time // mu must be held; when each failed
	failures map[string]*failCount  // mu must be held; by "ip:"+addr and "user:"+name
	sem      chan struct{}          // authParallel checks at a time
}

type failCount struct {
	since time.Time
	n     int
}

// credKey is the cache key of a user name and password: length-prefixed,
// so that no two pairs give the same bytes (a NUL in a user name).
func credKey(user, pass string) [32]byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(user)))
	b = append(b, user...)
	return sha256.Sum256(append(b, pass...))
}

// verdict is what the cache knows of key: passed, failed, or neither.
func (c *authCache) verdict(key [32]byte, now time.Time) (passed, failed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at, ok := c.seen[key]; ok && now.Sub(at) < authTTL {
		return true, false
	}
	at, ok := c.failed[key]
	return false, ok && now.Sub(at) < failTTL
}

func (c *authCache) note(key [32]byte, ok bool, now time.Time, who ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := &c.seen
	if !ok {
		m = &c.failed
		if c.failures == nil || len(c.failures) >= authMaxKept {
			c.failures = map[string]*failCount{}
		}
		for _, w := range who {
			f := c.failures[w]
			if f == nil || now.Sub(f.since) >= failWindow {
				f = &failCount{since: now}
				c.failures[w] = f
			}
			f.n++
		}
	}
	if *m == nil || len(*m) >= authMaxKept {
		*m = map[[32]byte]time.Time{}
	}
	(*m)[key] = now
}

// throttled says whether any of who failed maxFailures times within
// failWindow.
func (c *authCache) throttled(now time.Time, who ...string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range who {
		if f := c.failures[w]; f != nil && f.n >= maxFailures && now.Sub(f.since) < failWindow {
			return true
		}
	}
	return false
}

// clientHost is the request's remote IP address.
func clientHost(req *http.Request) string {
	h, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		return req.RemoteAddr
	}
	return h
}

// authorized answers 401 (Confluent's body, and a WWW-Authenticate
// challenge) or 429 and returns false unless the request carries
// credentials Config.Authenticate accepts.
func (r *Registry) authorized(w http.ResponseWriter, req *http.Request) bool {
	if r.cfg.Authenticate == nil {
		return true
	}
	user, pass, ok := req.BasicAuth()
	if ok {
		key := credKey(user, pass)
		now := time.Now()
		passed, failed := r.passed.verdict(key, now)
		if passed {
			return true
		}
		who := []string{"ip:" + clientHost(req), "user:" + user}
		if !failed && r.passed.throttled(now, who...) {
			w.Header().Set("Retry-After", "60")
			writeJSON(w, http.StatusTooManyRequests, errf(42901, "Too many failed logins from this address or for this user: try again later"))
			return false
		}
		if !failed {
			select {
			case r.passed.sem <- struct{}{}:
			case <-req.Context().Done():
				return false
			}
			ok := r.cfg.Authenticate(user, pass)
			<-r.passed.sem
			r.passed.note(key, ok, now, who...)
			if ok {
				return true
			}
		}
	}
	w.Header().Set("WWW-Authenticate", `Basic realm="tributary schema registry"`)
	writeJSON(w, http.StatusUnauthorized, errf(401, "Unauthorized"))
	return false
}

// mayWrite is a 403 (40301) unless Config.MayWrite lets the request's
// user write.
func (r *Registry) mayWrite(req *http.Request) error {
	if r.cfg.MayWrite == nil {
		return nil
	}
	user, _, _ := req.BasicAuth()
	if r.cfg.Authenticate == nil {
		user = "" // not authenticated: anonymous, whatever it claims
	}
	if r.cfg.MayWrite(user, clientHost(req)) {
		return nil
	}
	who := "User:ANONYMOUS"
	if user != "" {
		who = "User:" + user
	}
	return errf(40301, "%s is not authorized to %s %s: registry writes need ALTER on the cluster or WRITE on the topic %s (docs/registry.md)",
		who, req.Method, req.URL.Path, r.cfg.Topic)
}
