package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tributary-io/tributary/internal/fsys"
)

// Options configure a Scheduler.
type Options struct {
	// ConfigPath is the jobs file; it is read again when it changes.
	ConfigPath string
	// IsFlag says whether a top-level key of the file is a flag of the
	// command (those belong to the command, not to the jobs).
	IsFlag func(key string) bool
	// Bootstrap and HDFSUser are the defaults of jobs that set none.
	Bootstrap string
	HDFSUser  string
	// Kerberos is how every job logs in to a Kerberized HDFS (one login
	// for the scheduler, not one per job).
	Kerberos fsys.Kerberos
	// Binary is the tributary executable the process executor starts
	// (default: this process's own).
	Binary string
	// Owner names this scheduler in leases and history (default
	// host/pid/random).
	Owner string
	// ReloadEvery is how often the file's modification is checked (2 s).
	ReloadEvery time.Duration
	Log         *slog.Logger
	// Registry receives the metrics; nil makes a private one.
	Registry prometheus.Registerer
}

// Scheduler runs the jobs of a jobs file on their schedules.
//
// Concurrency: each job has one goroutine (loop) that waits for the job's
// next time or a trigger and then runs it, retries included, so a job never
// runs twice at once in one scheduler; the lease does the same across
// schedulers. The reload goroutine replaces definitions; the HTTP handlers
// read. Everything shared (the job table, each job's definition, its
// current and last record) is guarded by mu; a job's goroutine takes mu
// only to publish, never while it does I/O.
type Scheduler struct {
	opts    Options
	log     *slog.Logger
	metrics *metrics

	mu       sync.Mutex
	cfg      *Config // last applied
	jobs     map[string]*jobState
	order    []string // names as in the file
	fileErr  error    // why the file's latest version was not applied
	problems []*FieldError
	loaded   time.Time
	ctx      context.Context // of Run, for the job goroutines
	wg       sync.WaitGroup
}

// jobState is a job's scheduling state. Fields are guarded by
// Scheduler.mu; the channels are not.
type jobState struct {
	name    string
	job     *Job        // the definition in force; nil if never valid
	problem *FieldError // a rejected edit; the previous definition stays
	next    time.Time   // when it runs next, zero if not scheduled
	current *Record     // the run in progress
	last    *Record     // the last run that ended here
	skip    string      // why the last scheduled time did not run
	paused  *pauseMark  // the target's pause marker, as last read
	lag     map[string]int64
	pending []*Record // records not yet written to the target (it was down)

	wake    chan struct{} // the definition changed
	trigger chan struct{} // a manual run (one may wait)
	cancel  context.CancelFunc
	done    chan struct{}
}

// New makes a scheduler; Run starts it.
func New(opts Options) *Scheduler {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.ReloadEvery <= 0 {
		opts.ReloadEvery = 2 * time.Second
	}
	if opts.Owner == "" {
		host, _ := os.Hostname()
		opts.Owner = fmt.Sprintf("%s/%d/%s", host, os.Getpid(), randomHex(2))
	}
	if opts.Binary == "" {
		opts.Binary, _ = os.Executable()
	}
	reg := opts.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	return &Scheduler{opts: opts, log: opts.Log.With("owner", opts.Owner), metrics: newMetrics(reg), jobs: map[string]*jobState{}}
}

// Owner is this scheduler's name in leases and history.
func (s *Scheduler) Owner() string { return s.opts.Owner }

// Load reads the jobs file for the first time. A file that cannot be used
// at all is an error; bad job definitions are logged and left out.
func (s *Scheduler) Load() error {
	cfg, err := ReadConfig(s.opts.ConfigPath, s.opts.IsFlag)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.cfg = cfg
	s.mu.Unlock()
	return nil
}

// Run runs the jobs until ctx ends, then waits for their runs to stop.
// Load must have succeeded.
func (s *Scheduler) Run(ctx context.Context) error {
	if err := s.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	s.Wait()
	return nil
}

// Start puts the loaded jobs in force and starts their goroutines; they
// run until ctx ends. The API answers for every job once Start returns.
func (s *Scheduler) Start(ctx context.Context) error {
	s.mu.Lock()
	cfg := s.cfg
	s.ctx = ctx
	s.mu.Unlock()
	if cfg == nil {
		return errors.New("jobs: Start before Load")
	}
	s.apply(cfg)
	s.wg.Go(func() { s.watch(ctx) })
	return nil
}

