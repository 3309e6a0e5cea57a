package jobs

import "github.com/prometheus/client_golang/prometheus"

// metrics are the scheduler's Prometheus metrics, per job.
type metrics struct {
	runs            *prometheus.CounterVec   // by outcome
	skipped         *prometheus.CounterVec   // scheduled times not run: busy elsewhere, or paused
	attemptFailures *prometheus.CounterVec   // failed attempts, retried or not
	duration        *prometheus.HistogramVec // of whole runs, retries included
	phase           *prometheus.HistogramVec // of the loader's plan, execute and commit
	records, bytes  *prometheus.CounterVec
	files, bad      *prometheus.CounterVec
	lag             *prometheus.GaugeVec // records, per topic, after the last run
	running         *prometheus.GaugeVec
	lastSuccess     *prometheus.GaugeVec
	configProblems  prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	job := []string{"job"}
	buckets := prometheus.ExponentialBuckets(0.5, 2, 14) // 0.5 s to about 68 min
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tributary_jobs_runs_total",
			Help: "Runs that ended, by outcome (succeeded, failed, interrupted, cancelled)."}, []string{"job", "outcome"}),
		skipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tributary_jobs_skipped_total",
			Help: "Scheduled times not run because another scheduler held the lease or the job was paused."}, job),
		attemptFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tributary_jobs_attempt_failures_total",
			Help: "Attempts that failed, whether retried or not."}, job),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "tributary_jobs_run_duration_seconds",
			Help: "Duration of runs, retries and backoff included.", Buckets: buckets}, job),
		phase: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "tributary_jobs_phase_duration_seconds",
			Help: "Duration of the loader's phases: plan, execute, commit.", Buckets: buckets}, []string{"job", "phase"}),
		records: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tributary_jobs_records_total",
			Help: "Records loaded (fetched from the broker) by committed runs."}, job),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tributary_jobs_bytes_total",
			Help: "Parquet bytes written by committed runs."}, job),
		files: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tributary_jobs_files_total",
			Help: "Parquet files written by committed runs."}, job),
		bad: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "tributary_jobs_bad_records_total",
			Help: "Records sent to _errors by committed runs."}, job),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tributary_jobs_lag_records",
			Help: "Records of a topic not loaded yet, at the end of the job's last run."}, []string{"job", "topic"}),
		running: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tributary_jobs_running",
			Help: "1 while a run of the job is in progress here (backoff included)."}, job),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "tributary_jobs_last_success_timestamp_seconds",
			Help: "When the job's last successful run here ended."}, job),
		configProblems: prometheus.NewGauge(prometheus.GaugeOpts{Name: "tributary_jobs_config_problems",
			Help: "Job definitions of the jobs file that are not valid (the previous definition stays)."}),
	}
	reg.MustRegister(m.runs, m.skipped, m.attemptFailures, m.duration, m.phase, m.records, m.bytes, m.files, m.bad,
		m.lag, m.running, m.lastSuccess, m.configProblems)
	return m
}

// init makes a new job's counters exist at zero, so that a rate or an
// alert on them works before the first failure.
func (m *metrics) init(job string) {
	m.skipped.WithLabelValues(job)
	m.attemptFailures.WithLabelValues(job)
	m.records.WithLabelValues(job)
	m.bytes.WithLabelValues(job)
	m.files.WithLabelValues(job)
	m.bad.WithLabelValues(job)
	m.running.WithLabelValues(job)
	for _, o := range []string{Succeeded, Failed} {
		m.runs.WithLabelValues(job, o)
	}
}

// forget drops a removed job's series.
func (m *metrics) forget(job string) {
	l := prometheus.Labels{"job": job}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{
		m.runs.MetricVec, m.skipped.MetricVec, m.attemptFailures.MetricVec, m.duration.MetricVec, m.phase.MetricVec,
		m.records.MetricVec, m.bytes.MetricVec, m.files.MetricVec, m.bad.MetricVec, m.lag.MetricVec, m.running.MetricVec, m.lastSuccess.MetricVec,
	} {
		v.DeletePartialMatch(l)
	}
}
