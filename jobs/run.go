package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/kafkacli"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/lease"
)

// errPaused says a scheduled time found the job paused through the API.
var errPaused = errors.New("paused")

// run runs a job once: attempts, with backoff between them, until one
// succeeds or the retries are spent. It is called from the job's goroutine
// only.
func (s *Scheduler) run(ctx context.Context, st *jobState, trigger string, scheduled time.Time) {
	s.mu.Lock()
	j, cfg := st.job, s.cfg
	now := time.Now().UTC()
	rec := &Record{Version: RecordVersion, ID: newRecordID(now), Job: j.Name, Trigger: trigger,
		Scheduled: scheduled.UTC(), Started: now, Outcome: Running, Executor: j.Executor}
	st.current, st.skip = rec, ""
	s.mu.Unlock()
	s.metrics.running.WithLabelValues(j.Name).Set(1)
	defer s.metrics.running.WithLabelValues(j.Name).Set(0)

	for n := 0; ; n++ {
		err := s.attempt(ctx, st, j, cfg, rec, trigger)
		var busy *BusyError
		switch {
		case err == nil:
			s.finish(st, j, cfg, rec, Succeeded, nil)
			return
		case n == 0 && (errors.As(err, &busy) || errors.Is(err, errPaused)):
			// Nothing happened: another scheduler has the job, or it is
			// paused. Not a run, so not in the history.
			s.mu.Lock()
			st.current, st.skip = nil, err.Error()
			s.mu.Unlock()
			s.metrics.skipped.WithLabelValues(j.Name).Inc()
			s.log.Info("scheduled run skipped", "job", j.Name, "why", err)
			return
		case errors.As(err, &busy):
			// A retry found the job taken by another scheduler: it runs the
			// job now, and resumes this run's plan.
			s.finish(st, j, cfg, rec, Interrupted, fmt.Errorf("handed over after a failed attempt: %w", err))
			return
		case ctx.Err() != nil:
			s.finish(st, j, cfg, rec, Cancelled, err)
			return
		case n >= j.Retries:
			s.finish(st, j, cfg, rec, Failed, err)
			return
		}
		wait := min(j.Backoff<<n, j.MaxBackoff)
		if wait <= 0 { // shifted past the int64's range
			wait = j.MaxBackoff
		}
		s.mu.Lock()
		rec.Outcome, rec.Error, rec.NextAttempt = Retrying, err.Error(), time.Now().Add(wait).UTC()
		s.mu.Unlock()
		s.log.Warn("run failed; retrying", "job", j.Name, "attempt", n+1, "of", j.Retries+1, "in", wait, "err", err)
		s.persist(st, j, cfg, rec, nil)
		select {
		case <-ctx.Done():
			s.finish(st, j, cfg, rec, Cancelled, err)
			return
		case <-time.After(wait):
		}
	}
}

// finish ends a run: outcome, history, metrics.
func (s *Scheduler) finish(st *jobState, j *Job, cfg *Config, rec *Record, outcome string, err error) {
	s.mu.Lock()
	rec.Outcome, rec.Ended, rec.NextAttempt = outcome, time.Now().UTC(), time.Time{}
	rec.Error = ""
	if err != nil {
		rec.Error = err.Error()
	}
	st.current, st.last = nil, rec
	s.mu.Unlock()
	s.metrics.runs.WithLabelValues(j.Name, outcome).Inc()
	s.metrics.duration.WithLabelValues(j.Name).Observe(rec.Ended.Sub(rec.Started).Seconds())
	if outcome == Succeeded {
		s.metrics.lastSuccess.WithLabelValues(j.Name).Set(float64(rec.Ended.Unix()))
		s.log.Info("run succeeded", "job", j.Name, "run", rec.ID, "records", rec.Records, "rows", rec.Rows,
			"files", rec.Files, "bad", rec.Bad, "attempts", len(rec.Attempts), "seconds", rec.Ended.Sub(rec.Started).Seconds())
	} else {
		s.log.Error("run ended", "job", j.Name, "run", rec.ID, "outcome", outcome, "attempts", len(rec.Attempts), "err", err)
	}
	s.persist(st, j, cfg, rec, nil)
}

