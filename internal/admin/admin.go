// Package admin is a daemon's admin endpoint: Prometheus metrics at
// /metrics, liveness at /healthz and readiness at /readyz. Every daemon
// (broker, tracker, jobs) serves one on --admin-listen.
package admin

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
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

// Listen serves the endpoint on addr. ready reports why the daemon cannot
// take traffic yet (nil when it can).
func Listen(addr string, reg *prometheus.Registry, ready func() error, logger *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
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
	s := &Server{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("admin endpoint stopped", "err", err)
		}
	}()
	logger.Info("admin endpoint ready", "addr", ln.Addr().String(), "paths", []string{"/metrics", "/healthz", "/readyz"})
	return s, nil
}

// Addr is the bound address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the endpoint.
func (s *Server) Close(ctx context.Context) error { return s.srv.Shutdown(ctx) }
