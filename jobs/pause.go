package jobs

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
)

// pauseMark is _tributary/jobs/<job>/paused: a job paused through the API.
// It is in the target, so that every scheduler of the job sees it and a
// restart keeps it. Scheduled times skip the job while it is there; a
// manual trigger still runs it.
type pauseMark struct {
	By string    `json:"by"` // the scheduler that was asked
	At time.Time `json:"at"`
}

func readPause(fs fsys.FS, job string) (*pauseMark, error) {
	b, err := fs.ReadFile(pausedPath(job))
	if fsys.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m pauseMark
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s/%s: %w", fs, pausedPath(job), err)
	}
	return &m, nil
}

// SetPaused pauses or resumes a job in its target.
func (s *Scheduler) SetPaused(name string, paused bool) error {
	s.mu.Lock()
	st := s.jobs[name]
	var j *Job
	if st != nil {
		j = st.job
	}
	s.mu.Unlock()
	if st == nil {
		return fmt.Errorf("%w: %q", ErrUnknownJob, name)
	}
	if j == nil {
		return fmt.Errorf("job %q has no valid definition: %v", name, st.problem)
	}
	opts := s.sinkOptions(j)
	fs, err := fsys.Open(j.Target, opts)
	if err != nil {
		return err
	}
	defer fs.Close()
	var mark *pauseMark
	if paused {
		mark = &pauseMark{By: s.opts.Owner, At: time.Now().UTC()}
		b, _ := json.Marshal(mark)
		err = fs.WriteFileAtomic(pausedPath(name), b)
	} else {
		err = fs.RemoveAll(pausedPath(name))
	}
	if err != nil {
		return err
	}
	s.mu.Lock()
	st.paused = mark
	s.mu.Unlock()
	s.log.Info("job paused through the API", "job", name, "paused", paused)
	return nil
}
