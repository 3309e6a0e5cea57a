package tier

import (
	"fmt"
	"path"
	"strings"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/internal/remotelog"
)

// Removing what no manifest needs any more.
//
// Nothing is removed when it stops being named: a superseded manifest
// version stays for the grace period (Config.Grace) after the version
// that replaced it was written, for readers that listed it (the loader's
// --from-tier, a follower, a remote read of a broker that has not seen
// the newer one), and a segment file stays as long as any version kept
// names it. A file no version names (an upload interrupted, failed or
// refused, a deposed leader's) goes once it is older than the grace
// period; younger, it may be an upload about to be committed.
//
// Only the leader removes, at most every half grace period, and only
// while the newest version is the one it holds: a deposed leader, which
// finds a newer one, removes nothing. Versions go oldest first, so those
// that remain are always an unbroken run up to the newest
// (remotelog.Commit relies on that to notice a stale write).

func (m *Manager) gc(fs fsys.FS, p *partition, t Target) error {
	now := m.cfg.Now()
	if now.Before(p.gcNext) {
		return nil
	}
	cur := p.manifest.Load()
	vs, err := remotelog.Versions(fs, p.dir)
	if err != nil {
		return fmt.Errorf("%w: list the manifests of %s: %v", ErrUnavailable, t.TP, err)
	}
	if cur == nil || len(vs) == 0 || vs[len(vs)-1].Seq != cur.Sequence {
		// Not the newest: listed again in half a grace period, not at
		// every pass.
		p.gcNext = now.Add(m.cfg.Grace / 2)
		return nil
	}
	for seq := range p.versions {
		if seq < vs[0].Seq {
			delete(p.versions, seq) // removed by another leader's gc
		}
	}
	// Ages are the remote store's: file times are the NameNode's clock,
	// and the broker's may be ahead of it by more than the grace period
	// (then a deposed leader's gc would take a new leader's fresh upload
	// for an old orphan). The newest time listed is a lower bound of the
	// NameNode's now, so an age measured from it is never overstated; it
	// only understates, keeping files longer, while nothing new is
	// written.
	remoteNow := vs[len(vs)-1].ModTime
	ents, err := fs.ReadDir(p.dir)
	if err != nil {
		return fmt.Errorf("%w: list %s: %v", ErrUnavailable, p.dir, err)
	}
	for _, e := range ents {
		if e.ModTime().After(remoteNow) {
			remoteNow = e.ModTime()
		}
	}
	cutoff := now.Add(-m.cfg.Grace)
	if remoteNow.Before(now) {
		cutoff = remoteNow.Add(-m.cfg.Grace)
	}
	var drop []remotelog.Version
	kept := map[int64]bool{}
	for i, v := range vs {
		if i < len(vs)-1 && !vs[i+1].ModTime.After(cutoff) {
			drop = append(drop, v)
		} else {
			kept[v.Seq] = true
		}
	}
	named := map[string]bool{}
	for seq := range kept {
		man := p.versions[seq]
		if man == nil {
			if man, err = remotelog.ReadVersion(fs, p.dir, seq); err != nil {
				return fmt.Errorf("%w: read manifest version %d of %s: %v", ErrUnavailable, seq, t.TP, err)
			}
			p.remember(man)
		}
		for _, s := range man.Segments {
			for suf := range s.Files {
				named[s.FileName(suf)] = true
			}
		}
	}
	// A newer leader may have claimed the partition since the listing
	// above: what it uploads next is named by no version seen here.
	if _, err := fs.Stat(path.Join(p.dir, remotelog.ManifestName(cur.Sequence+1))); err == nil {
		return nil
	} else if !fsys.IsNotExist(err) {
		return fmt.Errorf("%w: stat manifest version %d of %s: %v", ErrUnavailable, cur.Sequence+1, t.TP, err)
	}
	for _, e := range ents {
		name := e.Name()
		switch {
		case name == remotelog.ManifestDir || name == remotelog.LegacyManifestFile || named[name]:
			// manifest.json is the fence (remotelog.Fence), or a
			// legacy manifest about to be replaced by it: never
			// removed, or an earlier build would sweep everything.
			continue
		case e.ModTime().After(cutoff):
			continue
		}
		m.logger.Info("tiered storage: removing a remote file no manifest version kept names", "partition", t.TP.String(), "file", name)
		if err := fs.RemoveAll(path.Join(p.dir, name)); err != nil {
			return fmt.Errorf("%w: remove %s: %v", ErrUnavailable, path.Join(p.dir, name), err)
		}
	}
	for _, v := range drop {
		if err := fs.RemoveAll(path.Join(p.dir, remotelog.ManifestName(v.Seq))); err != nil {
			return fmt.Errorf("%w: remove manifest version %d of %s: %v", ErrUnavailable, v.Seq, t.TP, err)
		}
		delete(p.versions, v.Seq)
	}
	// A writer's temporary manifest left by a crash.
	if tmps, err := fs.ReadDir(path.Join(p.dir, remotelog.ManifestDir)); err == nil {
		for _, e := range tmps {
			if strings.HasPrefix(e.Name(), ".tmp-") && !e.ModTime().After(cutoff) {
				fs.RemoveAll(path.Join(p.dir, remotelog.ManifestDir, e.Name()))
			}
		}
	}
	p.gcNext = now.Add(m.cfg.Grace / 2)
	return nil
}
