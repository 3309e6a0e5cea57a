package jobs

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Handler serves the scheduler's HTTP API:
//
//	GET  /jobs                  every job: schedule, state, next and last run, lag
//	GET  /jobs/{name}           one job, with its definition
//	GET  /jobs/{name}/runs      its history, newest first (?limit=N, default 20)
//	POST /jobs/{name}/trigger   run it now (after the current run)
//	POST /jobs/{name}/pause     skip its scheduled times, on every scheduler
//	POST /jobs/{name}/resume
//	GET  /metrics, /healthz
//
// Answers are JSON; errors are {"error": "..."} with a 4xx or 5xx status.
func (s *Scheduler) Handler(gatherer prometheus.Gatherer) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jobs", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.Overview())
	})
	mux.HandleFunc("GET /jobs/{name}", func(w http.ResponseWriter, r *http.Request) {
		v, ok := s.Job(r.PathValue("name"))
		if !ok {
			writeError(w, http.StatusNotFound, ErrUnknownJob.Error()+": "+r.PathValue("name"))
			return
		}
		writeJSON(w, http.StatusOK, v)
	})
	mux.HandleFunc("GET /jobs/{name}/runs", func(w http.ResponseWriter, r *http.Request) {
		limit := 20
		if v := r.URL.Query().Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				writeError(w, http.StatusBadRequest, "limit: want a number, 0 for all")
				return
			}
			limit = n
		}
		runs, err := s.Runs(r.Context(), r.PathValue("name"), limit)
		switch {
		case errors.Is(err, ErrUnknownJob):
			writeError(w, http.StatusNotFound, err.Error()+": "+r.PathValue("name"))
		case runs == nil && err != nil:
			writeError(w, http.StatusServiceUnavailable, err.Error())
		default:
			resp := RunsResponse{Job: r.PathValue("name"), Runs: runs}
			if err != nil {
				resp.Error = "the target's history could not be read: " + err.Error()
			}
			writeJSON(w, http.StatusOK, resp)
		}
	})
	mux.HandleFunc("POST /jobs/{name}/trigger", func(w http.ResponseWriter, r *http.Request) {
		queued, err := s.Trigger(r.PathValue("name"))
		if err != nil {
			writeError(w, statusOf(err), err.Error())
			return
		}
		msg := "started"
		if queued {
			msg = "queued after the current run"
		}
		writeJSON(w, http.StatusAccepted, map[string]string{"job": r.PathValue("name"), "status": msg})
	})
	for _, verb := range []string{"pause", "resume"} {
		mux.HandleFunc("POST /jobs/{name}/"+verb, func(w http.ResponseWriter, r *http.Request) {
			if err := s.SetPaused(r.PathValue("name"), verb == "pause"); err != nil {
				writeError(w, statusOf(err), err.Error())
				return
			}
			v, _ := s.Job(r.PathValue("name"))
			writeJSON(w, http.StatusOK, v)
		})
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	if gatherer != nil {
		mux.Handle("GET /metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	}
	return mux
}

// RunsResponse is GET /jobs/{name}/runs.
type RunsResponse struct {
	Job   string    `json:"job"`
	Runs  []*Record `json:"runs"`
	Error string    `json:"error,omitempty"` // the target was unreachable: only runs known here
}

func statusOf(err error) int {
	if errors.Is(err, ErrUnknownJob) {
		return http.StatusNotFound
	}
	return http.StatusConflict
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}
