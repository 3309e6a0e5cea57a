// Package admin is a daemon's admin endpoint. Every daemon (broker,
// tracker, jobs) serves one on --admin-listen:
//
//	/metrics       Prometheus metrics
//	/healthz       liveness: the process answers
//	/readyz        readiness: 503 with the reason while it cannot take traffic
//	/loglevel      GET the slog level, PUT a new one (debug, info, warn, error)
//	/debug/pprof/  Go's profiler, on a loopback address unless enabled
//
// The profiler is refused on a non-loopback address by default because a
// CPU profile or a heap dump is a denial of service and a leak of whatever
// the heap holds (write keys, event payloads) for anyone who can reach the
// port; the metrics and probes must be reachable from Prometheus and the
// orchestrator, so they are not.
//
// A Server is safe for concurrent use; Close may be called once.
package admin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is a running admin endpoint.
type Server struct {
	ln  net.Listener
	srv *http.Server
}

// NewRegistry is a registry with the Go runtime and process collectors, to
// which a daemon adds its own metrics.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// An Option adds to what the endpoint serves.
type Option func(*options)

type options struct {
	level  *slog.LevelVar
	pprof  bool
	access *Access
}

// WithLogLevel serves GET/PUT /loglevel over level, which must be the
// LevelVar the process's slog handler was made with, so that a PUT changes
// what every logger of the process writes.
func WithLogLevel(level *slog.LevelVar) Option {
	return func(o *options) { o.level = level }
}

// WithPprof serves /debug/pprof whatever the listen address; without it the
// profiler answers only when the endpoint listens on a loopback address.
func WithPprof(enabled bool) Option {
	return func(o *options) { o.pprof = o.pprof || enabled }
}

// Listen serves the endpoint on addr. ready reports why the daemon cannot
// take traffic yet (nil when it can).
func Listen(addr string, reg *prometheus.Registry, ready func() error, logger *slog.Logger, opts ...Option) (*Server, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	paths := []string{"/metrics", "/healthz", "/readyz"}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	if o.level != nil {
		mux.Handle("/loglevel", levelHandler(o.level, logger))
		paths = append(paths, "/loglevel")
	}
	if o.pprof || isLoopback(ln.Addr()) {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		paths = append(paths, "/debug/pprof/")
	} else {
		mux.HandleFunc("/debug/pprof/", func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, fmt.Sprintf("/debug/pprof is served only on a loopback admin address, and this one is %s: "+
				"enable it with --admin-pprof (admin.pprof: true), or listen on 127.0.0.1 and use an SSH tunnel or kubectl port-forward",
				ln.Addr()), http.StatusForbidden)
		})
	}
	// A CPU profile or trace runs for ?seconds= (30 by default), so the
	// write timeout leaves room for one of up to a few minutes.
	var handler http.Handler = mux
	if o.access != nil {
		handler = Guard(mux, ln.Addr(), *o.access, logger)
	}
	s := &Server{ln: ln, srv: &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, WriteTimeout: 5 * time.Minute}}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("admin endpoint stopped", "err", err)
		}
	}()
	logger.Info("admin endpoint ready", "addr", ln.Addr().String(), "paths", paths)
	return s, nil
}

// isLoopback says whether every address the listener accepts on is a
// loopback one; a wildcard (0.0.0.0, ::) is not.
func isLoopback(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// levelHandler answers GET with the level's name and PUT (or POST, for
// clients that cannot PUT) with a new level in the body or in ?level=.
func levelHandler(level *slog.LevelVar, logger *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead:
		case http.MethodPut, http.MethodPost:
			text := r.URL.Query().Get("level")
			if text == "" {
				body, err := io.ReadAll(io.LimitReader(r.Body, 64))
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				text = strings.TrimSpace(string(body))
			}
			var next slog.Level
			if err := next.UnmarshalText([]byte(text)); err != nil {
				http.Error(w, fmt.Sprintf("log level %q: want debug, info, warn or error", text), http.StatusBadRequest)
				return
			}
			prev := level.Level()
			// Logged while the more verbose of the two levels is in force,
			// so that the change shows in the log whichever way it goes.
			if next < prev {
				level.Set(next)
				logger.Info("log level changed", "from", prev.String(), "to", next.String(), "remote", r.RemoteAddr)
			} else {
				logger.Info("log level changed", "from", prev.String(), "to", next.String(), "remote", r.RemoteAddr)
				level.Set(next)
			}
		default:
			w.Header().Set("Allow", "GET, PUT")
			http.Error(w, "use GET to read the level, PUT to change it", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, strings.ToLower(level.Level().String()))
	})
}

// Addr is the bound address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the endpoint.
func (s *Server) Close(ctx context.Context) error { return s.srv.Shutdown(ctx) }
