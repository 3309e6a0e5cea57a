package loader

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/kafkacli"
	"github.com/tributary-io/tributary/loader/lease"
)

// Loader runs the plan, execute and commit steps of a target's jobs.
type Loader struct {
	FS        fsys.FS
	Cluster   *kafkacli.Cluster
	Bootstrap string
	Log       *slog.Logger
	// Progress, if set, counts the records and bytes fetched.
	Progress *Progress
	// Now is the clock (tests move it); nil is time.Now.
	Now func() time.Time
	// Hooks guard and watch runs (the jobs scheduler's lease); see hooks.go.
	Hooks Hooks
	// Lease, if set, is the job's lease the run holds: steps that must be
	// fenced check it (unless Hooks.Fence is set), and it is told which
	// plan the run executes, for the plan's `load worker` processes.
	Lease *lease.Lease
	// OpenTier opens the brokers' remote tier for plans with FromTier;
	// nil opens it with default options.
	OpenTier func(uri string) (fsys.FS, error)
	tierOnce tierFS
}

func (l *Loader) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Loader) log() *slog.Logger {
	if l.Log != nil {
		return l.Log
	}
	return slog.Default()
}

// Progress counts a run's work for a progress line; safe for concurrent use.
type Progress struct {
	Total   atomic.Int64 // offsets planned
	Records atomic.Int64 // records fetched
	Bytes   atomic.Int64 // their key and value bytes
}

func (p *Progress) add(records, bytes int64) {
	if p != nil {
		p.Records.Add(records)
		p.Bytes.Add(bytes)
	}
}
