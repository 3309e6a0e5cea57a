package replica

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/broker/producer"
	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/internal/atomicfile"
)

// Followers of tiered partitions (KIP-405). A follower whose log ends
// below its leader's local log start is told OFFSET_MOVED_TO_TIERED_STORAGE
// by the leader rather than served the remote range: copying history that
// local retention is about to delete would cost the leader, HDFS and this
// disk the whole topic. It rebuilds instead what a replica needs of the
// remote range, its leader epochs and its producer state, from the remote
// segment that ends where it will start, and fetches the rest as usual
// (fetcher.buildFromRemote).

// RemoteState is what a follower takes from the remote segment below the
// offset it starts at: Next is that offset (one past the segment's end),
// Epochs the leader-epoch cache as of Next (the segment's
// .leader-epoch-checkpoint) and Snapshot the producer state at Next (its
// .snapshot, nil when none was uploaded: no producer had written yet).
type RemoteState struct {
	Next     int64
	Epochs   []log.EpochEntry
	Snapshot []byte
}

// ErrNoRemoteState is the error of a Transport.RemoteState that found no
// state to start from in remote storage (a remote segment without an exact
// producer snapshot): the follower copies the remote range instead.
var ErrNoRemoteState = errors.New("broker/replica: no state to start from in remote storage")

// errStopScan ends a header scan at the offset asked for.
var errStopScan = errors.New("stop")

// ProducerSnapshotAt is the producer state as of offset next (a segment's
// end, being uploaded): the newest snapshot at or below next, with the
// batches after it up to next replayed into it. Kafka snapshots at every
// roll, so the uploaded .snapshot is exact; this log snapshots on its own
// schedule, and a follower that starts from the remote segment has no way
// to replay what a stale snapshot lacks. ok is false when the log no
// longer holds what lies between the snapshot and next.
func (p *Partition) ProducerSnapshotAt(next int64) (data []byte, ok bool, err error) {
	p.snapMu.Lock()
	defer p.snapMu.Unlock()
	from := int64(-1)
	for _, off := range p.snaps.Offsets() {
		if off <= next && off > from {
			from = off
		}
	}
	st := producer.NewState()
	if from >= 0 {
		if st, err = producer.ReadSnapshot(p.snaps.Path(from)); err != nil {
			return nil, false, err
		}
	} else {
		from = p.Log.LogStartOffset()
	}
	if from < p.Log.LogStartOffset() && from < next {
		return nil, false, nil
	}
	err = p.Log.ScanHeaders(from, func(h record.Batch) error {
		if h.BaseOffset() >= next {
			return errStopScan
		}
		if h.LastOffset() < from {
			return nil
		}
		b, err := p.replayBatch(h)
		if err != nil {
			return err
		}
		st.Replay(b)
		return nil
	})
	if err != nil && !errors.Is(err, errStopScan) {
		return nil, false, err
	}
	return producer.EncodeSnapshot(st), true, nil
}

// RebuildFromRemote empties the log and starts it at st.Next, with the
// leader epochs and producer state of the remote range below it (Kafka's
// TierStateMachine.buildRemoteLogAuxState): as if this replica had copied
// the history and local retention had then removed it.
//
// The steps (empty the log, install the epochs, replace the producer
// snapshots) are not one write, and a crash between them would leave the
// wiped log's producers or no epochs under a log that starts at Next:
// the leader's local start is then at or below it, so it never answers
// OFFSET_MOVED_TO_TIERED_STORAGE again and nothing repairs them. So the
// whole state goes first to a marker file (rebuildPendingFile), and a
// partition that opens with one finishes the rebuild (resumeRebuild)
// before it loads its producers: every crash ends as the rebuild does.
func (p *Partition) RebuildFromRemote(st RemoteState) error {
	p.snapMu.Lock()
	defer p.snapMu.Unlock()
	p.appendMu.Lock()
	defer p.appendMu.Unlock()
	if end := p.Log.LogEndOffset(); end > st.Next {
		return fmt.Errorf("broker/replica: %s: rebuild from remote storage at %d, but the log ends at %d", p.TP, st.Next, end)
	}
	if st.Snapshot != nil {
		if _, err := producer.DecodeSnapshot(st.Snapshot); err != nil {
			return fmt.Errorf("broker/replica: %s: remote producer snapshot: %w", p.TP, err)
		}
	}
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	marker := filepath.Join(p.Log.Dir(), rebuildPendingFile)
	if err := atomicfile.WriteFile(marker, data); err != nil {
		return fmt.Errorf("broker/replica: %s: %w", p.TP, err)
	}
	if err := p.applyRebuild(st, marker); err != nil {
		return err
	}
	if err := p.rebuildProducers(); err != nil {
		return err
	}
	p.stateMu.Lock()
	p.hw.Store(st.Next)
	p.stateMu.Unlock()
	p.logger.Info("log state rebuilt from remote storage", "offset", st.Next, "leader_epochs", len(st.Epochs),
		"producers", p.producers.Len())
	return nil
}

// rebuildPendingFile holds, in a partition's directory, the RemoteState
// (JSON) of a rebuild that has not finished writing.
const rebuildPendingFile = "remote-rebuild.pending"

// rebuildFault, set by tests, fails a rebuild after the named step, as a
// crash there would stop it.
var rebuildFault func(step string) error

// applyRebuild writes st to the log and the snapshots, then removes the
// marker. Each step may be done again: a log already empty at st.Next is
// not emptied twice.
func (p *Partition) applyRebuild(st RemoteState, marker string) error {
	fault := func(step string) error {
		if rebuildFault != nil {
			return rebuildFault(step)
		}
		return nil
	}
	if err := fault("marker"); err != nil {
		return err
	}
	if err := p.Log.ResetWithEpochs(st.Next, st.Epochs); err != nil {
		return err
	}
	if err := fault("log"); err != nil {
		return err
	}
	// The old snapshots describe a log that is gone.
	if err := p.snaps.DeleteAbove(-1); err != nil {
		return err
	}
	if err := fault("old snapshots"); err != nil {
		return err
	}
	if st.Snapshot != nil {
		if err := p.snaps.Write(st.Next, st.Snapshot); err != nil {
			return err
		}
	}
	if err := fault("snapshot"); err != nil {
		return err
	}
	if err := os.Remove(marker); err != nil {
		return fmt.Errorf("broker/replica: %s: %w", p.TP, err)
	}
	return atomicfile.SyncDir(p.Log.Dir())
}

// resumeRebuild finishes a rebuild a crash interrupted, when the
// partition's directory holds its marker. p is not yet shared.
func (p *Partition) resumeRebuild() error {
	marker := filepath.Join(p.Log.Dir(), rebuildPendingFile)
	data, err := os.ReadFile(marker)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("broker/replica: %s: %w", p.TP, err)
	}
	var st RemoteState
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("broker/replica: %s: %s: %w", p.TP, rebuildPendingFile, err)
	}
	p.logger.Warn("finishing a rebuild from remote storage a crash interrupted", "offset", st.Next)
	return p.applyRebuild(st, marker)
}
