package jobs

import (
	"context"
	"log/slog"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/loader"
)

// YARNRun is what `tributary load run --executor yarn` needs to run a
// plan's units as one YARN application, outside the jobs daemon.
type YARNRun struct {
	Config      YARN
	Parallelism int // the default of Config.MaxContainers
	Target      string
	FS          fsys.Options
	Bootstrap   string
	// Binary is the tributary executable the containers run.
	Binary string
	Log    *slog.Logger
	// Record is told the application's state whenever it changes
	// (submitted, containers seen, ended); nil ignores it.
	Record func(Application)
}

// Execute returns the loader.Hooks.Execute of the run, after checking the
// yarn settings and filling in their defaults (as a job's yarn: block).
func (r YARNRun) Execute() (func(ctx context.Context, p *loader.Plan, parallelism int) error, error) {
	cfg := r.Config
	if err := cfg.validate(max(1, r.Parallelism)); err != nil {
		return nil, err
	}
	record := r.Record
	if record == nil {
		record = func(Application) {}
	}
	log := r.Log
	if log == nil {
		log = slog.Default()
	}
	e := &yarnExecutor{cfg: cfg, target: r.Target, opts: r.FS, bootstrap: r.Bootstrap, hdfsUser: r.FS.User,
		bin: r.Binary, log: log, record: record}
	return e.execute, nil
}
