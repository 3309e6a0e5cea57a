package jobs

import (
	"context"
	"sort"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
)

// JobView is a job as the API shows it.
type JobView struct {
	Name        string   `json:"name"`
	Target      string   `json:"target,omitempty"`
	Topics      []string `json:"topics,omitempty"`
	TopicsRegex string   `json:"topicsRegex,omitempty"`
	Schedule    string   `json:"schedule,omitempty"`
	Executor    string   `json:"executor,omitempty"`
	Parallelism int      `json:"parallelism,omitempty"`
	Enabled     bool     `json:"enabled"`
	// Paused is "" (not paused), "config" (paused: true in the file) or
	// "api" (tributary jobs pause; kept in the target).
	Paused string `json:"paused,omitempty"`
	// State is idle, running, retrying, disabled or invalid.
	State   string     `json:"state"`
	Next    *time.Time `json:"next,omitempty"`
	Current *Record    `json:"current,omitempty"`
	Last    *Record    `json:"last,omitempty"`
	// Skipped says why the last scheduled time did not run.
	Skipped string           `json:"skipped,omitempty"`
	Lag     map[string]int64 `json:"lag,omitempty"`
	// Problem is a rejected definition; the one in force is the previous.
	Problem *FieldError `json:"problem,omitempty"`
	Def     *Def        `json:"definition,omitempty"`
}

// Overview is GET /jobs.
type Overview struct {
	Owner    string        `json:"owner"`
	File     string        `json:"file"`
	Loaded   time.Time     `json:"loaded"`
	FileErr  string        `json:"fileError,omitempty"` // the file's latest version was not applied
	Problems []*FieldError `json:"problems,omitempty"`
	Jobs     []JobView     `json:"jobs"`
}

// Overview describes every job.
func (s *Scheduler) Overview() Overview {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := Overview{Owner: s.opts.Owner, File: s.opts.ConfigPath, Loaded: s.loaded, Problems: s.problems, Jobs: []JobView{}}
	if s.fileErr != nil {
		o.FileErr = s.fileErr.Error()
	}
	names := append([]string(nil), s.order...)
	seen := map[string]bool{}
	for _, n := range names {
		seen[n] = true
	}
	for n := range s.jobs {
		if !seen[n] {
			names = append(names, n)
		}
	}
	for _, n := range names {
		if st := s.jobs[n]; st != nil {
			o.Jobs = append(o.Jobs, s.viewLocked(st, false))
		}
	}
	return o
}

// Job describes one job, with its definition.
func (s *Scheduler) Job(name string) (JobView, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.jobs[name]
	if st == nil {
		return JobView{}, false
	}
	return s.viewLocked(st, true), true
}

// mu must be held.
func (s *Scheduler) viewLocked(st *jobState, full bool) JobView {
	v := JobView{Name: st.name, Problem: st.problem, Skipped: st.skip, Lag: st.lag,
		Current: cloneRecord(st.current), Last: cloneRecord(st.last)}
	j := st.job
	if j == nil {
		v.State = "invalid"
		return v
	}
	v.Target, v.Topics, v.TopicsRegex = j.Target, j.Topics, j.TopicsRegex
	v.Schedule, v.Executor, v.Parallelism, v.Enabled = scheduleText(j), j.Executor, j.Parallelism, j.Enabled
	switch {
	case j.Paused:
		v.Paused = "config"
	case st.paused != nil:
		v.Paused = "api"
	}
	switch {
	case !j.Enabled:
		v.State = "disabled"
	case st.current != nil && st.current.Outcome == Retrying:
		v.State = "retrying"
	case st.current != nil:
		v.State = "running"
	default:
		v.State = "idle"
	}
	if !st.next.IsZero() && v.Paused == "" {
		t := st.next
		v.Next = &t
	}
	if full {
		d := j.Def
		v.Def = &d
	}
	return v
}

// Runs is a job's history, newest first: the records in the target, with
// the run in progress and those the target could not take yet.
func (s *Scheduler) Runs(ctx context.Context, name string, limit int) ([]*Record, error) {
	s.mu.Lock()
	st := s.jobs[name]
	var j *Job
	var local []*Record
	if st != nil {
		j = st.job
		for _, r := range st.pending {
			local = append(local, cloneRecord(r))
		}
		if st.current != nil {
			local = append(local, cloneRecord(st.current))
		}
	}
	s.mu.Unlock()
	if st == nil {
		return nil, ErrUnknownJob
	}
	if j == nil {
		return nil, st.problem
	}
	opts := s.sinkOptions(j)
	byID := map[string]*Record{}
	var ferr error
	if fs, err := fsys.Open(j.Target, opts); err != nil {
		ferr = err
	} else {
		recs, err := ReadHistory(fs, name, limit)
		fs.Close()
		ferr = err
		for _, r := range recs {
			byID[r.ID] = r
		}
	}
	for _, r := range local {
		byID[r.ID] = r // newer than the target's copy
	}
	out := make([]*Record, 0, len(byID))
	for _, r := range byID {
		out = append(out, r)
	}
	sort.Slice(out, func(i, k int) bool { return out[i].ID > out[k].ID })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, ferr
}
