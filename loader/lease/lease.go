package lease

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
)

// The lease keeps two processes (two schedulers on two machines, a
// restarted one and a stale one, `tributary load run` started by cron while
// the last one still runs) from running one job at once. It lives in the
// job's target, the one thing every holder of the job shares, as generation
// files:
//
//	<target>/_tributary/jobs/<job>/lease/00000000000000000042
//
// each a JSON Info. The file with the highest generation is the lease;
// older ones are history, removed by the next holder. A generation file is
// created once, exclusively (fsys.FS.Create fails with ErrExist), and only
// its creator rewrites it (WriteFileAtomic: renewals, release).
//
// Why generations. HDFS has no compare-and-swap, and rename overwrites
// (colinmarc's Rename is rename2 with OVERWRITE), so "replace the lease if
// it is still the expired one" cannot be one step. Delete-then-create is
// unsafe: A and B both see the lease expired, A deletes it and creates its
// own, then B deletes A's and creates its own, and both run. Exclusive
// creation of generation N+1 turns the takeover into the one step HDFS does
// atomically: of all the schedulers that saw N expired, exactly one creates
// N+1.
//
// The protocol:
//
//	Acquire: list; read the highest generation N. Unless it is released or
//	  expired (now > expires + max clock skew), the job is busy. Create N+1
//	  exclusively (exists: someone else won). List again: N+1 must be the
//	  highest (a stale taker that created an old number, after the holder
//	  removed it, sees it is not). Read N again: if its holder renewed it
//	  between our two reads, remove N+1 and report the job busy.
//	Renew (every TTL/3): rewrite our file with a new expiry, then list: a
//	  higher generation means the lease was taken over, and is lost.
//	Hold: the holder trusts the lease only until the time at which it
//	  started its last confirmed renewal plus TTL, less a margin, measured on
//	  its own monotonic clock. Past that, Check fails and the run's context
//	  is cancelled, even if HDFS is unreachable and nothing can be read.
//	Release: rewrite our file with Released set, so that the next run need
//	  not wait for the expiry.
//
// Why this excludes two holders, given clocks within max_clock_skew: a
// taker writes N+1 only after now > expires(N) + skew, that is after the
// real time at which N's holder stopped trusting its last confirmed
// renewal. A renewal of N that was in flight then is confirmed only by a
// listing made after its write; if the taker's re-read of N came before
// that write, the taker's N+1 was created before it too, and the holder's
// listing sees N+1 and gives up. If the re-read came after the write, the
// taker sees the new expiry and backs off. The holder's own deadline needs
// no I/O, so a holder cut off from HDFS stops by itself.
//
// What is left: a holder that passed Check an instant before its deadline
// may finish the step Check guarded (the loader checks before saving a plan
// and before the commit point, loader.Hooks.Fence) while a taker starts;
// the margin (a tenth of the TTL) is what covers that step. A paused process
// (SIGSTOP, a VM freeze) longer than the margin in the middle of that step
// is the classic case no lease without fencing tokens can exclude; the
// loader's idempotent steps keep the lake exact in every interleaving, and
// a plan made from offsets that another holder committed meanwhile commits
// nothing (loader: a superseded plan), so even then no range is loaded or
// counted twice.
//
// Workers. `load worker` processes take no lease: they work for the run
// whose lease names their plan (Info.Plan, set by SetPlan before the run
// executes it), or while nobody holds the job, and stop when a run of
// another plan holds it (Worker). A unit's result is the only thing a
// worker writes outside its own attempt directory, and it checks before
// writing it.
const leaseDirName = "lease"

// Info is the content of a lease generation file.
type Info struct {
	Job        string    `json:"job"`
	Generation int64     `json:"generation"`
	Owner      string    `json:"owner"`
	Host       string    `json:"host,omitempty"`
	PID        int       `json:"pid,omitempty"`
	Acquired   time.Time `json:"acquired"`
	Renewed    time.Time `json:"renewed"`
	Expires    time.Time `json:"expires"`
	Released   bool      `json:"released,omitempty"`
	// Run is the holder's run: the jobs scheduler's history record, or the
	// id a `load` command made for itself, so that the next holder can mark
	// it interrupted if its holder died, and so that a busy message names
	// it.
	Run string `json:"run,omitempty"`
	// Plan is the loader run (plan) the holder executes now. `load worker`
	// processes of that plan work under this lease: they are part of the
	// holder's run, not rivals (Worker).
	Plan string `json:"plan,omitempty"`
}

// Live says whether the lease is held at now, given the clock skew.
func (i Info) Live(now time.Time, skew time.Duration) bool {
	return !i.Released && !now.After(i.Expires.Add(skew))
}

