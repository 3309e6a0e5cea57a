package console

import (
	"bytes"
	"context"
	"crypto/hmac"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

//go:embed assets
var assets embed.FS

// Limits of what one request may cost the console and the cluster.
const (
	// MaxBodyBytes bounds a POST body: the largest form is a produced
	// message, and a console is not a bulk loader.
	MaxBodyBytes = 1 << 20
	// MaxBrowse is the most records one browse returns; DefaultBrowse is
	// what a browse without ?limit= returns.
	MaxBrowse     = 500
	DefaultBrowse = 50
	// browseScan bounds how many records a search reads to find its
	// matches, and browseTime how long it may take: a search for a string
	// that is nowhere must still answer.
	browseScan = 100_000
	browseTime = 5 * time.Second
	// requestTimeout bounds the Kafka requests of one page.
	requestTimeout = 15 * time.Second
)

// Config is what a console needs to reach its cluster.
type Config struct {
	// Seeds are the bootstrap brokers, host:port.
	Seeds []string
	// ClientOpts are more kgo options, the client security properties
	// above all (kafkacli.ClientOpts).
	ClientOpts []kgo.Opt
	// ReadOnly refuses every change: POSTs get a 403.
	ReadOnly bool
	// LoopbackOnly refuses requests whose Host is not a loopback name
	// (localhost, 127.0.0.1, [::1]); set it when listening on loopback.
	LoopbackOnly bool
	// AllowedHosts are the names a Host header may carry when the console
	// is not loopback-only; IP addresses and loopback names always pass.
	// A page of another site that rebinds its own name to the console's
	// address sends that name, so it is refused.
	AllowedHosts []string
	// RegistryURL is the schema registry: with it, the Schemas pages
	// show its subjects and the message browser decodes framed values.
	// Credentials in it (http://user:password@host) are sent as basic
	// auth and never shown.
	RegistryURL string
	// JobsURL is the jobs scheduler's API: with it, the Jobs pages.
	JobsURL string
	// SampleEvery is how often the charts' sampler asks the cluster
	// (DefaultSampleEvery when 0); negative turns the sampler off.
	SampleEvery time.Duration
	// TrackerURL is the tracker's admin address (its /metrics): with it,
	// the Pipeline page shows events accepted and rejected per second.
	TrackerURL string
	// LakeURI is a loader target (file:// or hdfs://): with it, the
	// Pipeline page shows load runs, lake partitions and bad records.
	LakeURI string
	// Login, when set, signs each person in with their own SASL
	// credentials (login.go): every page and action then runs as them.
	Login *Login
	// BehindTLSProxy says browsers reach the console over HTTPS through a
	// proxy that terminates TLS: its cookies are then marked Secure, so a
	// browser never sends the session over plain HTTP.
	BehindTLSProxy bool
	// Logger gets one line per change made through the console.
	Logger *slog.Logger
}

// Server is the console, an http.Handler.
type Server struct {
	cfg   Config
	cl    *kgo.Client
	adm   *kadm.Client
	reg   *registry   // nil without Config.RegistryURL
	jobs  *jobsClient // nil without Config.JobsURL
	csrf  *csrf
	pages map[string]*template.Template
	mux   *http.ServeMux
	log   *slog.Logger
	// browsing holds the browses running (browseslots.go).
	browsing chan struct{}
	samp     *sampler      // nil when Config.SampleEvery < 0
	tracker  *trackerStats // nil without Config.TrackerURL
	lake     *lake         // nil without Config.LakeURI
	sessions *sessions     // nil without Config.Login
	features features
	// transport are Config.ClientOpts without the console's own SASL:
	// what a signed-in person's clients share with the console's.
	transport []kgo.Opt
}

// New builds a console; kgo connects lazily, so an unreachable cluster
// shows on the first page, not here.
func New(cfg Config) (*Server, error) {
	if len(cfg.Seeds) == 0 {
		return nil, errors.New("console: no bootstrap brokers")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Server{cfg: cfg, log: cfg.Logger, browsing: make(chan struct{}, maxBrowses)}
	transport, _, err := splitSASL(cfg.ClientOpts)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	s.transport = transport
	if cfg.Login != nil {
		ss, err := newSessions(*cfg.Login)
		if err != nil {
			return nil, fmt.Errorf("console: %w", err)
		}
		s.sessions = ss
		if err := s.checkUserSASL(); err != nil {
			return nil, fmt.Errorf("console: --login: %w", err)
		}
	}
	cl, err := kgo.NewClient(s.baseOpts()...)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	c, err := newCSRF()
	if err != nil {
		cl.Close()
		return nil, err
	}
	c.secure = cfg.BehindTLSProxy
	s.cl, s.adm, s.csrf = cl, kadm.NewClient(cl), c
	if cfg.JobsURL != "" {
		s.jobs = &jobsClient{base: strings.TrimSuffix(cfg.JobsURL, "/"), http: &http.Client{Timeout: requestTimeout}}
	}
	if cfg.RegistryURL != "" {
		if s.reg, err = newRegistry(cfg.RegistryURL); err != nil {
			cl.Close()
			return nil, fmt.Errorf("console: --registry: %w", err)
		}
	}
	if cfg.LakeURI != "" {
		if s.lake, err = openLake(cfg.LakeURI); err != nil {
			cl.Close()
			return nil, fmt.Errorf("console: --lake: %w", err)
		}
	}
	if err := s.parseTemplates(); err != nil {
		s.closeLake()
		cl.Close()
		return nil, err
	}
	s.routes()
	if cfg.SampleEvery >= 0 {
		s.samp = newSampler(s.adm, cfg.SampleEvery)
		s.samp.start()
	}
	if cfg.TrackerURL != "" {
		s.tracker = newTrackerStats(cfg.TrackerURL, cfg.SampleEvery)
		s.tracker.start()
	}
	return s, nil
}

// baseOpts are the options of the console's own Kafka client: the common
// ones and all of Config.ClientOpts, its SASL credentials included.
func (s *Server) baseOpts() []kgo.Opt {
	return append(commonOpts(s.cfg.Seeds), s.cfg.ClientOpts...)
}

// userOpts are the options of a signed-in person's client before their own
// SASL mechanism is added: never the console's credentials (usersasl.go).
func (s *Server) userOpts() []kgo.Opt {
	return append(commonOpts(s.cfg.Seeds), s.transport...)
}

func commonOpts(seeds []string) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.ClientID("tributary-console"),
		kgo.DialTimeout(5 * time.Second),
		kgo.RetryTimeout(10 * time.Second),
		kgo.RecordPartitioner(choosePartitioner{}),
		kgo.ProducerLinger(0),
		kgo.MetadataMinAge(time.Second),
	}
}

