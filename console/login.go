package console

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Per-user login: with Config.Login, every page and action runs as the
// person signed in, through a Kafka client of their own authenticated with
// their SASL credentials, so the broker's ACLs decide for each person as
// they do for any other client. The credentials live only inside that
// client, in this process's memory, for the session's life: never in a
// page, a cookie or a log line. The cookie holds a random session id.

// Login configures per-user login.
type Login struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism string
	// MaxSessions bounds the signed-in sessions (each holds a Kafka
	// client and its connections); DefaultMaxSessions when 0.
	MaxSessions int
	// Idle ends a session unused this long; DefaultSessionIdle when 0.
	Idle time.Duration
	// MaxAge ends a session this long after sign-in whatever its use;
	// DefaultSessionMaxAge when 0.
	MaxAge time.Duration
	// MaxPerUser bounds one person's sessions, so that one user cannot
	// take every slot: signing in once more ends their oldest.
	// DefaultSessionsPerUser when 0.
	MaxPerUser int
}

const (
	DefaultMaxSessions     = 64
	DefaultSessionIdle     = 30 * time.Minute
	DefaultSessionMaxAge   = 12 * time.Hour
	DefaultSessionsPerUser = 3
	sessionCookie          = "tributary_session"
	// loginTimeout bounds the broker round trip that checks credentials.
	loginTimeout = 10 * time.Second
)

// mechanism builds the SASL mechanism of a user's credentials.
func (l *Login) mechanism(user, pass string) (sasl.Mechanism, error) {
	switch strings.ToUpper(l.Mechanism) {
	case "PLAIN":
		return plain.Auth{User: user, Pass: pass}.AsMechanism(), nil
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: pass}.AsSha256Mechanism(), nil
	case "SCRAM-SHA-512", "":
		return scram.Auth{User: user, Pass: pass}.AsSha512Mechanism(), nil
	}
	return nil, fmt.Errorf("login mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", l.Mechanism)
}

type session struct {
	user string
	cl   *kgo.Client
	adm  *kadm.Client
	mech sasl.Mechanism // for the browse consumers of this user
	// browsing holds this session's one browse (browseslots.go).
	browsing chan struct{}
	created  time.Time
	used     time.Time
}

type sessions struct {
	cfg Login
	mu  sync.Mutex
	m   map[string]*session
	// logins bounds the credential checks running at once: each is a
	// broker round trip a stranger can ask for.
	logins chan struct{}
	limits *loginLimits
	// stop ends the reaper, which closes expired sessions' clients (their
	// connections and the passwords inside them) without waiting for
	// someone to present the session again.
	stop chan struct{}
	done chan struct{}
}

func newSessions(cfg Login) (*sessions, error) {
	if _, err := cfg.mechanism("x", "x"); err != nil {
		return nil, err
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.Idle <= 0 {
		cfg.Idle = DefaultSessionIdle
	}
	if cfg.MaxAge <= 0 {
		cfg.MaxAge = DefaultSessionMaxAge
	}
	if cfg.MaxPerUser <= 0 {
		cfg.MaxPerUser = DefaultSessionsPerUser
	}
	ss := &sessions{cfg: cfg, m: map[string]*session{}, logins: make(chan struct{}, 4), limits: newLoginLimits(), stop: make(chan struct{}), done: make(chan struct{})}
	go ss.reap(min(time.Minute, cfg.Idle/2))
	return ss, nil
}

func (ss *sessions) reap(every time.Duration) {
	defer close(ss.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ss.stop:
			return
		case <-t.C:
			ss.mu.Lock()
			ss.dropExpiredLocked(time.Now())
			ss.mu.Unlock()
		}
	}
}

// dropExpiredLocked ends the expired sessions; ss.mu is held.
func (ss *sessions) dropExpiredLocked(now time.Time) {
	for k, o := range ss.m {
		if ss.expired(o, now) {
			delete(ss.m, k)
			go o.cl.Close()
		}
	}
}

// removeUser ends every session of user: their credential changed, so
// the clients authenticated with the old one must go (review 7).
func (ss *sessions) removeUser(user string) int {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	n := 0
	for k, o := range ss.m {
		if o.user == user {
			delete(ss.m, k)
			go o.cl.Close()
			n++
		}
	}
	return n
}