// Holder describes who holds the lease, for messages.
func (i Info) Holder() string {
	var b strings.Builder
	b.WriteString(i.Owner)
	if i.Host != "" {
		fmt.Fprintf(&b, " (host %s, pid %d)", i.Host, i.PID)
	}
	if i.Run != "" {
		fmt.Fprintf(&b, ", run %s", i.Run)
	}
	if i.Plan != "" {
		fmt.Fprintf(&b, ", plan %s", i.Plan)
	}
	if !i.Acquired.IsZero() {
		fmt.Fprintf(&b, ", since %s", i.Acquired.Format(time.RFC3339))
	}
	return b.String()
}

// ErrBusy says another process holds a job's lease.
var ErrBusy = errors.New("lease: the job is running elsewhere")

// BusyError names the lease's holder.
type BusyError struct{ Holder Info }

func (e *BusyError) Error() string {
	return fmt.Sprintf("job %q is busy: held by %s (lease generation %d, expires %s)",
		e.Holder.Job, e.Holder.Holder(), e.Holder.Generation, e.Holder.Expires.Format(time.RFC3339))
}
func (e *BusyError) Unwrap() error { return ErrBusy }

// ErrLeaseLost says a run's lease expired or was taken over.
var ErrLeaseLost = errors.New("lease: the job's lease was lost")

// Lease is a held lease. Its renewal goroutine runs until Release; Done is
// closed when the lease is lost.
type Lease struct {
	fs    fsys.FS
	info  Info
	dir   string
	ttl   time.Duration
	clock func() time.Time

	// wmu serializes the holder's writes of its file (renewals, SetPlan,
	// Release), so that none undoes what another wrote. Taken before mu.
	wmu      sync.Mutex
	mu       sync.Mutex
	deadline time.Time // monotonic; mu
	lost     error     // mu
	done     chan struct{}
	stop     chan struct{}
	stopped  chan struct{}

	releaseOnce sync.Once

	// Previous is the generation this one took over from (zero if none):
	// unless it was released, its run was interrupted.
	Previous Info
}

// Config is what Acquire needs beyond the file system.
type Config struct {
	// TTL is how long the lease lasts without renewal (renewed every
	// TTL/3); Skew the largest difference between the clocks of two
	// holders.
	TTL, Skew time.Duration
	// Owner names the holder; Host and PID default to this process's.
	Owner string
	Host  string
	PID   int
	// Now is the wall clock, for the file's times (default time.Now).
	Now func() time.Time
}

func (c *Config) defaults() {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Host == "" {
		c.Host, _ = os.Hostname()
	}
	if c.PID == 0 {
		c.PID = os.Getpid()
	}
	if c.Owner == "" {
		c.Owner = fmt.Sprintf("%s/%d", c.Host, c.PID)
	}
}

// jobsDir holds each job's files beside the loader's: the lease here, the
// history of the jobs scheduler beside it.
const jobsDir = "_tributary/jobs"

// Dir is the directory of a job's lease generations.
func Dir(job string) string { return jobsDir + "/" + job + "/" + leaseDirName }

