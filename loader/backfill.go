package loader

import (
	"context"
	"fmt"
	"path"
	"strings"
)

// BackfillRange is the range a backfill reloads: offsets [From, To) of one
// partition.
type BackfillRange struct {
	Topic     string
	Partition int32
	From, To  int64
}

// Backfill reloads a range of offsets that the job has already committed,
// and replaces its earlier output: the files holding any offset of the
// range are written again (the range grows to cover them whole) and the old
// ones removed at commit, so every offset is still in the lake once. Files
// of other ranges are left alone. The job's offsets do not move.
func (l *Loader) Backfill(ctx context.Context, spec Spec, r BackfillRange, parallelism int) (*Manifest, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if err := l.refuseTableBackfill(spec); err != nil {
		return nil, err
	}
	if r.From < 0 || r.To <= r.From {
		return nil, fmt.Errorf("backfill range [%d, %d) is empty: --to is the offset after the last one to reload", r.From, r.To)
	}
	if open, err := l.OpenPlan(spec.Job); err != nil {
		return nil, err
	} else if open != nil {
		return nil, fmt.Errorf("job %q has an open run, %s: finish it first with `tributary load run`", spec.Job, open.Run)
	}
	state, err := ReadState(l.FS, spec.Job)
	if err != nil {
		return nil, err
	}
	committed, ok := state.Offsets[r.Topic][r.Partition]
	if !ok || r.To > committed {
		return nil, fmt.Errorf("job %q has committed %s/%d up to offset %d; a backfill reloads only committed offsets (--to at most %d); newer ones are for `tributary load run`",
			spec.Job, r.Topic, r.Partition, committed, committed)
	}
	existing, err := l.dataFiles(r.Topic, r.Partition)
	if err != nil {
		return nil, err
	}
	if spec.TableFormat == TableIceberg {
		if existing, err = l.tableFiles(spec.Catalog, r.Topic, r.Partition, existing); err != nil {
			return nil, err
		}
	}
	from, to := r.From, r.To
	var replaces []string
	for grown := true; grown; {
		grown, replaces = false, replaces[:0]
		for _, f := range existing {
			if f.last >= from && f.first < to {
				replaces = append(replaces, f.path)
				if f.first < from || f.last+1 > to {
					from, to, grown = min(from, f.first), max(to, f.last+1), true
				}
			}
		}
	}
	ranges, err := l.Cluster.Offsets(ctx, r.Topic, []int{int(r.Partition)})
	if err != nil {
		return nil, err
	}
	if start := ranges[int(r.Partition)].Start; from < start && !spec.AllowGaps {
		return nil, fmt.Errorf("%s/%d: %w: offsets from %d are gone, the first available is %d; a backfill would lose what the lake holds of them (use --allow-gaps to reload from %d anyway)",
			r.Topic, r.Partition, ErrGone, from, start, start)
	}
	run, now, err := l.nextRunID(spec.Job, l.now())
	if err != nil {
		return nil, err
	}
	p := &Plan{
		Version: PlanVersion, Run: run, Job: spec.Job, Kind: "backfill", Created: now.UTC(),
		Bootstrap: l.Bootstrap, Settings: spec.Settings,
		Schemas: state.Schemas, Inferred: state.Inferred, Replaces: append([]string(nil), replaces...),
	}
	if p.Format != FormatRaw && p.Schemas[r.Topic] == "" {
		return nil, fmt.Errorf("job %q has no schema for %q: load it with `tributary load run` first", spec.Job, r.Topic)
	}
	per := spec.MaxRecordsPerUnit
	if per <= 0 {
		per = DefaultMaxRecordsPerUnit
	}
	for lo := from; lo < to; lo += per {
		p.Units = append(p.Units, Unit{Index: len(p.Units), Topic: r.Topic, Partition: r.Partition, From: lo, To: min(lo+per, to)})
	}
	if err := l.checkTables(p); err != nil {
		return nil, err
	}
	if err := l.planFieldIDs(p); err != nil {
		return nil, err
	}
	if err := l.fence(ctx); err != nil {
		return nil, err
	}
	if err := p.save(l); err != nil {
		return nil, err
	}
	l.log().Info("backfill planned", "run", p.Run, "from", from, "to", to, "replaces", len(replaces))
	return l.Complete(ctx, p, parallelism)
}

type dataFile struct {
	path        string
	first, last int64
}

// dataFiles lists a partition's Parquet files and bad-record files in the
// lake.
func (l *Loader) dataFiles(topic string, partition int32) ([]dataFile, error) {
	var out []dataFile
	days, err := l.FS.ReadDir(topic)
	if err != nil && !isNotExist(err) {
		return nil, err
	}
	for _, d := range days {
		if !d.IsDir() || !strings.HasPrefix(d.Name(), "dt=") {
			continue
		}
		hours, err := l.FS.ReadDir(path.Join(topic, d.Name()))
		if err != nil {
			return nil, err
		}
		for _, h := range hours {
			if !h.IsDir() {
				continue
			}
			dir := path.Join(topic, d.Name(), h.Name())
			files, err := l.FS.ReadDir(dir)
			if err != nil {
				return nil, err
			}
			for _, f := range files {
				if t, p, first, last, ok := parseDataFileName(f.Name()); ok && t == topic && p == partition {
					out = append(out, dataFile{path: path.Join(dir, f.Name()), first: first, last: last})
				}
			}
		}
	}
	errs, err := l.FS.ReadDir(path.Join(errorsDir, topic))
	if err != nil && !isNotExist(err) {
		return nil, err
	}
	for _, f := range errs {
		var p int32
		var first, last int64
		name := strings.TrimSuffix(f.Name(), ".jsonl")
		if i := strings.LastIndex(name, "+"); i > 0 {
			if _, err := fmt.Sscanf(name[len(topic):], "+%d+%d+%d", &p, &first, &last); err == nil && strings.HasPrefix(name, topic+"+") && p == partition {
				out = append(out, dataFile{path: path.Join(errorsDir, topic, f.Name()), first: first, last: last})
			}
		}
	}
	return out, nil
}