func (ss *sessions) expired(s *session, now time.Time) bool {
	return now.Sub(s.used) > ss.cfg.Idle || now.Sub(s.created) > ss.cfg.MaxAge
}

// get is the live session of id, nil if none; using it keeps it alive.
func (ss *sessions) get(id string) *session {
	if id == "" {
		return nil
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	s := ss.m[id]
	if s == nil {
		return nil
	}
	now := time.Now()
	if ss.expired(s, now) {
		delete(ss.m, id)
		go s.cl.Close()
		return nil
	}
	s.used = now
	return s
}

// add stores a new session, dropping expired ones first, and the one the
// signing-in browser held (replaced, its cookie's id), and the person's
// oldest beyond MaxPerUser (review 6). Full, it refuses rather than
// pushing out someone else signed in.
func (ss *sessions) add(s *session, replaced string) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	id := base64.RawURLEncoding.EncodeToString(b[:])
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.dropExpiredLocked(time.Now())
	if o := ss.m[replaced]; replaced != "" && o != nil {
		delete(ss.m, replaced)
		go o.cl.Close()
	}
	for {
		var oldestID string
		var oldest *session
		n := 0
		for k, o := range ss.m {
			if o.user != s.user {
				continue
			}
			n++
			if oldest == nil || o.created.Before(oldest.created) {
				oldestID, oldest = k, o
			}
		}
		if n < ss.cfg.MaxPerUser {
			break
		}
		delete(ss.m, oldestID)
		go oldest.cl.Close()
	}
	if len(ss.m) >= ss.cfg.MaxSessions {
		return "", fmt.Errorf("%d people are signed in, the most this console holds (--login-max-sessions): try again when a session ends", len(ss.m))
	}
	ss.m[id] = s
	return id, nil
}

func (ss *sessions) remove(id string) {
	ss.mu.Lock()
	s := ss.m[id]
	delete(ss.m, id)
	ss.mu.Unlock()
	if s != nil {
		s.cl.Close()
	}
}

func (ss *sessions) closeAll() {
	select {
	case <-ss.stop:
	default:
		close(ss.stop)
		<-ss.done
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for k, s := range ss.m {
		delete(ss.m, k)
		s.cl.Close()
	}
}

type sessionKey struct{}

// admin is the Kafka admin client of a request: the signed-in user's, or
// the console's own.
func (s *Server) admin(ctx context.Context) *kadm.Client {
	if ss, ok := ctx.Value(sessionKey{}).(*session); ok {
		return ss.adm
	}
	return s.adm
}

// client is the Kafka client of a request, as admin.
func (s *Server) client(ctx context.Context) *kgo.Client {
	if ss, ok := ctx.Value(sessionKey{}).(*session); ok {
		return ss.cl
	}
	return s.cl
}

// browseOpts are the security options of a request's own short-lived
// clients (the browse consumers): a signed-in person's transport and SASL
// mechanism, never the console's credentials; else the console's.
func (s *Server) browseOpts(ctx context.Context) []kgo.Opt {
	if ss, ok := ctx.Value(sessionKey{}).(*session); ok {
		return append(append([]kgo.Opt{}, s.transport...), kgo.SASL(ss.mech))
	}
	return s.cfg.ClientOpts
}

func userOf(ctx context.Context) string {
	if ss, ok := ctx.Value(sessionKey{}).(*session); ok {
		return ss.user
	}
	return ""
}

// withSession finds the request's session; without one, a page asks to
// sign in and a change is refused. It reports whether to go on.
func (s *Server) withSession(w http.ResponseWriter, r *http.Request) (*http.Request, bool) {
	p := r.URL.Path
	if p == "/login" || strings.HasPrefix(p, "/static/") || p == "/favicon.ico" {
		return r, true
	}
	var id string
	if c, err := r.Cookie(sessionCookie); err == nil {
		id = c.Value
	}
	ss := s.sessions.get(id)
	if ss == nil {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
		} else {
			s.refuse(w, r, http.StatusUnauthorized, "sign in first: this console acts as the person signed in")
		}
		return r, false
	}
	return r.WithContext(context.WithValue(r.Context(), sessionKey{}, ss)), true
}

type loginData struct {
	User, Next, Mechanism string
}