// Acquire takes the job's lease, or fails with a *BusyError.
func Acquire(fs fsys.FS, job, run string, c Config) (*Lease, error) {
	c.defaults()
	dir := Dir(job)
	gens, err := listGenerations(fs, dir)
	if err != nil {
		return nil, err
	}
	var prev Info
	var top int64
	if len(gens) > 0 {
		top = gens[len(gens)-1]
		prev, err = readLease(fs, dir, top, c.TTL)
		if err != nil {
			return nil, err
		}
		if prev.Live(c.Now(), c.Skew) {
			return nil, &BusyError{prev}
		}
	}
	start := time.Now()
	wall := c.Now().UTC()
	l := &Lease{
		fs: fs, dir: dir, ttl: c.TTL, clock: c.Now,
		info:     Info{Job: job, Generation: top + 1, Owner: c.Owner, Host: c.Host, PID: c.PID, Acquired: wall, Renewed: wall, Expires: wall.Add(c.TTL), Run: run},
		deadline: start.Add(c.TTL - c.TTL/10),
		done:     make(chan struct{}), stop: make(chan struct{}), stopped: make(chan struct{}),
		Previous: prev,
	}
	b, _ := json.Marshal(l.info)
	w, err := fs.Create(genPath(dir, l.info.Generation))
	if fsys.IsExist(err) {
		theirs, rerr := readLease(fs, dir, l.info.Generation, c.TTL)
		if rerr != nil {
			return nil, rerr
		}
		return nil, &BusyError{theirs}
	}
	if err != nil {
		return nil, fmt.Errorf("creating the lease of job %q: %w", job, err)
	}
	if _, err := w.Write(b); err != nil {
		w.Close()
		return nil, fmt.Errorf("writing the lease of job %q: %w", job, err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("writing the lease of job %q: %w", job, err)
	}
	mine := genPath(dir, l.info.Generation)
	if gens, err = listGenerations(fs, dir); err != nil {
		return nil, err
	}
	if len(gens) == 0 {
		// Removed between our create and the listing (the job's files
		// deleted, or a store whose listing lags): not ours to trust.
		fs.RemoveAll(mine)
		return nil, fmt.Errorf("the lease of job %q: %s is gone right after it was created", job, mine)
	}
	if last := gens[len(gens)-1]; last != l.info.Generation {
		fs.RemoveAll(mine)
		holder, _ := readLease(fs, dir, last, c.TTL)
		return nil, &BusyError{holder}
	}
	if top > 0 {
		again, err := readLease(fs, dir, top, c.TTL)
		if err != nil {
			fs.RemoveAll(mine)
			return nil, err
		}
		if again.Expires != prev.Expires || again.Released != prev.Released {
			if again.Live(c.Now(), c.Skew) {
				fs.RemoveAll(mine)
				return nil, &BusyError{again}
			}
		}
	}
	// Older generations are history now; a taker that still aims at one of
	// them fails the "highest" check above.
	for _, g := range gens[:len(gens)-1] {
		fs.RemoveAll(genPath(dir, g))
	}
	go l.renewLoop()
	return l, nil
}

func genPath(dir string, gen int64) string { return fmt.Sprintf("%s/%020d", dir, gen) }

func listGenerations(fs fsys.FS, dir string) ([]int64, error) {
	ents, err := fs.ReadDir(dir)
	if fsys.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s/%s: %w", fs, dir, err)
	}
	var out []int64
	for _, e := range ents {
		if g, err := strconv.ParseInt(e.Name(), 10, 64); err == nil && len(e.Name()) == 20 {
			out = append(out, g) // ReadDir sorts by name, and names are zero-padded
		}
	}
	return out, nil
}

// readLease reads a generation file. One being written (on HDFS a file is
// visible, empty, before its writer closes it) is held: its expiry is its
// modification time plus the TTL.
func readLease(fs fsys.FS, dir string, gen int64, ttl time.Duration) (Info, error) {
	p := genPath(dir, gen)
	b, err := fs.ReadFile(p)
	if fsys.IsNotExist(err) {
		// Removed since the listing: a newer holder cleaned up. Busy.
		return Info{Generation: gen, Owner: "(a newer holder)", Expires: time.Now().Add(ttl)}, nil
	}
	if err != nil {
		return Info{}, fmt.Errorf("reading the lease %s/%s: %w", fs, p, err)
	}
	var info Info
	if err := json.Unmarshal(b, &info); err != nil || info.Generation != gen {
		fi, serr := fs.Stat(p)
		mtime := time.Now()
		if serr == nil {
			mtime = fi.ModTime()
		}
		return Info{Generation: gen, Owner: "(being written)", Expires: mtime.Add(ttl)}, nil
	}
	return info, nil
}

// Info is the lease as last written.
func (l *Lease) Info() Info {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.info
}

// Check fails once the lease may no longer be trusted. It does no I/O, so
// it is cheap enough to call before every step that must be fenced.
func (l *Lease) Check(context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost != nil {
		return l.lost
	}
	if time.Now().After(l.deadline) {
		l.loseLocked(fmt.Errorf("%w: not renewed within %s", ErrLeaseLost, l.ttl-l.ttl/10))
		return l.lost
	}
	return nil
}

// Done is closed when the lease is lost.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Err is why the lease was lost, nil while it is held.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost
}

// mu must be held.
func (l *Lease) loseLocked(err error) {
	if l.lost == nil {
		l.lost = err
		close(l.done)
	}
}

func (l *Lease) renewLoop() {
	defer close(l.stopped)
	t := time.NewTicker(l.ttl / 3)
	defer t.Stop()
	for {
		l.mu.Lock()
		wait := time.Until(l.deadline)
		l.mu.Unlock()
		timeout := time.NewTimer(max(wait, 0))
		select {
		case <-l.stop:
			timeout.Stop()
			return
		case <-timeout.C:
			l.Check(context.Background())
			return
		case <-t.C:
			timeout.Stop()
			if err := l.renew(); err != nil {
				if errors.Is(err, ErrLeaseLost) {
					return
				}
				// An I/O error: the next tick retries, and the deadline
				// ends the lease if none succeeds.
				continue
			}
		}
	}
}

