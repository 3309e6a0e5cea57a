package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/jobs"
	"github.com/tributary-io/tributary/loader"
	"github.com/tributary-io/tributary/loader/lease"
)

// exitBusy is the exit status of a load command that found its job held by
// another run: sysexits' EX_TEMPFAIL, so that a cron wrapper can tell
// "busy, try later" from "failed".
const exitBusy = 75

// Defaults of the job lease the load commands take: those of the jobs
// scheduler, which takes the same lease.
const (
	defaultLeaseTTL  = 30 * time.Second
	defaultClockSkew = 2 * time.Second
)

// leaseFlags are the flags of the commands that take the job's lease.
type leaseFlags struct {
	wait, ttl, skew time.Duration
}

func (f *leaseFlags) add(fs *pflag.FlagSet) {
	fs.DurationVar(&f.wait, "wait", 0, "if another run holds the job, wait up to this long for it (0: exit at once with status 75)")
	fs.DurationVar(&f.ttl, "lease-ttl", defaultLeaseTTL, "how long the job's lease lasts without renewal: a run that died is taken over after it (with --max-clock-skew)")
	fs.DurationVar(&f.skew, "max-clock-skew", defaultClockSkew, "the largest difference between the clocks of the machines that run the job")
}

func (f *leaseFlags) config(what string) lease.Config {
	return lease.Config{TTL: f.ttl, Skew: f.skew, Owner: "tributary " + what}
}

func (f *leaseFlags) validate() error {
	if f.ttl < 3*time.Second {
		// As lease_ttl of `tributary jobs`: renewed every third of it, a
		// shorter lease is lost to one slow write.
		return fmt.Errorf("--lease-ttl %v: want at least 3s (it is renewed every third of it)", f.ttl)
	}
	if f.skew < 0 || f.wait < 0 {
		return errors.New("--max-clock-skew and --wait must not be negative")
	}
	return nil
}

// hold takes the job's lease for a run of command what, waiting up to
// --wait, and ties the run to it: the returned context ends when the lease
// is lost, and the loader fences its commit with it. release ends the hold.
func (f *leaseFlags) hold(ctx context.Context, l *loader.Loader, job, what string) (context.Context, func(), error) {
	if err := f.validate(); err != nil {
		return nil, nil, err
	}
	run := time.Now().UTC().Format("20060102T150405.000Z") + "-" + randomID()
	held, err := lease.AcquireWait(ctx, l.FS, job, run, f.config(what), f.wait)
	if err != nil {
		return nil, nil, err
	}
	if prev := held.Previous; prev.Generation > 0 && !prev.Released {
		slog.Warn("took over the job's lease from a holder that stopped renewing it; resuming its plan if it left one open",
			"job", job, "holder", prev.Holder(), "generation", prev.Generation, "expired", prev.Expires)
		// A scheduler's run that died keeps no "running" record behind.
		if _, err := jobs.MarkInterrupted(l.FS, job, prev); err != nil {
			slog.Warn("marking the dead holder's run interrupted in the jobs history", "job", job, "run", prev.Run, "err", err)
		}
	}
	l.Lease = held
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-held.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		cancel()
		if err := held.Release(); err != nil {
			slog.Warn("releasing the job's lease (the next run waits for it to expire)", "job", job, "err", err)
		}
	}, nil
}

// leaseErr says why a run stopped when its lease was lost, rather than the
// cancellation that loss caused.
func leaseErr(l *loader.Loader, err error) error {
	if err != nil && l.Lease != nil {
		if lerr := l.Lease.Err(); lerr != nil && errors.Is(lerr, lease.ErrLeaseLost) {
			return fmt.Errorf("%w (%v)", lerr, err)
		}
	}
	return err
}

// workerFence lets a `load worker` process run units of plan p only while no
// other run holds the job (lease.Worker); with --wait it waits for that.
func (f *leaseFlags) workerFence(ctx context.Context, fs fsys.FS, p *loader.Plan) (func(context.Context) error, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	check := func(context.Context) error { return lease.Worker(fs, p.Job, p.Run, f.ttl, f.skew) }
	deadline := time.Now().Add(f.wait)
	for {
		err := check(ctx)
		if err == nil || !errors.Is(err, lease.ErrBusy) || !time.Now().Before(deadline) {
			return check, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(min(max(f.ttl/10, 100*time.Millisecond), time.Second)):
		}
	}
}

func randomID() string {
	b := make([]byte, 3)
	rand.Read(b)
	return hex.EncodeToString(b)
}