// Close stops the samplers and closes the console's Kafka clients.
func (s *Server) Close() {
	if s.sessions != nil {
		s.sessions.closeAll()
	}
	if s.samp != nil {
		s.samp.close()
	}
	if s.tracker != nil {
		s.tracker.close()
	}
	s.closeLake()
	s.cl.Close()
}

func (s *Server) closeLake() {
	if s.lake != nil {
		s.lake.fs.Close()
		if s.lake.root != nil {
			s.lake.root.Close()
		}
	}
}

func (s *Server) routes() {
	m := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets/static")
	m.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	m.HandleFunc("GET /{$}", s.overview)
	m.HandleFunc("GET /login", s.loginPage)
	m.HandleFunc("POST /login", s.login)
	m.HandleFunc("POST /logout", s.logout)
	m.HandleFunc("GET /topics", s.topics)
	m.HandleFunc("POST /topics", s.createTopic)
	m.HandleFunc("GET /topics/{topic}", s.topic)
	m.HandleFunc("POST /topics/{topic}/config", s.alterConfig)
	m.HandleFunc("POST /topics/{topic}/partitions", s.addPartitions)
	m.HandleFunc("POST /topics/{topic}/delete", s.deleteTopic)
	m.HandleFunc("GET /topics/{topic}/messages", s.messages)
	m.HandleFunc("POST /topics/{topic}/produce", s.produce)
	m.HandleFunc("GET /schemas", s.schemas)
	m.HandleFunc("GET /schemas/{subject}", s.subject)
	m.HandleFunc("GET /jobs", s.jobsPage)
	m.HandleFunc("GET /jobs/{job}", s.jobPage)
	m.HandleFunc("POST /jobs/{job}/{verb}", s.jobAction)
	m.HandleFunc("GET /pipeline", s.pipeline)
	m.HandleFunc("GET /pipeline/errors", s.lakeErrors)
	m.HandleFunc("GET /pipeline/runs/{run}", s.lakeRun)
	m.HandleFunc("GET /acls", s.acls)
	m.HandleFunc("POST /acls", s.createACL)
	m.HandleFunc("POST /acls/delete", s.deleteACL)
	m.HandleFunc("GET /users", s.users)
	m.HandleFunc("POST /users", s.upsertUser)
	m.HandleFunc("POST /users/{user}/delete", s.deleteUser)
	m.HandleFunc("GET /groups", s.groups)
	m.HandleFunc("GET /groups/{group}", s.group)
	m.HandleFunc("POST /groups/{group}/reset", s.resetOffsets)
	m.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	s.mux = m
}