// safeNext keeps a post-login redirect on this console: a path, never
// //host, /\host or a scheme. Browsers drop tabs and newlines from a URL,
// so "/\t/evil.example" would become //evil.example: any control byte or
// space refuses the whole value (review 4).
func safeNext(next string) string {
	for i := 0; i < len(next); i++ {
		if next[i] < 0x21 || next[i] == 0x7f || next[i] == '\\' {
			return "/"
		}
	}
	if !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") {
		return "/"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || !strings.HasPrefix(u.Path, "/") || strings.HasPrefix(u.Path, "//") {
		return "/"
	}
	return u.RequestURI()
}

func (s *Server) loginPage(w http.ResponseWriter, r *http.Request) {
	if s.sessions == nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	s.render(w, r, http.StatusOK, "login", page{Title: "Sign in", Data: loginData{Next: safeNext(r.URL.Query().Get("next")), Mechanism: s.sessions.cfg.Mechanism}})
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if s.sessions == nil {
		s.refuse(w, r, http.StatusNotFound, "this console has no login (--login)")
		return
	}
	user, pass := r.PostForm.Get("user"), r.PostForm.Get("password")
	next := safeNext(r.PostForm.Get("next"))
	d := loginData{User: user, Next: next, Mechanism: s.sessions.cfg.Mechanism}
	again := func(status int, why string) {
		s.render(w, r, status, "login", page{Title: "Sign in", Error: why, Data: d})
	}
	if user == "" || pass == "" {
		again(http.StatusBadRequest, "give a user name and a password")
		return
	}
	addr := remoteHost(r.RemoteAddr)
	if why := s.sessions.limits.refusal(user, addr); why != "" {
		s.log.Info("console: sign-in refused", "user", clip(user, logNameBytes), "remote", r.RemoteAddr, "why", "rate")
		again(http.StatusTooManyRequests, why)
		return
	}
	queue := time.NewTimer(loginQueue)
	defer queue.Stop()
	select {
	case s.sessions.logins <- struct{}{}:
		defer func() { <-s.sessions.logins }()
	case <-queue.C:
		again(http.StatusServiceUnavailable, "too many sign-ins at once: try again")
		return
	case <-r.Context().Done():
		return
	}
	mech, err := s.sessions.cfg.mechanism(user, pass)
	if err != nil {
		again(http.StatusInternalServerError, err.Error())
		return
	}
	cl, err := kgo.NewClient(append(s.userOpts(), kgo.SASL(mech))...)
	if err != nil {
		again(http.StatusInternalServerError, "a Kafka client: "+err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), loginTimeout)
	defer cancel()
	// The check: one request the broker answers only once SASL succeeded.
	adm := kadm.NewClient(cl)
	if err := loginErr(ctx, adm); err != nil {
		cl.Close()
		s.sessions.limits.failed(user, addr)
		s.log.Info("console: sign-in refused", "user", clip(user, logNameBytes), "remote", r.RemoteAddr)
		again(http.StatusUnauthorized, "sign-in refused: "+err.Error())
		return
	}
	var replaced string
	if c, err := r.Cookie(sessionCookie); err == nil {
		replaced = c.Value
	}
	id, err := s.sessions.add(&session{user: user, cl: cl, adm: adm, mech: mech, browsing: make(chan struct{}, 1), created: time.Now(), used: time.Now()}, replaced)
	if err != nil {
		cl.Close()
		again(http.StatusServiceUnavailable, err.Error())
		return
	}
	// Lax, not Strict: a link to the console from mail or an alert is a
	// cross-site navigation, and Strict would send the person to sign in
	// again each time. Changes are POSTs, which Lax does not carry across
	// sites, and they need the CSRF token besides.
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: s.secure(r), MaxAge: int(s.sessions.cfg.MaxAge / time.Second)})
	s.log.Info("console: signed in", "user", clip(user, logNameBytes), "remote", r.RemoteAddr)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// loginErr asks the broker for its metadata as the new user: with bad
// credentials the SASL handshake fails and kgo says so.
func loginErr(ctx context.Context, adm *kadm.Client) error {
	_, err := adm.BrokerMetadata(ctx)
	if err == nil {
		return nil
	}
	var se *kgo.ErrFirstReadEOF
	if errors.As(err, &se) {
		return errors.New("the broker closed the connection (a listener without SASL, or TLS needed?)")
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return errors.New("no answer from the broker in time")
	}
	return err
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil && s.sessions != nil {
		s.sessions.remove(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}
