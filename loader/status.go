package loader

import (
	"context"
	"sort"
)

// PartitionStatus is a partition's progress in a job.
type PartitionStatus struct {
	Topic         string
	Partition     int32
	Committed     int64 // -1: never loaded
	HighWatermark int64
	LastStable    int64 // where the loader (read_committed) stops: below HighWatermark while a transaction is open
	Lag           int64 // HighWatermark - Committed
	Err           error
}

// Status is a job's progress.
type Status struct {
	Job        string
	Partitions []PartitionStatus
	Last       *Manifest // the newest committed run
	Open       *Plan     // a run planned and not committed
	OpenHours  []OpenHour
	State      *State
}

// Status reports, per partition the job has loaded, the committed offset,
// the high watermark and the lag, plus the job's last and open runs.
func (l *Loader) Status(ctx context.Context, job string) (*Status, error) {
	if job == "" {
		job = DefaultJob
	}
	state, err := ReadState(l.FS, job)
	if err != nil {
		return nil, err
	}
	st := &Status{Job: job, State: state, OpenHours: state.OpenHours}
	if st.Last, err = l.LatestManifest(job); err != nil {
		return nil, err
	}
	if st.Open, err = l.OpenPlan(job); err != nil {
		return nil, err
	}
	topics := make([]string, 0, len(state.Offsets))
	for t := range state.Offsets {
		topics = append(topics, t)
	}
	sort.Strings(topics)
	for _, t := range topics {
		parts := make([]int, 0, len(state.Offsets[t]))
		for p := range state.Offsets[t] {
			parts = append(parts, int(p))
		}
		sort.Ints(parts)
		ranges, err := l.Cluster.Offsets(ctx, t, parts)
		stable, serr := l.Cluster.StableOffsets(ctx, t, parts)
		for _, p := range parts {
			ps := PartitionStatus{Topic: t, Partition: int32(p), Committed: state.Offsets[t][int32(p)], HighWatermark: -1, LastStable: -1, Lag: -1, Err: err}
			if serr == nil && stable[p].Err == nil {
				ps.LastStable = stable[p].End
			}
			if err == nil {
				r := ranges[p]
				ps.Err = r.Err
				if r.Err == nil {
					ps.HighWatermark, ps.Lag = r.End, max(0, r.End-ps.Committed)
				}
			}
			st.Partitions = append(st.Partitions, ps)
		}
	}
	return st, nil
}
