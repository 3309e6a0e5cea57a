package loader

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
)

// State is a job's committed progress, _tributary/state/<job>.json. Replacing
// it (write, then rename) is the commit point of a run.
type State struct {
	Version   int       `json:"version"`
	Job       string    `json:"job"`
	Run       string    `json:"run"` // the last committed run
	Committed time.Time `json:"committed"`
	// Offsets are the next offsets to load, per topic and partition.
	Offsets map[string]map[int32]int64 `json:"offsets"`
	// Schemas are the schemas each topic was last written with; later runs
	// keep them, so the columns of a topic's files stay stable.
	Schemas  map[string]string `json:"schemas,omitempty"`
	Inferred map[string]bool   `json:"inferred,omitempty"`
	// OpenHours are the event hours that hold data but have no _SUCCESS
	// marker yet, by directory.
	OpenHours []OpenHour `json:"openHours,omitempty"`
	// Watermark is the event time before which every hour is complete.
	Watermark time.Time `json:"watermark"`
}

// ReadState reads a job's state; a job that never committed has an empty one.
func ReadState(fs fsys.FS, job string) (*State, error) {
	b, err := fs.ReadFile(statePath(job))
	if fsys.IsNotExist(err) {
		return &State{Version: 1, Job: job, Offsets: map[string]map[int32]int64{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the state of job %q: %w", job, err)
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("state of job %q (%s/%s) is unreadable: %w", job, fs, statePath(job), err)
	}
	if s.Offsets == nil {
		s.Offsets = map[string]map[int32]int64{}
	}
	return &s, nil
}

func writeState(fs fsys.FS, s *State) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return fs.WriteFileAtomic(statePath(s.Job), b)
}

// OpenHour is an event hour's directory, and when the hour ends.
type OpenHour struct {
	Dir string    `json:"dir"`
	End time.Time `json:"end"`
}

// FileEntry is one Parquet file of a run.
type FileEntry struct {
	Path      string    `json:"path"`             // final, relative to the target
	Staged    string    `json:"staged,omitempty"` // where the unit wrote it
	Topic     string    `json:"topic"`
	Partition int32     `json:"partition"`
	First     int64     `json:"firstOffset"`
	Last      int64     `json:"lastOffset"`
	Rows      int64     `json:"rows"`
	Bytes     int64     `json:"bytes"`
	Hour      int64     `json:"hour"` // Unix ms of the event hour's start
	HourEnd   time.Time `json:"hourEnd"`
	// Identity are the file's identity partition values (partition.go).
	Identity IdentityValues `json:"identity,omitempty"`
}

// ErrorFile holds the bad records of a unit.
type ErrorFile struct {
	Path      string `json:"path"`
	Staged    string `json:"staged,omitempty"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Records   int64  `json:"records"`
}

// UnitResult is what a unit did; its "done" marker holds it.
type UnitResult struct {
	Unit    int         `json:"unit"`
	Attempt string      `json:"attempt"`
	Records int64       `json:"records"` // records fetched
	Rows    int64       `json:"rows"`    // rows written
	Bad     int64       `json:"bad"`     // records sent to _errors
	Bytes   int64       `json:"bytes"`   // Parquet bytes written
	Files   []FileEntry `json:"files"`
	Errors  *ErrorFile  `json:"errors,omitempty"`
	Gaps    []Gap       `json:"gaps,omitempty"`
	// TierRecords are the records read from the remote tier
	// (--from-tier) rather than fetched from a broker.
	TierRecords int64    `json:"tierRecords,omitempty"`
	Duration    Duration `json:"duration"`
}

// Manifest is a committed run: _tributary/runs/<run>/manifest.json.
type Manifest struct {
	Run       string                     `json:"run"`
	Job       string                     `json:"job"`
	Kind      string                     `json:"kind"`
	Planned   time.Time                  `json:"planned"`
	Committed time.Time                  `json:"committed"`
	Records   int64                      `json:"records"`
	Rows      int64                      `json:"rows"`
	Bad       int64                      `json:"bad"`
	Bytes     int64                      `json:"bytes"`
	Files     []FileEntry                `json:"files"`
	Errors    []ErrorFile                `json:"errors,omitempty"`
	Gaps      []Gap                      `json:"gaps,omitempty"`
	Replaced  []string                   `json:"replaced,omitempty"`
	Offsets   map[string]map[int32]int64 `json:"offsets,omitempty"`
	Completed []string                   `json:"completedHours,omitempty"`
	// BrokerCommit is the error of committing the offsets to the broker's
	// group, if it failed (the next run retries it).
	BrokerCommit string `json:"brokerCommitError,omitempty"`
	// Superseded is set on a load run that found its ranges already
	// committed by another run (the one named): it moved nothing, counts
	// nothing, and only closed its plan.
	Superseded string `json:"superseded,omitempty"`
}

// ReadManifest reads a committed run's manifest.
func ReadManifest(fs fsys.FS, run string) (*Manifest, error) {
	b, err := fs.ReadFile(runDir(run) + "/manifest.json")
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("manifest of run %s: %w", run, err)
	}
	return &m, nil
}
