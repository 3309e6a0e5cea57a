package remotelog

import (
	"errors"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
)

// Versioned manifests: the compare-and-swap commit of remote metadata.
//
// A partition's manifest is a series of immutable files,
// manifests/<20-digit sequence>.json; the newest is the metadata. A
// writer that read version N writes N+1 under a temporary name and moves
// it into place with fsys.RenameNoReplace, which on HDFS is the
// NameNode's rename2 without OVERWRITE: the check and the move are one
// NameNode operation, so of two writers of N+1 exactly one wins. The
// loser reads the winner's version and tries N+2 on top of it only while
// it is still the leader: when the winner's leader epoch is above its
// own, it was deposed and writes nothing (Commit returns ErrFenced). A
// deposed leader can therefore never replace or roll back what a newer
// one committed (it used to rename its manifest over the newer one's).
//
// Superseded versions stay for a grace period, for readers that listed
// them (the loader, followers); the leader then removes them, and the
// segment files no remaining version names (broker/tier's gc).
//
// The sequence is in the name and in the content ("sequence"); a reader
// refuses a file whose two disagree (a copy put in place by hand).

// ManifestDir holds a partition's manifest versions, in its remote
// directory; a directory of its own, so that finding the newest lists a
// few names, not every segment file.
const ManifestDir = "manifests"

// ManifestName is the path of version seq below the partition directory.
func ManifestName(seq int64) string { return path.Join(ManifestDir, fmt.Sprintf("%020d.json", seq)) }

// parseManifestName is the sequence of a version's file name.
func parseManifestName(name string) (int64, bool) {
	digits, ok := strings.CutSuffix(name, ".json")
	if !ok || len(digits) != 20 {
		return 0, false
	}
	seq, err := strconv.ParseInt(digits, 10, 64)
	return seq, err == nil && seq > 0
}

// Version is one manifest version's file.
type Version struct {
	Seq     int64
	ModTime time.Time
}

// Versions lists a partition's manifest versions, oldest first; none
// (and no error) for a partition with nothing remote.
func Versions(fs fsys.FS, dir string) ([]Version, error) {
	ents, err := fs.ReadDir(path.Join(dir, ManifestDir))
	if fsys.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []Version
	for _, e := range ents {
		// A directory of a version's name is listed too: reading it
		// fails, rather than an older version passing for the newest.
		if seq, ok := parseManifestName(e.Name()); ok {
			out = append(out, Version{Seq: seq, ModTime: e.ModTime()})
		}
	}
	// ReadDir sorts by name, and the names are zero-padded.
	return out, nil
}

// ReadVersion reads version seq.
func ReadVersion(fs fsys.FS, dir string, seq int64) (*Manifest, error) {
	data, err := fs.ReadFile(path.Join(dir, ManifestName(seq)))
	if err != nil {
		return nil, err
	}
	m, err := ParseManifest(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ManifestName(seq), err)
	}
	if m.Sequence != seq {
		return nil, fmt.Errorf("remotelog: corrupt manifest: %s holds sequence %d", ManifestName(seq), m.Sequence)
	}
	return m, nil
}

// ReadLatest reads a partition's newest manifest; nil (and no error) when
// there is none. A partition written before versioned manifests has its
// manifest.json read as version 0.
func ReadLatest(fs fsys.FS, dir string) (*Manifest, error) {
	for try := 0; ; try++ {
		vs, err := Versions(fs, dir)
		if err != nil {
			return nil, err
		}
		if len(vs) == 0 {
			return readLegacy(fs, dir)
		}
		m, err := ReadVersion(fs, dir, vs[len(vs)-1].Seq)
		// Removed between the listing and the read: only a version
		// superseded since, and the grace period was shorter than
		// this read (a test's); list again.
		if fsys.IsNotExist(err) && try < 4 {
			continue
		}
		return m, err
	}
}

// readLegacy reads manifest.json, the single manifest that versions
// replaced, with its segments' files named by base offset alone; nil for
// none, and for the fence (fence.go: written before version 1 when there
// was no legacy manifest, so no version may exist yet).
func readLegacy(fs fsys.FS, dir string) (*Manifest, error) {
	data, err := fs.ReadFile(path.Join(dir, LegacyManifestFile))
	if fsys.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if IsFence(data) {
		return nil, nil
	}
	return ParseManifest(data)
}

// ErrFenced is a commit refused because a newer leader epoch wrote the
// partition's manifest: the writer was deposed.
var ErrFenced = errors.New("remotelog: the remote manifest was written by a newer leader epoch")

