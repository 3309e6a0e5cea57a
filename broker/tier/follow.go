package tier

import (
	"errors"
	"fmt"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/remotelog"
)

// Followers.
//
// A follower's disk must not keep the whole history either: Kafka's
// followers apply local retention too, removing what the leader has
// uploaded (they learn it from the remote log metadata topic). Here a
// follower re-reads the partition's manifest at each pass, read-only: it
// never uploads, expires, writes the manifest or sweeps files (an upload
// of the leader in progress is not its to remove). Its local retention
// then removes a segment once it ends below the uploaded end, exactly as
// on the leader. When the follower is elected, its next pass loads the
// manifest as a leader does (load, with the sweep); until that succeeds
// the manifest it read as a follower serves reads (it also keeps it on
// disk, for a restart while remote storage is down).

func (m *Manager) follow(fs fsys.FS, p *partition, t Target) error {
	p.follower = true
	man, err := remotelog.ReadLatest(fs, p.dir)
	if err != nil {
		return fmt.Errorf("%w: read the manifest of %s: %v", ErrUnavailable, t.TP, err)
	}
	if man == nil || man.TopicID != t.TopicID {
		return nil // nothing remote yet
	}
	if cur := p.cached.Load(); cur != nil && cur.TopicID == man.TopicID &&
		(man.Sequence < cur.Sequence || man.LeaderEpoch < cur.LeaderEpoch) {
		// Older than one this follower saw (versions removed or put
		// back by hand; a commit never writes one): never trim by it;
		// the one kept stands.
		m.logger.Warn("tiered storage: the remote manifest is older than one this follower saw; ignoring it",
			"partition", t.TP.String(), "remote_version", man.Sequence, "known_version", cur.Sequence,
			"remote_leader_epoch", man.LeaderEpoch, "known_leader_epoch", cur.LeaderEpoch)
		return nil
	}
	if man.LeaderEpoch != t.LeaderEpoch {
		// Not (yet) written by the leader this follower follows: a
		// new leader claims the manifest for its epoch before it
		// uploads anything (Manager.work), so until then this one may
		// still be a deposed leader's, and the disk is not trimmed by
		// it (review 4).
		return nil
	}
	// Kept on disk and as the fallback too: when this follower is
	// elected, or restarts, while remote storage cannot be read, its
	// trimmed local log must not become the partition's start (review 2).
	if cur := p.manifest.Load(); cur == nil || cur.Sequence != man.Sequence {
		m.writeLocalManifest(t.Log, man)
	}
	p.publish(man)
	if _, err := t.Log.EnforceRetention(); err != nil && !errors.Is(err, log.ErrClosed) {
		return err
	}
	return nil
}
