package jobs

import "github.com/tributary-io/tributary/loader/lease"

// The job lease (generation files in the job's target) is loader/lease,
// shared with the `load` commands, so that a scheduler and a `load run`
// started by cron exclude each other. These names keep the jobs API.
type (
	LeaseInfo = lease.Info
	BusyError = lease.BusyError
)

var (
	ErrBusy      = lease.ErrBusy
	ErrLeaseLost = lease.ErrLeaseLost
)
