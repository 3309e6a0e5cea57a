// Package jobs is the loads scheduler behind `tributary jobs serve`: it
// holds the job definitions of a jobs file, runs each job's loads (the
// loader's plan, execute and commit) on its schedule, retries failed runs
// with backoff, keeps every run's history in the job's target, and serves
// all of it over HTTP (Handler) to the `tributary jobs` commands (Client).
//
// What it owns, under each job's target (next to the loader's files):
//
//	_tributary/jobs/<job>/lease/<generation>   who runs the job now (lease.go)
//	_tributary/jobs/<job>/runs/<run>.json      one Record per run (history.go)
//	_tributary/jobs/<job>/paused               a pause asked through the API (pause.go)
//
// One run of a job at a time, cluster-wide: a run holds the job's lease,
// a generation file created exclusively in the target and renewed while
// the run lives; the loader checks it (loader.Hooks.Fence) before it saves
// a plan and before its commit point. lease.go has the protocol and why it
// holds on HDFS, which has no compare-and-swap.
//
// A run that crashed or failed left an open plan; the next run (here, or on
// the scheduler that takes the lease over) resumes it, because loader.Run
// always completes an open plan before it plans anew.
//
// Executors: local runs the units in goroutines of this process; process
// starts `tributary load worker` processes (parallelism of them) on the
// saved plan; command runs a user's command with the plan's URI (how a
// Kubernetes Indexed Job is started, deploy/k8s/); yarn submits one YARN
// application through the ResourceManager's REST API (yarn.go); kubernetes
// creates the Indexed Job through the API server (kubernetes.go). All are
// the loader's Hooks.Execute, so planning and committing stay in one place.
//
// Concurrency: a Scheduler is safe for concurrent use. Each job has one
// goroutine that runs it; reloads and the HTTP handlers only publish and
// read under the Scheduler's mutex (see Scheduler).
package jobs
