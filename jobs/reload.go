package jobs

import (
	"bytes"
	"context"
	"os"
	"time"
)

// watch reloads the jobs file when it changes. It polls the file's size,
// modification time and, when those change, its content: editors that
// replace a file by renaming a new one over it defeat inotify watches on
// the file, and a poll every two seconds costs nothing.
func (s *Scheduler) watch(ctx context.Context) {
	var size int64
	var mtime time.Time
	var content []byte
	if fi, err := os.Stat(s.opts.ConfigPath); err == nil {
		size, mtime = fi.Size(), fi.ModTime()
		content, _ = os.ReadFile(s.opts.ConfigPath)
	}
	t := time.NewTicker(s.opts.ReloadEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fi, err := os.Stat(s.opts.ConfigPath)
		if err != nil {
			s.reloadFailed(err)
			continue
		}
		if fi.Size() == size && fi.ModTime().Equal(mtime) {
			continue
		}
		size, mtime = fi.Size(), fi.ModTime()
		b, err := os.ReadFile(s.opts.ConfigPath)
		if err != nil {
			s.reloadFailed(err)
			continue
		}
		if bytes.Equal(b, content) {
			continue
		}
		content = b
		s.Reload()
	}
}

// Reload reads the jobs file again and applies it. A file that cannot be
// used at all changes nothing: every job keeps its definition and schedule.
func (s *Scheduler) Reload() error {
	cfg, err := ReadConfig(s.opts.ConfigPath, s.opts.IsFlag)
	if err != nil {
		s.reloadFailed(err)
		return err
	}
	s.log.Info("jobs file reloaded", "file", s.opts.ConfigPath, "jobs", len(cfg.Jobs), "problems", len(cfg.Problems))
	s.apply(cfg)
	return nil
}

func (s *Scheduler) reloadFailed(err error) {
	s.mu.Lock()
	changed := s.fileErr == nil || s.fileErr.Error() != err.Error()
	s.fileErr = err
	s.mu.Unlock()
	if changed {
		s.log.Error("jobs file not applied; every job keeps its definition and schedule", "file", s.opts.ConfigPath, "err", err)
	}
}
