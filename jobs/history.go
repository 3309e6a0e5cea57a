package jobs

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/loader"
)

// A job's files under its target, beside the loader's:
//
//	_tributary/jobs/<job>/lease/<generation>   the lease (lease.go)
//	_tributary/jobs/<job>/runs/<run>.json      the history: one Record per run
//	_tributary/jobs/<job>/paused               present while paused by the API
//
// The history is in the target, not on the scheduler's disk, so that every
// scheduler of the job (two machines, a replaced pod) reads and extends one
// history, and it lives and dies with the data it describes. Records are
// JSON, replaced whole (WriteFileAtomic), and the newest RecordVersion a
// reader knows; a reader shows a newer record's known fields and ignores
// the rest.
const (
	jobsDir       = "_tributary/jobs"
	RecordVersion = 1
)

func jobDir(job string) string     { return jobsDir + "/" + job }
func runsDir(job string) string    { return jobDir(job) + "/runs" }
func pausedPath(job string) string { return jobDir(job) + "/paused" }
func recordPath(job, id string) string {
	return runsDir(job) + "/" + id + ".json"
}

// Outcomes of a run.
const (
	Running     = "running"     // an attempt holds the lease now
	Retrying    = "retrying"    // an attempt failed; the next waits for its backoff
	Succeeded   = "succeeded"   // committed (or nothing was new)
	Failed      = "failed"      // every attempt failed
	Interrupted = "interrupted" // its scheduler died or lost the lease; the next run resumed its plan
	Cancelled   = "cancelled"   // the scheduler stopped, or the job was removed
)

// Record is one run of a job: the attempts it made and what it loaded.
type Record struct {
	Version   int       `json:"version"`
	ID        string    `json:"id"`
	Job       string    `json:"job"`
	Trigger   string    `json:"trigger"` // schedule or manual
	Scheduled time.Time `json:"scheduled"`
	Started   time.Time `json:"started"`
	Ended     time.Time `json:"ended,omitzero"`
	Outcome   string    `json:"outcome"`
	Error     string    `json:"error,omitempty"`
	Executor  string    `json:"executor"`
	Attempts  []Attempt `json:"attempts"`
	// NextAttempt is when a retrying run tries again.
	NextAttempt time.Time `json:"nextAttempt,omitzero"`
	// Loads are the loader runs it committed: an open plan it resumed,
	// then the new one.
	Loads []Load `json:"loads,omitempty"`
	// Totals over Loads.
	Records int64 `json:"records"`
	Rows    int64 `json:"rows"`
	Bytes   int64 `json:"bytes"`
	Files   int   `json:"files"`
	Bad     int64 `json:"bad"`
	// Phases sums the loader's phase durations (plan, execute, commit) over
	// the attempts, in seconds.
	Phases map[string]float64 `json:"phaseSeconds,omitempty"`
	// Lag is the job's lag per topic after the run, in records.
	Lag map[string]int64 `json:"lag,omitempty"`
	// Maintenance is what a maintenance job did, table by table; Files,
	// Rows and Bytes count the files its compactions wrote and the rows
	// and bytes they rewrote.
	Maintenance []TableMaintenance `json:"maintenance,omitempty"`
}

// Attempt is one try of a run, made under one lease generation.
type Attempt struct {
	Owner   string    `json:"owner"`
	Lease   int64     `json:"lease,omitempty"` // the generation held
	Started time.Time `json:"started"`
	Ended   time.Time `json:"ended,omitzero"`
	Error   string    `json:"error,omitempty"`
	// Resumed is the loader run of an open plan that this attempt found
	// and completed (a crashed or failed earlier attempt's).
	Resumed string `json:"resumed,omitempty"`
	// Applications are the YARN applications of the attempt (executor yarn).
	Applications []Application `json:"applications,omitempty"`
}

// Load is one committed loader run.
type Load struct {
	Run     string  `json:"run"` // the loader's run id: its plan and manifest
	Planned string  `json:"planned"`
	Units   int     `json:"units"`
	Ranges  []Range `json:"ranges"`
	Records int64   `json:"records"`
	Rows    int64   `json:"rows"`
	Bytes   int64   `json:"bytes"`
	Files   int     `json:"files"`
	Bad     int64   `json:"bad"`
	Gaps    int     `json:"gaps,omitempty"`
	// Superseded names the run that had already committed this run's
	// ranges: it loaded nothing, and its ranges are not counted here.
	Superseded string `json:"superseded,omitempty"`
}