// attempt makes one try of a run under the job's lease.
func (s *Scheduler) attempt(ctx context.Context, st *jobState, j *Job, cfg *Config, rec *Record, trigger string) (err error) {
	a := Attempt{Owner: s.opts.Owner, Started: time.Now().UTC()}
	opts := s.sinkOptions(j)
	fs, err := fsys.Open(j.Target, opts)
	if err != nil {
		return s.failAttempt(j, rec, a, err)
	}
	defer fs.Close()
	mark, err := readPause(fs, j.Name)
	s.mu.Lock()
	st.paused = mark
	s.mu.Unlock()
	if err == nil && mark != nil && trigger == "schedule" {
		return errPaused
	}
	held, err := lease.Acquire(fs, j.Name, rec.ID, lease.Config{TTL: cfg.LeaseTTL, Skew: cfg.ClockSkew, Owner: s.opts.Owner})
	if err != nil {
		var busy *BusyError
		if errors.As(err, &busy) {
			return err
		}
		return s.failAttempt(j, rec, a, err)
	}
	a.Lease = held.Info().Generation
	defer held.Release() // after endAttempt's, a no-op
	if prev := held.Previous; prev.Run != "" && !prev.Released && prev.Run != rec.ID {
		s.markInterrupted(fs, j.Name, prev)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if j.Timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, j.Timeout)
		defer cancel()
	}
	go func() {
		select {
		case <-held.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	if len(j.Maintenance) > 0 {
		s.mu.Lock()
		rec.Attempts = append(rec.Attempts, a)
		rec.Outcome, rec.Error, rec.NextAttempt = Running, "", time.Time{}
		rec.Maintenance, rec.Files, rec.Rows, rec.Bytes = nil, 0, 0, 0
		s.mu.Unlock()
		s.persist(st, j, cfg, rec, fs)
		err := s.maintain(ctx, fs, j, rec, held)
		if lerr := held.Err(); err != nil && lerr != nil {
			err = fmt.Errorf("%w (%v)", lerr, err)
		}
		return s.endAttempt(st, j, rec, held, err)
	}
	bootstrap := j.Bootstrap
	if bootstrap == "" {
		bootstrap = s.opts.Bootstrap
	}
	l := &loader.Loader{FS: fs, Bootstrap: bootstrap, Log: s.log.With("job", j.Name), Lease: held}
	open, err := l.OpenPlan(j.Name)
	if err != nil {
		return s.failAttempt(j, rec, a, err)
	}
	if open != nil {
		a.Resumed = open.Run
	}
	s.mu.Lock()
	rec.Attempts = append(rec.Attempts, a)
	rec.Outcome, rec.Error, rec.NextAttempt = Running, "", time.Time{}
	s.mu.Unlock()
	s.persist(st, j, cfg, rec, fs)

	cl, err := kafkacli.Connect(ctx, bootstrap)
	if err != nil {
		return s.endAttempt(st, j, rec, held, err)
	}
	defer cl.Close()
	l.Cluster = cl
	l.Hooks = loader.Hooks{
		Fence: held.Check,
		Phase: func(run, phase string, d time.Duration) {
			s.mu.Lock()
			if rec.Phases == nil {
				rec.Phases = map[string]float64{}
			}
			rec.Phases[phase] += d.Seconds()
			s.mu.Unlock()
			s.metrics.phase.WithLabelValues(j.Name, phase).Observe(d.Seconds())
		},
	}
	switch j.Executor {
	case ExecProcess:
		e := &processExecutor{bin: s.opts.Binary, target: fs.String(), bootstrap: bootstrap, hdfsUser: opts.User, kerberos: opts.Kerberos, log: s.log}
		l.Hooks.Execute = e.execute
	case ExecCommand:
		e := &commandExecutor{argv: j.Command, target: fs.String(), log: s.log}
		l.Hooks.Execute = e.execute
	case ExecYARN:
		e := &yarnExecutor{cfg: *j.YARN, target: fs.String(), opts: opts, bootstrap: bootstrap, hdfsUser: opts.User,
			bin: s.opts.Binary, log: s.log.With("job", j.Name), record: s.recordApplication(st, j, cfg, rec)}
		l.Hooks.Execute = e.execute
	case ExecKubernetes:
		e := &k8sExecutor{cfg: *j.Kubernetes, target: fs.String(), log: s.log.With("job", j.Name), record: s.recordApplication(st, j, cfg, rec)}
		l.Hooks.Execute = e.execute
	}
	ms, runErr := l.Run(ctx, j.Spec, j.Parallelism)
	for _, m := range ms {
		p, _ := l.LoadPlan(m.Run)
		s.mu.Lock()
		rec.addLoad(m, p)
		s.mu.Unlock()
		s.metrics.records.WithLabelValues(j.Name).Add(float64(m.Records))
		s.metrics.bytes.WithLabelValues(j.Name).Add(float64(m.Bytes))
		s.metrics.files.WithLabelValues(j.Name).Add(float64(len(m.Files)))
		s.metrics.bad.WithLabelValues(j.Name).Add(float64(m.Bad))
	}
	if runErr == nil {
		s.refreshLag(ctx, st, j, l, rec)
	}
	if lerr := held.Err(); runErr != nil && lerr != nil {
		runErr = fmt.Errorf("%w (%v)", lerr, runErr)
	}
	return s.endAttempt(st, j, rec, held, runErr)
}

// endAttempt closes the attempt in the record and releases the lease.
func (s *Scheduler) endAttempt(st *jobState, j *Job, rec *Record, held *lease.Lease, err error) error {
	s.mu.Lock()
	a := &rec.Attempts[len(rec.Attempts)-1]
	a.Ended = time.Now().UTC()
	if err != nil {
		a.Error = err.Error()
	}
	s.mu.Unlock()
	if rerr := held.Release(); rerr != nil {
		s.log.Warn("releasing the lease (the next run waits for it to expire)", "job", j.Name, "err", rerr)
	}
	if err != nil {
		s.metrics.attemptFailures.WithLabelValues(j.Name).Inc()
	}
	return err
}

// failAttempt records an attempt that failed before it could start.
func (s *Scheduler) failAttempt(j *Job, rec *Record, a Attempt, err error) error {
	a.Ended, a.Error = time.Now().UTC(), err.Error()
	s.mu.Lock()
	rec.Attempts = append(rec.Attempts, a)
	s.mu.Unlock()
	s.metrics.attemptFailures.WithLabelValues(j.Name).Inc()
	return err
}

// refreshLag reads the job's lag per topic after a run.
func (s *Scheduler) refreshLag(ctx context.Context, st *jobState, j *Job, l *loader.Loader, rec *Record) {
	status, err := l.Status(ctx, j.Name)
	if err != nil {
		s.log.Warn("reading the job's lag", "job", j.Name, "err", err)
		return
	}
	lag := map[string]int64{}
	for _, p := range status.Partitions {
		if p.Err == nil {
			lag[p.Topic] += p.Lag
		}
	}
	s.mu.Lock()
	st.lag, rec.Lag = lag, lag
	s.mu.Unlock()
	for t, n := range lag {
		s.metrics.lag.WithLabelValues(j.Name, t).Set(float64(n))
	}
}

// markInterrupted closes the record of a run whose scheduler died (or lost
// its lease) while it held the lease: this run resumes its plan.
func (s *Scheduler) markInterrupted(fs fsys.FS, job string, prev LeaseInfo) {
	marked, err := MarkInterrupted(fs, job, prev)
	if err != nil {
		s.log.Warn("marking an interrupted run", "job", job, "run", prev.Run, "err", err)
		return
	}
	if marked {
		s.metrics.runs.WithLabelValues(job, Interrupted).Inc()
		s.log.Warn("an earlier run was interrupted; resuming its plan", "job", job, "run", prev.Run, "owner", prev.Owner)
	}
}

// MarkInterrupted closes the history record of the run that held the lease
// generation prev, if it is a scheduler's run still marked running: its
// holder died, and whoever took the lease over (a scheduler, or `load run`)
// resumes its plan. It says whether there was such a record.
func MarkInterrupted(fs fsys.FS, job string, prev LeaseInfo) (bool, error) {
	if prev.Run == "" || prev.Released {
		return false, nil
	}
	r, err := readRecord(fs, job, prev.Run)
	if err != nil || (r.Outcome != Running && r.Outcome != Retrying) {
		return false, nil
	}
	r.Outcome = Interrupted
	r.Ended = prev.Expires
	r.Error = fmt.Sprintf("%s stopped renewing its lease (generation %d) while running; the next run resumed its plan", prev.Owner, prev.Generation)
	if n := len(r.Attempts); n > 0 && r.Attempts[n-1].Ended.IsZero() {
		r.Attempts[n-1].Ended, r.Attempts[n-1].Error = prev.Expires, "interrupted"
	}
	if err := writeRecord(fs, r); err != nil {
		return false, err
	}
	return true, nil
}

// persist writes a record (and any that could not be written before) to
// the job's history; fs nil opens the target. A target that is down keeps
// them in memory, for the next write to retry.
func (s *Scheduler) persist(st *jobState, j *Job, cfg *Config, rec *Record, fs fsys.FS) {
	s.mu.Lock()
	snap := cloneRecord(rec)
	pending := append([]*Record(nil), st.pending...)
	s.mu.Unlock()
	if fs == nil {
		opts := s.sinkOptions(j)
		var err error
		if fs, err = fsys.Open(j.Target, opts); err != nil {
			s.keepPending(st, snap, err)
			return
		}
		defer fs.Close()
	}
	for _, r := range append(pending, snap) {
		if err := writeRecord(fs, r); err != nil {
			s.keepPending(st, snap, err)
			return
		}
	}
	s.mu.Lock()
	st.pending = st.pending[len(pending):]
	s.mu.Unlock()
	if snap.Outcome != Running && snap.Outcome != Retrying {
		if err := expireRecords(fs, j.Name, cfg.KeepRuns, cfg.RunsMaxAge, time.Now()); err != nil {
			s.log.Warn("expiring old run records", "job", j.Name, "err", err)
		}
	}
}

func (s *Scheduler) keepPending(st *jobState, r *Record, err error) {
	s.log.Warn("cannot write the run's record to the target now; kept for the next write", "job", r.Job, "run", r.ID, "err", err)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, p := range st.pending {
		if p.ID == r.ID {
			st.pending[i] = r
			return
		}
	}
	st.pending = append(st.pending, r)
}

// cloneRecord copies a record deeply (mu must be held, or the record
// private).
func cloneRecord(r *Record) *Record {
	if r == nil {
		return nil
	}
	b, _ := json.Marshal(r)
	var c Record
	json.Unmarshal(b, &c)
	return &c
}
