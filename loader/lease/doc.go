// Package lease is the job lease: generation files in a job's target that
// let one process at a time run the job, whoever starts it (the jobs
// scheduler, `tributary load run`, `load backfill`, `load worker`). The
// protocol, and what it does not protect against, is written at the top of
// lease.go.
//
// A Lease is safe for concurrent use; its renewal runs in a goroutine of
// its own until Release.
package lease
