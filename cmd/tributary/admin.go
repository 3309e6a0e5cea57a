package main

import (
	"log/slog"

	"github.com/spf13/pflag"

	"github.com/tributary-io/tributary/internal/admin"
)

// processLevel is the level of the process's slog handler (root.go sets it
// from --log-level). It is one variable for the whole process so that PUT
// /loglevel on a daemon's admin endpoint changes what every logger derived
// from slog.Default writes, including those made before the change.
var processLevel slog.LevelVar

// addAdminPprofFlag is every daemon's --admin-pprof.
func addAdminPprofFlag(f *pflag.FlagSet, enabled *bool) {
	f.BoolVar(enabled, "admin-pprof", false, "serve /debug/pprof on --admin-listen even when it is not a loopback address")
}

// adminAccess are the daemon's admin.token, admin.token.file and
// admin.metrics.open (one daemon runs per process, as processLevel).
var adminAccess struct {
	token, tokenFile string
	metricsOpen      bool
}

// addAdminAccessFlags is every daemon's admin endpoint protection.
func addAdminAccessFlags(f *pflag.FlagSet) {
	f.StringVar(&adminAccess.token, "admin-token", "", "bearer token the admin endpoints need when not on a loopback address (/healthz and /readyz aside); better as admin.token in the config file, TRIBUTARY_ADMIN_TOKEN or --admin-token-file than on the command line")
	f.StringVar(&adminAccess.tokenFile, "admin-token-file", "", "file whose first line is the admin token (a mounted secret), when --admin-token is not set")
	f.BoolVar(&adminAccess.metricsOpen, "admin-metrics-open", false, "serve /metrics without the admin token on a non-loopback address, for a Prometheus that scrapes without credentials")
}

// adminAccessOption reads the token (from its file, if so).
func adminAccessOption() (admin.Option, admin.Access, error) {
	t, err := admin.ReadToken(adminAccess.token, adminAccess.tokenFile)
	if err != nil {
		return nil, admin.Access{}, err
	}
	a := admin.Access{Token: t, MetricsOpen: adminAccess.metricsOpen}
	return admin.WithAccess(a), a, nil
}

// adminOptions is what every daemon's admin endpoint serves beyond
// /metrics and the probes, and who may use it.
func adminOptions(pprof bool) ([]admin.Option, error) {
	acc, _, err := adminAccessOption()
	if err != nil {
		return nil, err
	}
	return []admin.Option{admin.WithLogLevel(&processLevel), admin.WithPprof(pprof), acc}, nil
}