// Wait waits, after Start's context ended, until every run has stopped.
func (s *Scheduler) Wait() {
	s.mu.Lock()
	for _, st := range s.jobs {
		if st.cancel != nil {
			st.cancel()
		}
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// apply puts a parsed file in force. A job whose new definition is bad
// keeps its previous one; a job no longer in the file stops.
func (s *Scheduler) apply(cfg *Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cfg, s.fileErr, s.loaded = cfg, nil, time.Now()
	s.problems = cfg.Problems
	bad := map[string]*FieldError{}
	for _, p := range cfg.Problems {
		s.log.Error("bad job definition; it keeps its previous definition, if any", "err", p.Error())
		bad[strings.Trim(p.Job, `"`)] = p
	}
	keep := map[string]bool{}
	s.order = s.order[:0]
	for _, j := range cfg.Jobs {
		keep[j.Name] = true
		s.order = append(s.order, j.Name)
		st := s.jobs[j.Name]
		switch {
		case st == nil:
			st = &jobState{name: j.Name, job: j, wake: make(chan struct{}, 1), trigger: make(chan struct{}, 1)}
			s.jobs[j.Name] = st
			s.start(st)
			s.log.Info("job added", "job", j.Name, "schedule", scheduleText(j), "target", j.Target)
		case st.job == nil:
			st.job, st.problem = j, nil
			s.start(st)
			s.log.Info("job added", "job", j.Name, "schedule", scheduleText(j), "target", j.Target)
		case !st.job.equal(j):
			st.job, st.problem = j, nil
			poke(st.wake)
			s.log.Info("job changed", "job", j.Name, "schedule", scheduleText(j))
		default:
			st.problem = nil
		}
	}
	for name, p := range bad {
		if keep[name] {
			continue
		}
		keep[name] = true
		s.order = append(s.order, name)
		if st := s.jobs[name]; st != nil {
			st.problem = p
			continue
		}
		// Never valid: listed, with its problem, so the API shows it.
		s.jobs[name] = &jobState{name: name, problem: p, wake: make(chan struct{}, 1), trigger: make(chan struct{}, 1)}
	}
	for name, st := range s.jobs {
		if !keep[name] {
			if st.cancel != nil {
				st.cancel()
			}
			delete(s.jobs, name)
			s.metrics.forget(name)
			s.log.Info("job removed", "job", name)
		}
	}
	s.metrics.configProblems.Set(float64(len(cfg.Problems)))
}

// start starts a job's goroutine. mu must be held.
func (s *Scheduler) start(st *jobState) {
	ctx, cancel := context.WithCancel(s.ctx)
	st.cancel, st.done = cancel, make(chan struct{})
	s.metrics.init(st.name)
	s.wg.Go(func() {
		defer close(st.done)
		s.loop(ctx, st)
	})
}

// loop is a job's goroutine: wait for the next time or a trigger, run.
func (s *Scheduler) loop(ctx context.Context, st *jobState) {
	var last time.Time // the last scheduled time, run or skipped
	for {
		s.mu.Lock()
		j := st.job
		var (
			fire  <-chan time.Time
			timer *time.Timer
			next  time.Time
		)
		if j.Enabled && !j.Paused && j.Sched != nil {
			now := time.Now()
			base := last
			if base.IsZero() {
				base = now
			}
			next = j.Sched.Next(base)
			// Missed times (a run longer than the interval, a suspended
			// machine) are skipped, not caught up.
			for !next.IsZero() && next.Before(now) {
				next = j.Sched.Next(now)
			}
			if !next.IsZero() {
				timer = time.NewTimer(time.Until(next))
				fire = timer.C
			}
		}
		st.next = next
		s.mu.Unlock()
		stop := func() {
			if timer != nil {
				timer.Stop()
			}
		}
		select {
		case <-ctx.Done():
			stop()
			return
		case <-st.wake:
			stop()
		case <-st.trigger:
			stop()
			s.run(ctx, st, "manual", time.Now())
		case <-fire:
			last = next
			s.run(ctx, st, "schedule", next)
		}
	}
}

// Trigger asks for a run of the job now (after the current one, if one is
// running). It is refused for a disabled or unknown job.
func (s *Scheduler) Trigger(name string) (queued bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.jobs[name]
	if st == nil {
		return false, fmt.Errorf("%w: %q", ErrUnknownJob, name)
	}
	if st.job == nil {
		return false, fmt.Errorf("job %q has no valid definition: %v", name, st.problem)
	}
	if !st.job.Enabled {
		return false, fmt.Errorf("job %q is disabled (enabled: false in the jobs file)", name)
	}
	select {
	case st.trigger <- struct{}{}:
		return st.current != nil, nil
	default:
		return true, nil // one is waiting already: they are the same run
	}
}

// ErrUnknownJob says the jobs file has no such job.
var ErrUnknownJob = errors.New("jobs: no such job")

func poke(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func scheduleText(j *Job) string {
	if j.Sched == nil {
		return "manual"
	}
	return j.Sched.String()
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// sinkOptions are how every HDFS client of job j is opened: the job's own
// settings, the scheduler's defaults under them, and the scheduler's
// Kerberos login.
func (s *Scheduler) sinkOptions(j *Job) fsys.Options {
	opts := j.Sink
	if opts.User == "" {
		opts.User = s.opts.HDFSUser
	}
	opts.Kerberos = s.opts.Kerberos
	opts.Log = s.log
	return opts
}