// ServeHTTP applies the checks every request passes, then routes it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// Nothing the console serves comes from elsewhere or runs inline, so
	// an injected script or style has nowhere to run.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if s.cfg.LoopbackOnly && !loopbackHost(r.Host) {
		s.refuse(w, r, http.StatusForbidden, fmt.Sprintf("host %q is not a loopback name: this console listens on loopback only, and a page of another site must not reach it by DNS rebinding", r.Host))
		return
	}
	if !s.cfg.LoopbackOnly && !s.allowedHost(r.Host) {
		s.refuse(w, r, http.StatusForbidden, fmt.Sprintf("host %q is not one of the console's names (--allowed-host): a page of another site must not reach it by DNS rebinding", r.Host))
		return
	}
	if s.sessions != nil {
		var ok bool
		if r, ok = s.withSession(w, r); !ok {
			return
		}
	}
	if r.Method == http.MethodPost {
		// Signing in and out changes nothing on the cluster.
		if s.cfg.ReadOnly && r.URL.Path != "/login" && r.URL.Path != "/logout" {
			s.refuse(w, r, http.StatusForbidden, "the console is read-only (--read-only): it changes nothing on the cluster")
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		if err := r.ParseForm(); err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				s.refuse(w, r, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", MaxBodyBytes))
				return
			}
			s.refuse(w, r, http.StatusBadRequest, "bad form: "+err.Error())
			return
		}
		if why := s.csrf.check(r); why != "" {
			s.refuse(w, r, http.StatusForbidden, "refused (CSRF protection): "+why+"; reload the page and try again")
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

// allowedHost says whether a Host header names this console: an IP
// address (a page at an address is that address's own origin, so rebinding
// needs a name), a loopback name, or one of Config.AllowedHosts.
func (s *Server) allowedHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if net.ParseIP(host) != nil || loopbackHost(host) {
		return true
	}
	for _, a := range s.cfg.AllowedHosts {
		if strings.EqualFold(strings.TrimSuffix(a, "."), host) {
			return true
		}
	}
	return false
}

func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// page is what every template gets.
type page struct {
	Title    string
	Nav      string
	ReadOnly bool
	CSRF     string
	Flash    string
	Error    string
	Registry string
	Jobs     bool
	Login    bool   // the console signs people in
	User     string // who is signed in
	ACLs     bool   // the cluster has an authorizer
	SCRAM    bool   // the cluster keeps SCRAM credentials
	Data     any
}

func (s *Server) parseTemplates() error {
	funcs := template.FuncMap{
		"bytes":    humanBytes,
		"join":     joinInt32,
		"pathq":    url.PathEscape,
		"millis":   formatMillis,
		"contains": containsInt32,
		"when":     formatTime,
		"num":      num,
		"errlink":  errorsLink,
	}
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "assets/layout.html")
	if err != nil {
		return err
	}
	s.pages = map[string]*template.Template{}
	names, _ := fs.Glob(assets, "assets/pages/*.html")
	for _, n := range names {
		t, err := template.Must(layout.Clone()).ParseFS(assets, n)
		if err != nil {
			return err
		}
		s.pages[strings.TrimSuffix(n[len("assets/pages/"):], ".html")] = t
	}
	return nil
}

