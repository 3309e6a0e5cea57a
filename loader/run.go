package loader

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tributary-io/tributary/formats/iceberg"
)

// Run loads what is new for a job: it first resumes the job's open plan, if
// a run failed or crashed, then plans from the committed offsets to the high
// watermarks, executes the units with parallelism goroutines and commits.
// It returns the manifests of the runs it committed (none when nothing was
// new).
func (l *Loader) Run(ctx context.Context, spec Spec, parallelism int) ([]*Manifest, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	var out []*Manifest
	open, err := l.OpenPlan(spec.Job)
	if err != nil {
		return nil, err
	}
	if open != nil {
		l.log().Info("resuming run", "run", open.Run, "units", len(open.Units))
		m, err := l.Complete(ctx, open, parallelism)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	l.cleanStaging(spec.Job)
	l.syncGroup(ctx, spec.Job)
	planStart := time.Now()
	p, err := l.Plan(ctx, spec)
	if err != nil {
		return out, err
	}
	if len(p.Units) == 0 && len(p.Gaps) == 0 {
		l.log().Info("nothing new to load", "job", spec.Job)
		return out, nil
	}
	if err := l.fence(ctx); err != nil {
		return out, err
	}
	if err := p.save(l); err != nil {
		return out, fmt.Errorf("saving the plan: %w", err)
	}
	l.phase(p.Run, "plan", planStart)
	crashPoint("planned")
	l.log().Info("planned", "run", p.Run, "units", len(p.Units), "records", p.Records())
	m, err := l.Complete(ctx, p, parallelism)
	if err != nil {
		return out, err
	}
	return append(out, m), nil
}

// SavePlan computes and saves a plan without running it, for workers started
// elsewhere (`load worker`). It refuses while the job has an open plan.
func (l *Loader) SavePlan(ctx context.Context, spec Spec) (*Plan, error) {
	if open, err := l.OpenPlan(spec.Job); err != nil {
		return nil, err
	} else if open != nil {
		return nil, fmt.Errorf("job %q has an open run, %s: finish it first (tributary load run, or its workers)", spec.Job, open.Run)
	}
	p, err := l.Plan(ctx, spec)
	if err != nil {
		return nil, err
	}
	if len(p.Units) == 0 && len(p.Gaps) == 0 {
		return p, nil
	}
	if err := l.fence(ctx); err != nil {
		return nil, err
	}
	return p, p.save(l)
}

// Complete executes the units of a saved plan that are not done yet, then
// commits it; on a plan already committed it only repeats the finishing
// steps. A load plan whose ranges another run committed meanwhile is closed
// with nothing loaded (Manifest.Superseded).
func (l *Loader) Complete(ctx context.Context, p *Plan, parallelism int) (*Manifest, error) {
	state, err := ReadState(l.FS, p.Job)
	if err != nil {
		return nil, err
	}
	if state.Run != p.Run {
		if by, advanced, err := l.supersededBy(p, state); err != nil || by != "" {
			if err != nil {
				return nil, err
			}
			return l.closeSuperseded(ctx, p, state, by, advanced)
		}
		if l.Lease != nil {
			// Workers of this plan (`load worker`) work under our lease
			// once it names the plan.
			if err := l.Lease.SetPlan(p.Run); err != nil {
				return nil, err
			}
		}
		start := time.Now()
		if err := l.executeUnits(ctx, p, parallelism); err != nil {
			return nil, err
		}
		l.phase(p.Run, "execute", start)
	}
	start := time.Now()
	m, err := l.Commit(ctx, p)
	if errors.Is(err, errUnitOpen) {
		// Executed, yet a unit has no result: its workers lost it (an
		// executor that reported success too early). This run is the way to
		// finish it, so it runs what is missing itself, once.
		l.log().Warn("a unit has no result after its execution; running the missing units here", "run", p.Run, "err", err)
		if err := l.Execute(ctx, p, parallelism); err != nil {
			return nil, err
		}
		m, err = l.Commit(ctx, p)
	}
	for i := 0; i < maxReplans && errors.Is(err, iceberg.ErrFieldIDsChanged); i++ {
		// Another writer evolved the table since the plan chose the ids:
		// the files of the topics whose ids changed are written again.
		l.log().Warn("the table's schema changed since the run was planned; writing its files again with the table's field ids", "run", p.Run, "err", err)
		if err := l.replanFieldIDs(p); err != nil {
			return nil, err
		}
		if err := l.Execute(ctx, p, parallelism); err != nil {
			return nil, err
		}
		m, err = l.Commit(ctx, p)
	}
	if err == nil {
		l.phase(p.Run, "commit", start)
	}
	return m, err
}

// Execute runs every unit of the plan not done yet, parallelism at a time.
// The first failure stops the others; done units stay done.
func (l *Loader) Execute(ctx context.Context, p *Plan, parallelism int) error {
	if l.Progress != nil {
		l.Progress.Total.Store(p.Records())
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range max(1, parallelism) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if _, err := l.RunUnit(ctx, p, i); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					cancel()
				}
			}
		}()
	}
