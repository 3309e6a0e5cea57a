package loader

import (
	"context"
	"time"
)

// Hooks let the caller of Run (the jobs scheduler) guard and watch a run.
// Every hook is optional; with none set, a run behaves as it always has.
type Hooks struct {
	// Fence is called just before each step a loader must not take once it
	// has lost the right to run the job (its lease): saving a new plan,
	// recording a unit's result, and the commit point. An error stops the run there. Two loaders of one job
	// at once are otherwise unprotected (see doc.go).
	Fence func(ctx context.Context) error
	// Execute, if set, runs a saved plan's units instead of this process's
	// goroutines: worker processes, a cluster's pods. It returns once every
	// unit is done (or with the first failure); Commit checks the markers.
	Execute func(ctx context.Context, p *Plan, parallelism int) error
	// Phase is told how long a phase of a run took: "plan" (computing and
	// saving it), "execute" or "commit". It is called from the goroutine
	// that called Run.
	Phase func(run, phase string, d time.Duration)
}

func (l *Loader) fence(ctx context.Context) error {
	if l.Hooks.Fence == nil {
		if l.Lease != nil {
			return l.Lease.Check(ctx)
		}
		return nil
	}
	return l.Hooks.Fence(ctx)
}

func (l *Loader) phase(run, phase string, start time.Time) {
	if l.Hooks.Phase != nil {
		l.Hooks.Phase(run, phase, time.Since(start))
	}
}

// executeUnits runs the plan's units with the Execute hook, else here.
func (l *Loader) executeUnits(ctx context.Context, p *Plan, parallelism int) error {
	if l.Hooks.Execute != nil {
		return l.Hooks.Execute(ctx, p, parallelism)
	}
	return l.Execute(ctx, p, parallelism)
}