// render writes a page; the CSRF cookie is set on the way, so every page
// with a form can post it.
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	b, err := s.execute(w, r, name, p)
	if err != nil {
		http.Error(w, "template error: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(b)
}

// execute renders a page into memory, with what every page shows.
func (s *Server) execute(w http.ResponseWriter, r *http.Request, name string, p page) ([]byte, error) {
	t := s.pages[name]
	p.ReadOnly = s.cfg.ReadOnly
	p.CSRF = s.csrf.token(w, r)
	if s.reg != nil {
		p.Registry = s.reg.shown
	}
	p.Jobs = s.jobs != nil
	p.Login, p.User = s.sessions != nil, userOf(r.Context())
	if p.User != "" || s.sessions == nil {
		p.ACLs, p.SCRAM = s.features.get(r.Context(), s.client(r.Context()))
	}
	if p.Flash == "" {
		p.Flash = s.note(r.URL.Query())
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, p); err != nil {
		s.log.Error("console: template", "page", name, "err", err)
		return nil, err
	}
	return buf.Bytes(), nil
}

// refuse answers with a page that says why.
func (s *Server) refuse(w http.ResponseWriter, r *http.Request, status int, why string) {
	s.render(w, r, status, "error", page{Title: http.StatusText(status), Error: why})
}

// fail reports a Kafka error of a page or an action.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, what string, err error) {
	status := http.StatusBadGateway
	var ke *kerr.Error
	switch {
	case errors.Is(err, errBadInput):
		status = http.StatusBadRequest
	case errors.As(err, &ke) && strings.HasSuffix(ke.Message, "_AUTHORIZATION_FAILED"):
		// The broker's ACLs refused the console's principal.
		status = http.StatusForbidden
	}
	s.render(w, r, status, "error", page{Title: what, Error: what + ": " + err.Error()})
}

var errBadInput = errors.New("bad input")

func badInput(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadInput, fmt.Sprintf(format, args...))
}

// done redirects after a change (post/redirect/get), with a note the next
// page shows.
func (s *Server) done(w http.ResponseWriter, r *http.Request, to, note string) {
	http.Redirect(w, r, to+"?"+s.noteQuery(note), http.StatusSeeOther)
}

// noteTTL is how long the link of a redirect after a change shows its note.
const noteTTL = 2 * time.Minute

// noteQuery is the query that shows note on the next page: the note with
// an expiry and its HMAC under the console's key, so a link made elsewhere
// (?done=topic+deleted) cannot put a fake notice on a console page.
func (s *Server) noteQuery(note string) string {
	exp := strconv.FormatInt(time.Now().Add(noteTTL).Unix(), 10)
	return "done=" + url.QueryEscape(note) + "&ds=" + exp + "." + s.csrf.sign("done\x00"+exp+"\x00"+note)
}

// note is the signed note of q, or "" when it has none, a bad signature or
// an old one.
func (s *Server) note(q url.Values) string {
	note := q.Get("done")
	exp, mac, ok := strings.Cut(q.Get("ds"), ".")
	if note == "" || !ok {
		return ""
	}
	t, err := strconv.ParseInt(exp, 10, 64)
	if err != nil || time.Now().Unix() > t || !hmac.Equal([]byte(mac), []byte(s.csrf.sign("done\x00"+exp+"\x00"+note))) {
		return ""
	}
	return note
}

// ctxOf bounds a page's Kafka requests. It also makes kadm ask for
// authorized operations, which sends every Metadata request to the cluster
// instead of answering from kgo's cache (up to MetadataMinAge old): a
// page must show the topic created the moment before.
func ctxOf(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(kadm.WithAuthorizedOps(r.Context()), requestTimeout)
}

func humanBytes(n int64) string {
	if n < 0 {
		return "?"
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func joinInt32(xs []int32) string {
	var b strings.Builder
	for i, x := range xs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprint(&b, x)
	}
	return b.String()
}

func containsInt32(xs []int32, x int32) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func formatTime(t any) string {
	switch v := t.(type) {
	case time.Time:
		if v.IsZero() {
			return ""
		}
		return v.UTC().Format("2006-01-02 15:04:05Z")
	case *time.Time:
		if v == nil || v.IsZero() {
			return ""
		}
		return v.UTC().Format("2006-01-02 15:04:05Z")
	}
	return ""
}

func formatMillis(ms int64) string {
	if ms < 0 {
		return ""
	}
	return time.UnixMilli(ms).UTC().Format("2006-01-02 15:04:05.000Z")
}

// secure reports whether cookies must be marked Secure: over TLS, or
// behind a proxy that terminates it.
func (s *Server) secure(r *http.Request) bool { return s.cfg.BehindTLSProxy || r.TLS != nil }