// Range is a partition's offsets [From, To) loaded by a run.
type Range struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      int64  `json:"from"`
	To        int64  `json:"to"`
}

// newRecordID names a run so that a job's records sort by start time.
func newRecordID(t time.Time) string {
	return t.UTC().Format("20060102T150405.000Z") + "-" + randomHex(3)
}

// addLoad adds a committed loader run to the record, with the ranges of its
// plan (one per partition: a partition's units are contiguous).
func (r *Record) addLoad(m *loader.Manifest, p *loader.Plan) {
	ld := Load{Run: m.Run, Planned: m.Planned.UTC().Format(time.RFC3339), Records: m.Records, Rows: m.Rows, Bytes: m.Bytes, Files: len(m.Files), Bad: m.Bad, Gaps: len(m.Gaps),
		Superseded: m.Superseded}
	if p != nil && m.Superseded == "" {
		ld.Units = len(p.Units)
		idx := map[[2]any]int{}
		for _, u := range p.Units {
			k := [2]any{u.Topic, u.Partition}
			if i, ok := idx[k]; ok {
				ld.Ranges[i].From = min(ld.Ranges[i].From, u.From)
				ld.Ranges[i].To = max(ld.Ranges[i].To, u.To)
				continue
			}
			idx[k] = len(ld.Ranges)
			ld.Ranges = append(ld.Ranges, Range{Topic: u.Topic, Partition: u.Partition, From: u.From, To: u.To})
		}
		sort.Slice(ld.Ranges, func(i, j int) bool {
			a, b := ld.Ranges[i], ld.Ranges[j]
			return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
		})
	}
	r.Loads = append(r.Loads, ld)
	r.Records += ld.Records
	r.Rows += ld.Rows
	r.Bytes += ld.Bytes
	r.Files += ld.Files
	r.Bad += ld.Bad
}

func writeRecord(fs fsys.FS, r *Record) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return fs.WriteFileAtomic(recordPath(r.Job, r.ID), b)
}

// readRecord reads a run's record. A record is replaced whole by a rename,
// but on HDFS a read that opened the replaced file can come back short once
// the rename deletes it: a record that does not parse is read again before
// it counts as damaged.
func readRecord(fs fsys.FS, job, id string) (*Record, error) {
	var err error
	for try := 0; try < 5; try++ {
		if try > 0 {
			time.Sleep(time.Duration(try) * 50 * time.Millisecond)
		}
		var b []byte
		if b, err = fs.ReadFile(recordPath(job, id)); err != nil {
			return nil, err
		}
		var r Record
		if err = json.Unmarshal(b, &r); err == nil {
			return &r, nil
		}
	}
	return nil, fmt.Errorf("run record %s/%s: %w", fs, recordPath(job, id), err)
}

// listRecords lists a job's record ids, oldest first.
func listRecords(fs fsys.FS, job string) ([]string, error) {
	ents, err := fs.ReadDir(runsDir(job))
	if fsys.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range ents {
		if id, ok := strings.CutSuffix(e.Name(), ".json"); ok && !strings.HasPrefix(id, ".") {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// ReadHistory reads a job's newest runs, newest first, at most limit (0:
// all).
func ReadHistory(fs fsys.FS, job string, limit int) ([]*Record, error) {
	ids, err := listRecords(fs, job)
	if err != nil {
		return nil, err
	}
	var out []*Record
	for i := len(ids) - 1; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
		r, err := readRecord(fs, job, ids[i])
		if err != nil {
			if fsys.IsNotExist(err) {
				continue // expired since the listing
			}
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// expireRecords removes a job's oldest records beyond keep, and those older
// than maxAge; the newest is always kept.
func expireRecords(fs fsys.FS, job string, keep int, maxAge time.Duration, now time.Time) error {
	ids, err := listRecords(fs, job)
	if err != nil {
		return err
	}
	for i, id := range ids {
		if i == len(ids)-1 {
			break
		}
		old := len(ids)-i > keep
		if !old {
			if t, err := time.Parse("20060102T150405.000Z", strings.SplitN(id, "-", 2)[0]); err == nil && now.Sub(t) > maxAge {
				old = true
			}
		}
		if !old {
			break // ids are oldest first: the rest are newer
		}
		if err := fs.RemoveAll(recordPath(job, id)); err != nil {
			return err
		}
	}
	return nil
}