feed:
	for i := range p.Units {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("run %s failed (rerun to resume it): %w", p.Run, errors.Join(errs...))
	}
	return ctx.Err()
}

// OpenPlan is the job's plan that has not finished, if any. Plans of a job
// run one after another, so only the newest can be open.
func (l *Loader) OpenPlan(job string) (*Plan, error) {
	runs, err := l.runs(job)
	if err != nil || len(runs) == 0 {
		return nil, err
	}
	last := runs[len(runs)-1]
	if _, err := l.FS.Stat(runDir(last) + "/" + successTag); err == nil {
		return nil, nil
	}
	return l.LoadPlan(last)
}

// runs lists a job's planned runs, oldest first.
func (l *Loader) runs(job string) ([]string, error) {
	ents, err := l.FS.ReadDir(plansDir)
	if isNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s/%s: %w", l.FS, plansDir, err)
	}
	var out []string
	for _, e := range ents {
		run, ok := strings.CutSuffix(e.Name(), ".json")
		if j, isRun := runJob(run); ok && isRun && j == job {
			out = append(out, run)
		}
	}
	sort.Strings(out)
	return out, nil
}

// cleanStaging removes what committed runs left in staging: a crash after
// the run's _SUCCESS and before its staging directory was removed.
func (l *Loader) cleanStaging(job string) {
	ents, err := l.FS.ReadDir(stagingDir)
	if err != nil {
		return
	}
	for _, e := range ents {
		if j, ok := runJob(e.Name()); !ok || j != job {
			continue
		}
		if _, err := l.FS.Stat(runDir(e.Name()) + "/" + successTag); err == nil {
			l.FS.RemoveAll(stagingRun(e.Name()))
		}
	}
}

// syncGroup commits the job's state to the broker again: a commit that
// failed after the state was written is retried here.
func (l *Loader) syncGroup(ctx context.Context, job string) {
	state, err := ReadState(l.FS, job)
	if err != nil || len(state.Offsets) == 0 {
		return
	}
	if err := l.commitGroup(ctx, job, state.Offsets); err != nil {
		l.log().Warn("committing the offsets to the broker", "group", GroupID(job), "err", err)
	}
}

// nextRunID names the job's next run so that it sorts after every run the
// job has, whatever the clocks of the machines that planned them said.
func (l *Loader) nextRunID(job string, now time.Time) (string, time.Time, error) {
	runs, err := l.runs(job)
	if err != nil {
		return "", now, err
	}
	if len(runs) == 0 {
		return newRunID(job, now), now, nil
	}
	// A clock behind the last run's planner moves to just after it, in one
	// step: stepping a millisecond at a time took an hour's worth of
	// millions of names for a clock an hour behind.
	last := runs[len(runs)-1]
	t, ok := runTime(last)
	if !ok {
		return "", now, fmt.Errorf("%s/%s: %s.json is not a plan this loader wrote (no time in its name); move it away", l.FS, plansDir, last)
	}
	if !now.After(t) {
		now = t.Add(time.Nanosecond)
	}
	id := newRunID(job, now)
	for id <= last { // last has whole seconds, and "." sorts before "Z"
		now = now.Add(time.Second)
		id = newRunID(job, now)
	}
	return id, now, nil
}

// LatestManifest is the newest committed run of a job, nil if none.
func (l *Loader) LatestManifest(job string) (*Manifest, error) {
	runs, err := l.runs(job)
	if err != nil {
		return nil, err
	}
	for i := len(runs) - 1; i >= 0; i-- {
		if m, err := ReadManifest(l.FS, runs[i]); err == nil {
			return m, nil
		}
	}
	return nil, nil
}

func since(t time.Time) float64 { return time.Since(t).Seconds() }
