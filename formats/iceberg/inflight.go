package iceberg

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"
)

// Files can sit in a table's directory, unreferenced and with an old
// modification time, and still be about to be committed: a rename keeps
// the mtime, so the loader's data files moved into dt=/hr= are as old as
// the unit that wrote them, and a compaction gives each output its final
// name long before its replace commit. Orphan removal must not trust the
// mtime for those; it asks the two writers instead:
//
//   - the loader's open plans (<target>/_tributary/plans/<run>.json
//     without <target>/_tributary/runs/<run>/_SUCCESS): every data file
//     whose name's offset range overlaps one of the plan's units is kept;
//   - compactions in progress, which list their outputs in
//     metadata/.inflight-<id>.json before giving each its final name, and
//     rewrite that list (a heartbeat) with every output.
//
// Both are read before the table is loaded: a plan or compaction that
// finished before the read committed before the load, so the load sees
// its files; one that starts after the read writes files newer than the
// start of orphan removal, which the safety age keeps.

const (
	inflightPrefix = ".inflight-"
	loaderMeta     = "_tributary"
)

// inflightFile is a compaction's list of outputs not yet committed.
func inflightFile(dir, id string) string {
	return path.Join(metadataDir(dir), inflightPrefix+id+".json")
}

// writeInflight records a compaction's outputs before the newest gets its
// final name.
func (c *Catalog) writeInflight(dir, id string, files []string) error {
	b, err := json.Marshal(files)
	if err != nil {
		return err
	}
	return c.FS.WriteFileAtomic(inflightFile(dir, id), b)
}

// unitRange is the offsets one unit of an open loader plan writes.
type unitRange struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	From      int64  `json:"from"`
	To        int64  `json:"to"`
}

// inflight is what orphan removal must keep although no version refers
// to it yet.
type inflight struct {
	files map[string]bool // paths of the warehouse
	units []unitRange
	stale []string        // markers of compactions that stopped heartbeating
	runs  map[string]bool // the loader's open plans
}

// keeps says whether p (a path of the warehouse) belongs to a commit in
// progress.
func (f *inflight) keeps(p string) bool {
	if f.files[p] {
		return true
	}
	topic, part, first, last, ok := OffsetRange(path.Base(p))
	if !ok {
		return false
	}
	for _, u := range f.units {
		if u.Topic == topic && u.Partition == part && first < u.To && last >= u.From {
			return true
		}
	}
	return false
}

// readInflight reads the open plans next to the table and the markers of
// compactions in progress. A marker older than olderThan belongs to a
// compaction that died (each output rewrites it): its outputs become
// ordinary orphans and the marker goes with them.
func (c *Catalog) readInflight(dir string, olderThan time.Time) (*inflight, error) {
	f := &inflight{files: map[string]bool{}, runs: map[string]bool{}}
	ents, err := c.FS.ReadDir(metadataDir(dir))
	if err != nil && !isNotExist(err) {
		return nil, err
	}
	for _, e := range ents {
		if e.IsDir() || !strings.HasPrefix(e.Name(), inflightPrefix) {
			continue
		}
		p := path.Join(metadataDir(dir), e.Name())
		if e.ModTime().Before(olderThan) {
			f.stale = append(f.stale, p)
			continue
		}
		b, err := c.FS.ReadFile(p)
		if isNotExist(err) {
			continue // its compaction just ended
		}
		if err != nil {
			return nil, err
		}
		var files []string
		if err := json.Unmarshal(b, &files); err != nil {
			// Written atomically, so never half a list: refuse rather
			// than guess.
			return nil, fmt.Errorf("formats/iceberg: %s: %w", c.Location(p), err)
		}
		for _, p := range files {
			f.files[p] = true
		}
	}
	if err := c.readOpenPlans(loaderMetaDir(dir), f); err != nil {
		return nil, err
	}
	return f, nil
}

// loaderMetaDir is where the loader keeps its plans for the table in dir:
// <target>/_tributary beside <target>/<topic>.
func loaderMetaDir(dir string) string { return path.Join(path.Dir(dir), loaderMeta) }

// openRuns are the run ids of the loader's open plans beside the table.
func (c *Catalog) openRuns(dir string) (map[string]bool, error) {
	f := &inflight{files: map[string]bool{}, runs: map[string]bool{}}
	if err := c.readOpenPlans(loaderMetaDir(dir), f); err != nil {
		return nil, err
	}
	return f.runs, nil
}

// readOpenPlans adds the units of the loader's open plans under meta. A
// job's plans run one after another, so only its newest can be open (the
// loader's OpenPlan relies on the same); a run id is <job>-<time>-<n>,
// and the ids of one job sort by time.
func (c *Catalog) readOpenPlans(meta string, f *inflight) error {
	ents, err := c.FS.ReadDir(path.Join(meta, "plans"))
	if isNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	newest := map[string]string{}
	for _, e := range ents {
		run, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || e.IsDir() {
			continue
		}
		job := run
		if i := strings.LastIndexByte(run, '-'); i > 0 {
			if j := strings.LastIndexByte(run[:i], '-'); j > 0 {
				job = run[:j]
			}
		}
		if run > newest[job] {
			newest[job] = run
		}
	}
	runs := make([]string, 0, len(newest))
	for _, r := range newest {
		runs = append(runs, r)
	}
	sort.Strings(runs)
	for _, run := range runs {
		if _, err := c.FS.Stat(path.Join(meta, "runs", run, "_SUCCESS")); err == nil {
			continue
		} else if !isNotExist(err) {
			return err
		}
		b, err := c.FS.ReadFile(path.Join(meta, "plans", run+".json"))
		if err != nil {
			return err
		}
		var p struct {
			Units []unitRange `json:"units"`
		}
		if err := json.Unmarshal(b, &p); err != nil {
			return &planError{run: run, err: err}
		}
		f.units = append(f.units, p.Units...)
		f.runs[run] = true
	}
	return nil
}

// planError refuses orphan removal when an open plan cannot be read: its
// files could not be told from orphans.
type planError struct {
	run string
	err error
}

func (e *planError) Error() string {
	return "formats/iceberg: the loader's open plan " + e.run + " cannot be read, so its files cannot be told from orphans: " + e.err.Error()
}

func (e *planError) Unwrap() error { return e.err }