// maxCommitTries bounds how often a commit rebases on another writer's
// version: writers of one epoch are one leader's own (the same broker),
// so more than a few rounds means something else writes the partition.
const maxCommitTries = 16

// Commit writes change(latest) as the partition's next manifest version
// and returns what it wrote. base is the version the writer holds (nil:
// none yet, the next is version 1); epoch is the writer's leader epoch,
// recorded in what it writes.
//
// When another writer committed the next version first, Commit reads the
// newest and, if its leader epoch is not above epoch, applies change to
// it and tries the version after (change must therefore be a function of
// the manifest it is given, not of base); if it is above, the writer was
// deposed: ErrFenced, and nothing is written. A base whose leader epoch
// is above epoch is ErrFenced at once.
func Commit(fs fsys.FS, dir string, base *Manifest, epoch int32, change func(*Manifest) (*Manifest, error)) (*Manifest, error) {
	for try := 0; ; try++ {
		if base != nil && base.LeaderEpoch > epoch {
			return nil, fmt.Errorf("%w (%d, this writer's is %d)", ErrFenced, base.LeaderEpoch, epoch)
		}
		var next *Manifest
		var err error
		if base == nil {
			next, err = change(nil)
		} else {
			next, err = change(base.Clone())
		}
		if err != nil {
			return nil, err
		}
		next.Version = ManifestVersion
		next.Sequence = 1
		if base != nil {
			next.Sequence = base.Sequence + 1
		}
		next.LeaderEpoch = max(next.LeaderEpoch, epoch)
		err = writeVersion(fs, dir, next)
		if err == nil {
			return next, newest(fs, dir, next.Sequence)
		}
		if !fsys.IsExist(err) {
			return nil, err
		}
		if try == maxCommitTries {
			return nil, fmt.Errorf("remotelog: %s: gave up after %d manifest versions written by others", dir, try+1)
		}
		if base, err = ReadLatest(fs, dir); err != nil {
			return nil, err
		}
		if base == nil {
			return nil, fmt.Errorf("remotelog: %s: manifest version %d exists but no version can be read", dir, next.Sequence)
		}
	}
}

// newest checks that seq, just written, follows a version that still
// exists. It does not when the versions before it were removed as
// superseded while this writer stalled for longer than the grace period
// and newer leaders wrote on: the name was free again, but readers take
// the newest version, so the write counts for nothing and the writer
// must not act on it. (Superseded versions are removed oldest first, so
// a version that still exists was never followed by a removed one.)
func newest(fs fsys.FS, dir string, seq int64) error {
	stale := false
	if seq > 1 {
		_, err := fs.Stat(path.Join(dir, ManifestName(seq-1)))
		if err != nil && !fsys.IsNotExist(err) {
			return err
		}
		stale = err != nil
	} else {
		// No version before the first: it is stale when version 2
		// was closed before it (a version 2 based on it is written
		// after it, on the same NameNode's clock), and when version 2
		// is gone but a later one exists: versions go oldest first, so
		// version 1 existed and was removed before this write.
		vs, err := Versions(fs, dir)
		if err != nil {
			return err
		}
		var mine, second *Version
		later := false
		for i := range vs {
			switch {
			case vs[i].Seq == seq:
				mine = &vs[i]
			case vs[i].Seq == seq+1:
				second = &vs[i]
			case vs[i].Seq > seq+1:
				later = true
			}
		}
		switch {
		case second != nil:
			stale = mine != nil && second.ModTime.Before(mine.ModTime)
		default:
			stale = later
		}
	}
	if stale {
		fs.RemoveAll(path.Join(dir, ManifestName(seq)))
		return fmt.Errorf("%w: version %d was written after newer ones had been removed as superseded", ErrFenced, seq)
	}
	return nil
}

// writeVersion writes m whole under a temporary name, then moves it to
// its version's name unless that exists (fsys.ErrExist).
func writeVersion(fs fsys.FS, dir string, m *Manifest) error {
	tmp := path.Join(dir, ManifestDir, ".tmp-"+NewSegmentID())
	w, err := fs.Create(tmp)
	if err != nil {
		return err
	}
	_, err = io.Copy(w, strings.NewReader(string(m.Encode())))
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fs.RenameNoReplace(tmp, path.Join(dir, ManifestName(m.Sequence)))
	}
	if err != nil {
		fs.RemoveAll(tmp)
	}
	return err
}