// renew extends the lease, then confirms that nobody took it over.
func (l *Lease) renew() error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err := l.Check(context.Background()); err != nil {
		return err
	}
	start := time.Now()
	l.mu.Lock()
	info := l.info
	l.mu.Unlock()
	info.Renewed = l.clock().UTC()
	info.Expires = info.Renewed.Add(l.ttl)
	b, _ := json.Marshal(info)
	if err := l.fs.WriteFileAtomic(genPath(l.dir, info.Generation), b); err != nil {
		return err
	}
	gens, err := listGenerations(l.fs, l.dir)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(gens) == 0 {
		l.loseLocked(fmt.Errorf("%w: its file is gone", ErrLeaseLost))
		return l.lost
	}
	if gens[len(gens)-1] != info.Generation {
		l.loseLocked(fmt.Errorf("%w: taken over (generation %d)", ErrLeaseLost, gens[len(gens)-1]))
		return l.lost
	}
	if l.lost == nil {
		l.info.Renewed, l.info.Expires = info.Renewed, info.Expires
		l.deadline = start.Add(l.ttl - l.ttl/10)
	}
	return l.lost
}

// Release stops renewing and marks the lease released, so that the next run
// (here or elsewhere) need not wait for it to expire. A lease already lost
// is left alone.
func (l *Lease) Release() error {
	first := false
	l.releaseOnce.Do(func() { first = true })
	if !first {
		return nil
	}
	close(l.stop)
	<-l.stopped
	l.wmu.Lock()
	defer l.wmu.Unlock()
	l.mu.Lock()
	lost := l.lost
	info := l.info
	l.loseLocked(errors.New("lease: released"))
	l.mu.Unlock()
	if lost != nil {
		return nil
	}
	info.Released = true
	info.Expires = l.clock().UTC()
	b, _ := json.Marshal(info)
	return l.fs.WriteFileAtomic(genPath(l.dir, info.Generation), b)
}

// SetPlan names the plan the holder executes now, in the lease file, so
// that `load worker` processes of that plan know they work under it. It
// fails once the lease is lost.
func (l *Lease) SetPlan(plan string) error {
	l.wmu.Lock()
	defer l.wmu.Unlock()
	if err := l.Check(context.Background()); err != nil {
		return err
	}
	l.mu.Lock()
	l.info.Plan = plan
	info := l.info
	l.mu.Unlock()
	b, _ := json.Marshal(info)
	return l.fs.WriteFileAtomic(genPath(l.dir, info.Generation), b)
}

// AcquireWait is Acquire, retried while the job is busy until wait has
// passed (0: one try). It polls a few times per TTL, and at least every
// second, so that a released lease is taken soon after.
func AcquireWait(ctx context.Context, fs fsys.FS, job, run string, c Config, wait time.Duration) (*Lease, error) {
	deadline := time.Now().Add(wait)
	every := min(max(c.TTL/10, 100*time.Millisecond), time.Second)
	for {
		l, err := Acquire(fs, job, run, c)
		if err == nil || !errors.Is(err, ErrBusy) || !time.Now().Add(every).Before(deadline) {
			return l, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (stopped waiting: %v)", err, ctx.Err())
		case <-time.After(every):
		}
	}
}

// Current reads the job's lease as it is now: the highest generation, and
// whether it is held. No generation at all is a free lease, zero Info.
func Current(fs fsys.FS, job string, ttl, skew time.Duration) (Info, bool, error) {
	dir := Dir(job)
	gens, err := listGenerations(fs, dir)
	if err != nil || len(gens) == 0 {
		return Info{}, false, err
	}
	info, err := readLease(fs, dir, gens[len(gens)-1], ttl)
	if err != nil {
		return Info{}, false, err
	}
	if info.Job == "" {
		info.Job = job
	}
	return info, info.Live(time.Now(), skew), nil
}

// ErrNotPlanHolder says a worker's plan is not the one the job's live lease
// runs: another run holds the job.
var ErrNotPlanHolder = errors.New("lease: the job's lease is held by another run")

// Worker decides whether a `load worker` process of plan may run its units
// now. Workers of one plan are part of the run that holds the lease for
// that plan (its Plan field names it), not rivals: they take no lease of
// their own. A live lease naming another plan (or none yet) means another
// run holds the job, and the worker must not race it: ErrNotPlanHolder, as
// a *BusyError. A free lease (released, expired, never taken) means no run
// holds the job: workers of a plan saved by `load plan --save` run then,
// and the next `load run` commits their work.
func Worker(fs fsys.FS, job, plan string, ttl, skew time.Duration) error {
	info, live, err := Current(fs, job, ttl, skew)
	if err != nil {
		return err
	}
	if live && info.Plan != plan {
		return fmt.Errorf("%w: %w", ErrNotPlanHolder, &BusyError{info})
	}
	return nil
}
