package jobs

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule says when a job runs next.
type Schedule interface {
	// Next is the first time after t at which the job runs.
	Next(t time.Time) time.Time
	String() string
}

// cronSchedule is a standard five-field cron expression, or a descriptor
// such as @hourly or @every 15m, with an optional CRON_TZ=Zone prefix,
// parsed by robfig/cron (docs/dependencies.md says why).
type cronSchedule struct {
	cron.Schedule
	text string
}

func (c cronSchedule) String() string { return c.text }

func parseCron(text string) (Schedule, error) {
	s, err := cron.ParseStandard(text)
	if err != nil {
		return nil, err
	}
	// An expression that never fires again (30 February) is a mistake.
	if s.Next(time.Now()).IsZero() {
		return nil, fmt.Errorf("never fires")
	}
	return cronSchedule{s, text}, nil
}

// every runs a job at a fixed interval from the previous scheduled time;
// missed times are skipped, not caught up.
type every time.Duration

func (e every) Next(t time.Time) time.Time { return t.Add(time.Duration(e)) }
func (e every) String() string             { return "every " + time.Duration(e).String() }
