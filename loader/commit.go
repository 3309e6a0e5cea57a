package loader

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"sort"
	"time"

	"github.com/tributary-io/tributary/internal/kafkacli"
)

// Commit puts a run's files in place and commits its offsets. Every step can
// be repeated after a crash: files are moved by name, the state is replaced
// whole, markers are created once.
func (l *Loader) Commit(ctx context.Context, p *Plan) (*Manifest, error) {
	state, err := ReadState(l.FS, p.Job)
	if err != nil {
		return nil, err
	}
	if state.Run != p.Run {
		if by, advanced, err := l.supersededBy(p, state); err != nil || by != "" {
			if err != nil {
				return nil, err
			}
			return l.closeSuperseded(ctx, p, state, by, advanced)
		}
	}
	results := make([]*UnitResult, len(p.Units))
	for i := range p.Units {
		r, err := l.unitResult(p.Run, i)
		if err != nil {
			if isNotExist(err) {
				return nil, fmt.Errorf("run %s: unit %d has not completed: %w", p.Run, i, errUnitOpen)
			}
			return nil, err
		}
		results[i] = r
	}
	m := &Manifest{Run: p.Run, Job: p.Job, Kind: p.Kind, Planned: p.Created, Gaps: p.Gaps}
	written := map[string]bool{}
	for _, r := range results {
		m.Records += r.Records
		m.Rows += r.Rows
		m.Bad += r.Bad
		m.Bytes += r.Bytes
		m.Gaps = append(m.Gaps, r.Gaps...)
		for _, f := range r.Files {
			written[f.Path] = true
			f.Staged = ""
			f.Path = p.finalPath(f.Path)
			m.Files = append(m.Files, f)
		}
		if r.Errors != nil {
			e := *r.Errors
			e.Staged = ""
			m.Errors = append(m.Errors, e)
		}
	}
	if state.Run != p.Run {
		// The tables as they are now, not as they were at plan time:
		// another job may have created one with other partition columns,
		// or in another catalog. Found after the moves, the run could
		// neither commit nor be planned again from its state.
		if err := l.checkTables(p); err != nil {
			return nil, fmt.Errorf("run %s cannot commit to its tables, so this attempt moved none of its files and the state is unchanged; removing its plan (%s under the target) lets the next run load its offsets again: %w", p.Run, planPath(p.Run), err)
		}
		// Before the commit point: move the files. A backfill first removes
		// the files it replaces that it did not write again.
		for _, old := range p.Replaces {
			if !written[old] && !p.keepsReplaced(old) {
				if err := l.FS.RemoveAll(old); err != nil {
					return nil, fmt.Errorf("removing %s, replaced by the backfill: %w", old, err)
				}
				m.Replaced = append(m.Replaced, old)
			}
		}
		for _, r := range results {
			for _, f := range r.Files {
				if err := l.move(f.Staged, p.finalPath(f.Path)); err != nil {
					return nil, err
				}
				crashPoint("moved")
			}
			if r.Errors != nil {
				if err := l.move(r.Errors.Staged, r.Errors.Path); err != nil {
					return nil, err
				}
			}
		}
		state.Run, state.Committed = p.Run, l.now().UTC()
		if p.Kind == "load" {
			for t, parts := range p.Next {
				for part, off := range parts {
					setOffset(state.Offsets, t, part, off)
				}
			}
			if state.Schemas == nil {
				state.Schemas, state.Inferred = map[string]string{}, map[string]bool{}
			}
			for t, s := range p.Schemas {
				state.Schemas[t], state.Inferred[t] = s, p.Inferred[t]
			}
			state.Watermark = p.Created.Add(-time.Duration(p.Lateness))
		}
		state.OpenHours = addHours(state.OpenHours, m.Files)
		if err := l.fence(ctx); err != nil {
			return nil, err
		}
		if err := l.commitTables(p, m); err != nil {
			return nil, fmt.Errorf("committing run %s: %w", p.Run, err)
		}
		if err := writeState(l.FS, state); err != nil {
			return nil, fmt.Errorf("committing run %s: %w", p.Run, err)
		}
		crashPoint("committed")
		l.log().Info("committed", "run", p.Run, "rows", m.Rows, "bad", m.Bad, "files", len(m.Files))
	}

	// After the commit point: markers, the broker's group, the manifest.
	completed, err := l.completeHours(state)
	if err != nil {
		return nil, err
	}
	m.Completed = completed
	m.Offsets = state.Offsets
	m.Committed = state.Committed
	if p.Kind == "load" {
		if err := l.commitGroup(ctx, p.Job, state.Offsets); err != nil {
			m.BrokerCommit = err.Error()
			l.log().Warn("committing the offsets to the broker; the next run retries", "group", GroupID(p.Job), "err", err)
		}
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := l.FS.WriteFileAtomic(runDir(p.Run)+"/manifest.json", b); err != nil {
		return nil, err
	}
	if err := l.createMarker(runDir(p.Run) + "/" + successTag); err != nil {
		return nil, err
	}
	crashPoint("finished")
	if err := l.FS.RemoveAll(stagingRun(p.Run)); err != nil {
		l.log().Warn("removing the staging directory; the next run retries", "run", p.Run, "err", err)
	}
	return m, nil
}

// errUnitOpen says a unit of the plan has no complete result yet.
var errUnitOpen = errors.New("no attempt of it has finished")

// superseded says whether a load plan's ranges no longer start at the job's
// committed offsets: another run committed them (or part of them) after it
// was planned, so committing it would load them twice, and move the offsets
// back. The lease excludes this; the check makes it harmless if a holder's
// lease lapsed at the wrong moment (a paused process) all the same. by is
// the run that committed the state.
func (p *Plan) superseded(state *State) (by string, stale bool) {
	if p.Kind != "load" {
		return "", false
	}
	for t, parts := range p.starts() {
		for part, from := range parts {
			if cur, ok := state.Offsets[t][part]; ok && cur != from {
				return state.Run, true
			}
		}
	}
	return "", false
}

// starts are the committed offsets a load plan was planned from, per topic
// and partition: where its gap or first unit begins, else its Next.
func (p *Plan) starts() map[string]map[int32]int64 {
	out := map[string]map[int32]int64{}
	for t, parts := range p.Next {
		for part, next := range parts {
			setOffset(out, t, part, next)
		}
	}
	seen := map[[2]any]bool{}
	for _, g := range p.Gaps {
		setOffset(out, g.Topic, g.Partition, g.From)
		seen[[2]any{g.Topic, g.Partition}] = true
	}
	for _, u := range p.Units {
		if k := [2]any{u.Topic, u.Partition}; !seen[k] {
			setOffset(out, u.Topic, u.Partition, u.From)
			seen[k] = true
		}
	}
	return out
}

// closeSuperseded ends a plan whose ranges another run committed: nothing
// is moved and nothing counted, its staging goes, and its manifest says
// which run did the work, so that the history counts every range once.
func (l *Loader) closeSuperseded(ctx context.Context, p *Plan, state *State, by string, advanced bool) (*Manifest, error) {
	if err := l.fence(ctx); err != nil {
		return nil, err
	}
	if advanced {
		// The tables are ahead of the state: catch the state up, or every
		// later plan would start below them and be refused in turn.
		l.log().Warn("the job's tables hold offsets its state does not (a loader committed them and died before its state); advancing the state to them", "job", p.Job, "committedBy", by)
		if err := writeState(l.FS, state); err != nil {
			return nil, err
		}
	}
	m := &Manifest{Run: p.Run, Job: p.Job, Kind: p.Kind, Planned: p.Created, Committed: l.now().UTC(),
		Offsets: state.Offsets, Superseded: by}
	l.log().Warn("the run's ranges were committed by another run; closing it with nothing loaded", "run", p.Run, "committedBy", by)
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := l.FS.WriteFileAtomic(runDir(p.Run)+"/manifest.json", b); err != nil {
		return nil, err
	}
	if err := l.createMarker(runDir(p.Run) + "/" + successTag); err != nil {
		return nil, err
	}
	if err := l.FS.RemoveAll(stagingRun(p.Run)); err != nil {
		l.log().Warn("removing the staging directory; the next run retries", "run", p.Run, "err", err)
	}
	return m, nil
}

// move renames a staged file into place; a file already moved (a commit
// repeated after a crash) is fine.
func (l *Loader) move(staged, final string) error {
	err := l.FS.Rename(staged, final)
	if err == nil {
		return nil
	}
	if isNotExist(err) {
		if _, serr := l.FS.Stat(final); serr == nil {
			return nil
		}
	}
	return fmt.Errorf("moving %s into place: %w", final, err)
}

func (l *Loader) createMarker(name string) error {
	w, err := l.FS.Create(name)
	if isExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return w.Close()
}

func addHours(open []OpenHour, files []FileEntry) []OpenHour {
	have := map[string]bool{}
	for _, h := range open {
		have[h.Dir] = true
	}
	for _, f := range files {
		if dir := path.Dir(f.Path); !have[dir] {
			have[dir] = true
			open = append(open, OpenHour{Dir: dir, End: f.HourEnd})
		}
	}
	sort.Slice(open, func(i, j int) bool { return open[i].Dir < open[j].Dir })
	return open
}

// completeHours writes the _SUCCESS marker of every open hour that ended
// before the watermark, and takes it off the state's list.
//
// The watermark is the smallest event time still to come, less the allowed
// lateness. Every partition was read to its high watermark at plan time, so
// what is still to come was produced after that, and its event time is the
// plan time or later unless it is late: the watermark is the plan time less
// the lateness.
func (l *Loader) completeHours(state *State) ([]string, error) {
	var done []string
	keep := state.OpenHours[:0]
	for _, h := range state.OpenHours {
		if h.End.After(state.Watermark) {
			keep = append(keep, h)
			continue
		}
		if err := l.createMarker(path.Join(h.Dir, successTag)); err != nil {
			return nil, fmt.Errorf("marking %s complete: %w", h.Dir, err)
		}
		done = append(done, h.Dir)
	}
	state.OpenHours = keep
	if len(done) > 0 {
		if err := writeState(l.FS, state); err != nil {
			return nil, err
		}
	}
	return done, nil
}

// commitGroup commits offsets to the job's consumer group on the broker.
func (l *Loader) commitGroup(ctx context.Context, job string, offsets map[string]map[int32]int64) error {
	var plan []kafkacli.OffsetReset
	for t, parts := range offsets {
		for p, off := range parts {
			plan = append(plan, kafkacli.OffsetReset{Topic: t, Partition: int(p), New: off})
		}
	}
	if len(plan) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return l.Cluster.CommitOffsets(ctx, GroupID(job), plan)
}
