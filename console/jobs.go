package console

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// The jobs scheduler, when the console is given its API (--jobs): the
// Jobs pages show each load job's schedule, state, next run, lag and
// history, and forward trigger, pause and resume. The scheduler's JSON is
// read into the few fields shown here, so the console depends on its HTTP
// API (jobs/api.go), not on its package.

type jobRun struct {
	ID        string           `json:"id"`
	Trigger   string           `json:"trigger"`
	Started   time.Time        `json:"started"`
	Ended     time.Time        `json:"ended"`
	Outcome   string           `json:"outcome"`
	Error     string           `json:"error"`
	Records   int64            `json:"records"`
	Rows      int64            `json:"rows"`
	Bytes     int64            `json:"bytes"`
	Files     int              `json:"files"`
	Bad       int64            `json:"bad"`
	Lag       map[string]int64 `json:"lag"`
	NextRetry time.Time        `json:"nextAttempt"`
}

type jobView struct {
	Name     string           `json:"name"`
	Target   string           `json:"target"`
	Topics   []string         `json:"topics"`
	Schedule string           `json:"schedule"`
	Paused   string           `json:"paused"`
	State    string           `json:"state"`
	Next     *time.Time       `json:"next"`
	Current  *jobRun          `json:"current"`
	Last     *jobRun          `json:"last"`
	Skipped  string           `json:"skipped"`
	Lag      map[string]int64 `json:"lag"`
}

type jobsOverview struct {
	File    string    `json:"file"`
	FileErr string    `json:"fileError"`
	Jobs    []jobView `json:"jobs"`
}

type jobsClient struct {
	base string
	http *http.Client
}

func (j *jobsClient) call(ctx context.Context, method, path string, into any) error {
	req, err := http.NewRequestWithContext(ctx, method, j.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := j.http.Do(req)
	if err != nil {
		return fmt.Errorf("jobs API: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("jobs API: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = strings.TrimSpace(string(b))
		}
		return fmt.Errorf("jobs API %s %s: %d: %s", method, path, resp.StatusCode, e.Error)
	}
	if into == nil {
		return nil
	}
	return json.Unmarshal(b, into)
}

func (s *Server) noJobs(w http.ResponseWriter, r *http.Request) bool {
	if s.jobs != nil {
		return false
	}
	s.render(w, r, http.StatusNotFound, "error", page{Title: "Jobs", Error: "no jobs scheduler: start the console with --jobs URL"})
	return true
}

func (s *Server) jobsPage(w http.ResponseWriter, r *http.Request) {
	if s.noJobs(w, r) {
		return
	}
	ctx, cancel := ctxOf(r)
	defer cancel()
	var o jobsOverview
	if err := s.jobs.call(ctx, http.MethodGet, "/jobs", &o); err != nil {
		s.fail(w, r, "jobs", err)
		return
	}
	s.render(w, r, http.StatusOK, "jobs", page{Title: "Jobs", Nav: "jobs", Data: o})
}

type jobData struct {
	Job  jobView
	Runs []jobRun
	Err  string
}

func (s *Server) jobPage(w http.ResponseWriter, r *http.Request) {
	if s.noJobs(w, r) {
		return
	}
	name := r.PathValue("job")
	ctx, cancel := ctxOf(r)
	defer cancel()
	var d jobData
	if err := s.jobs.call(ctx, http.MethodGet, "/jobs/"+url.PathEscape(name), &d.Job); err != nil {
		s.fail(w, r, "job "+name, err)
		return
	}
	var runs struct {
		Runs  []jobRun `json:"runs"`
		Error string   `json:"error"`
	}
	if err := s.jobs.call(ctx, http.MethodGet, "/jobs/"+url.PathEscape(name)+"/runs?limit=50", &runs); err != nil {
		d.Err = err.Error()
	}
	d.Runs = runs.Runs
	if runs.Error != "" {
		d.Err = runs.Error
	}
	s.render(w, r, http.StatusOK, "job", page{Title: "Job " + name, Nav: "jobs", Data: d})
}

// jobAction forwards trigger, pause and resume.
func (s *Server) jobAction(w http.ResponseWriter, r *http.Request) {
	if s.noJobs(w, r) {
		return
	}
	name, verb := r.PathValue("job"), r.PathValue("verb")
	switch verb {
	case "trigger", "pause", "resume":
	default:
		s.fail(w, r, "job "+name, badInput("no action %q: trigger, pause or resume", verb))
		return
	}
	ctx, cancel := ctxOf(r)
	defer cancel()
	if err := s.mayAlterCluster(ctx); err != nil {
		status := http.StatusBadGateway
		if err == errNoClusterAlter {
			status = http.StatusForbidden
			s.log.Info("console: job action refused", "job", clip(name, 100), "verb", verb, "as", clip(userOf(ctx), 100))
		}
		s.refuse(w, r, status, verb+" job "+name+": "+err.Error())
		return
	}
	var answer struct {
		Status string `json:"status"`
	}
	if err := s.jobs.call(ctx, http.MethodPost, "/jobs/"+url.PathEscape(name)+"/"+verb, &answer); err != nil {
		s.fail(w, r, verb+" job "+name, err)
		return
	}
	what := map[string]string{"trigger": "triggered", "pause": "paused", "resume": "resumed"}[verb] + " job " + name
	if answer.Status != "" {
		what += ": " + answer.Status
	}
	if s.lake != nil {
		s.lake.invalidate()
	}
	s.log.Info("console: "+what, "as", clip(userOf(ctx), 100))
	s.done(w, r, "/jobs/"+url.PathEscape(name), what)
}
