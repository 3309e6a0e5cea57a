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

// adminOptions is what every daemon's admin endpoint serves beyond
// /metrics and the probes.
func adminOptions(pprof bool) []admin.Option {
	return []admin.Option{admin.WithLogLevel(&processLevel), admin.WithPprof(pprof)}
}
