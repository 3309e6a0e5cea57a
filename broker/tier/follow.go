package tier

import (
	"bytes"
	"errors"
	"fmt"
	"path"

	"github.com/tributary-io/tributary/broker/log"
	"github.com/tributary-io/tributary/internal/fsys"
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
	data, err := fs.ReadFile(path.Join(p.dir, ManifestFile))
	if fsys.IsNotExist(err) {
		return nil // nothing remote yet
	}
	if err != nil {
		return fmt.Errorf("%w: read %s: %v", ErrUnavailable, path.Join(p.dir, ManifestFile), err)
	}
	man, err := parseManifest(data)
	if err != nil {
		// Read while the leader renamed a new one over it: the next
		// pass reads it again.
		return nil
	}
	if man.TopicID != t.TopicID {
		return nil
	}
	if cur := p.cached.Load(); cur != nil && cur.TopicID == man.TopicID &&
		(man.LeaderEpoch < cur.LeaderEpoch || (man.LeaderEpoch == cur.LeaderEpoch && cur.UploadedEnd() > man.UploadedEnd())) {
		// An older manifest (a deposed leader's late rename, review 4):
		// never trim by it; the one kept stands.
		m.logger.Warn("tiered storage: the remote manifest is older than one this follower saw; ignoring it",
			"partition", t.TP.String(), "remote_leader_epoch", man.LeaderEpoch, "known_leader_epoch", cur.LeaderEpoch)
		return nil
	}
	// Kept on disk and as the fallback too: when this follower is
	// elected, or restarts, while remote storage cannot be read, its
	// trimmed local log must not become the partition's start (review 2).
	if cur := p.manifest.Load(); cur == nil || !bytes.Equal(cur.Encode(), man.Encode()) {
		m.writeLocalManifest(t.Log, man)
	}
	p.publish(man)
	if _, err := t.Log.EnforceRetention(); err != nil && !errors.Is(err, log.ErrClosed) {
		return err
	}
	return nil
}
