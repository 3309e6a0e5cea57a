package tier

import (
	"errors"
	"fmt"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/remotelog"
)

// The follower's side of KIP-405 (broker/replica's tiered.go): a replica
// whose log ends below its leader's local log start takes the state of the
// remote range from the remote segment below that start, never its
// records: Kafka's TierStateMachine.buildRemoteLogAuxState.

// Bounds on the auxiliary files a follower reads whole: a leader-epoch
// checkpoint is a line per leader epoch, a producer snapshot some 30 bytes
// per producer. Past these the metadata is not to be trusted with memory.
const (
	maxEpochCheckpoint = 4 << 20
	maxSnapshot        = 256 << 20
)

// ErrNoProducerState: the remote segment a follower would start after
// carries no exact producer snapshot (uploaded by older code, or when the
// state at its end could not be computed).
var ErrNoProducerState = errors.New("broker/tier: no exact producer state in remote storage")

// AuxState is what a follower starting at Next needs of the remote range
// below it: the leader epochs as of Next, and the producer snapshot at
// Next (nil when none was uploaded).
type AuxState struct {
	Next     int64
	Epochs   []log.EpochEntry
	Snapshot []byte
}

// AuxState reads, for a follower of tp, the remote segment that holds
// localStart-1 (the offset below its leader's local log start) and returns
// its end as where the follower starts, with its .leader-epoch-checkpoint
// and .snapshot. Starting at the segment's end rather than at localStart
// keeps the producer state exact when remote and local segments do not
// share boundaries (a segment uploaded by an earlier leader): the
// snapshot describes the log up to the segment's end, and the leader holds
// everything from localStart on locally.
//
// It gives up after Config.PassTimeout with ErrUnavailable, so that the
// partition's rebuild retries rather than waiting for a store that never
// answers. The fetcher itself was never held: it calls this on a goroutine
// of its own, one at a time per partition (replica/fetcher.go). The bound
// weakens that guard: the read that timed out may still run when the
// fetcher starts the next, so each PassTimeout can add one more stuck
// read per partition. Config.IOTimeout (at least 1 s, 2 min by default,
// under the 5 min PassTimeout) ends the inner calls, which bounds them.
func (m *Manager) AuxState(tp log.TopicPartition, topicID string, localStart int64) (AuxState, error) {
	var st AuxState
	err := m.bounded(m.cfg.PassTimeout, func() error {
		var err error
		st, err = m.auxState(tp, topicID, localStart)
		return err
	})
	if err != nil {
		// Not st: a read that outlived the timeout may still write it.
		return AuxState{}, err
	}
	return st, nil
}

func (m *Manager) auxState(tp log.TopicPartition, topicID string, localStart int64) (AuxState, error) {
	fs, err := m.store()
	if err != nil {
		return AuxState{}, err
	}
	dir := RemoteDir(tp.Topic, topicID, tp.Partition)
	// Read again, not the follower's copy: the leader's local start may
	// have moved past what it last saw.
	// The newest version, whoever wrote it: a follower only reads the
	// state of a segment, and every version names files that stay for
	// the grace period after it was superseded.
	man, err := remotelog.ReadLatest(fs, dir)
	if err != nil {
		return AuxState{}, fmt.Errorf("%w: read the remote manifest of %s: %v", ErrUnavailable, tp, err)
	}
	if man == nil {
		return AuxState{}, fmt.Errorf("%w: %s: no remote manifest in %s", ErrUnavailable, tp, dir)
	}
	if man.TopicID != topicID {
		return AuxState{}, fmt.Errorf("%w: %s: the remote manifest is topic id %s's, not %s's", ErrUnavailable, tp, man.TopicID, topicID)
	}
	seg, ok := man.Find(localStart - 1)
	if !ok {
		return AuxState{}, fmt.Errorf("%w: %s: no remote segment holds offset %d (remote [%d, %d))",
			ErrUnavailable, tp, localStart-1, man.LogStartOffset, man.UploadedEnd())
	}
	if seg.ProducerState != remotelog.ProducerStateExact {
		// Kafka requires the snapshot of every remote segment. Starting
		// without it would leave this follower with none of the remote
		// range's producers, so it copies that range instead.
		return AuxState{}, fmt.Errorf("%w: %s: the remote segment [%d, %d] has no exact producer snapshot",
			ErrNoProducerState, tp, seg.BaseOffset, seg.EndOffset)
	}
	r := &segReader{m: m, fs: fs, dir: dir, seg: seg}
	st := AuxState{Next: seg.EndOffset + 1}
	ck, err := readWhole(fs, r.name(suffixEpochs), seg.Files[suffixEpochs], maxEpochCheckpoint)
	if err != nil {
		return AuxState{}, err
	}
	if st.Epochs, err = parseEpochCheckpoint(r.name(suffixEpochs), ck); err != nil {
		return AuxState{}, err
	}
	for _, e := range st.Epochs {
		if e.StartOffset > st.Next {
			return AuxState{}, fmt.Errorf("%s: leader epoch %d starts at %d, past the segment's end", r.name(suffixEpochs), e.Epoch, e.StartOffset)
		}
	}
	if size, ok := seg.Files[suffixSnapshot]; ok {
		if st.Snapshot, err = readWhole(fs, r.name(suffixSnapshot), size, maxSnapshot); err != nil {
			return AuxState{}, err
		}
	}
	return st, nil
}

// readWhole reads a small remote file the manifest says is size bytes.
func readWhole(fs fsys.FS, name string, size, limit int64) ([]byte, error) {
	if size < 0 || size > limit {
		return nil, fmt.Errorf("broker/tier: %s: the manifest says %d bytes, more than the %d read whole", name, size, limit)
	}
	data, err := fs.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %v", ErrUnavailable, name, err)
	}
	if int64(len(data)) != size {
		return nil, fmt.Errorf("broker/tier: %s is %d bytes, the manifest says %d", name, len(data), size)
	}
	return data, nil
}

// parseEpochCheckpoint reads Kafka's leader-epoch-checkpoint format, as
// epochCheckpoint writes it, with broker/log's parser; a follower starts
// from these epochs, so they must also increase, as a log's do.
func parseEpochCheckpoint(name string, data []byte) ([]log.EpochEntry, error) {
	es, err := log.ParseLeaderEpochCheckpoint(name, data)
	if err != nil {
		return nil, err
	}
	for i := 1; i < len(es); i++ {
		if es[i].Epoch <= es[i-1].Epoch || es[i].StartOffset <= es[i-1].StartOffset {
			return nil, fmt.Errorf("%s: leader epoch %d at %d follows epoch %d at %d", name, es[i].Epoch, es[i].StartOffset, es[i-1].Epoch, es[i-1].StartOffset)
		}
	}
	return es, nil
}
