package jobs

// The tributary binary on HDFS: uploaded once per content, not once per
// application.
//
// DistributedShell localizes a worker container's files only from
// <homedir>/<appname>/<application id>/ (its --localized_files), so the
// binary must be at <staging>/tributary/<application id>/tributary while
// the application runs. Uploading it there for every application (110 MB,
// written through HDFS's replication pipeline) was most of the time from
// plan to first container: 6–23 s of 23–61 s on the test machine.
//
// So the staging dir keeps copies under bin/<sha256 of the binary>/. An
// application takes one by renaming it into its own directory (a NameNode
// operation: no byte moves, the file keeps the modification time YARN
// checks) and renames it back once every unit of the plan has a result:
// DistributedShell's AM deletes its application's directory when it ends,
// and no container needs the binary once the work is done. Two
// applications at once find one copy: the second uploads another, which
// it then gives back too, so the cache holds as many copies as
// applications ever ran at once with that binary, and never more.
//
// The cache runs what it holds in every container, so only the submitting
// user may write it: bin/ and bin/<sha256>/ are 0700 and theirs, a copy is
// 0500 and theirs, and a copy is checked after it is renamed into the
// application's directory (also 0700), where nobody else can swap it:
// owner and mode, size, and its HDFS checksum (computed by the DataNodes)
// against the local binary's. One that fails is removed and the binary
// uploaded. The checksum is CRC32C underneath and can be forged; the
// owner and mode are what keep others out. The sha256 is not recomputed
// from the copy: that reads the 110 MB back on every application (about a
// second quiet, more loaded) and only guards against someone who already
// has the user's HDFS credentials or is the HDFS superuser. Directories
// of other binaries unused for yarnBinaryKeep are removed.
//
// Why not a PUBLIC LocalResource the NodeManagers cache across
// applications: DistributedShell hard-codes APPLICATION visibility for the
// files it localizes; each application's NodeManagers still copy the
// binary from HDFS to local disk once (about a second here).

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/loader"
)

// yarnBinaryKeep is how long the copies of a binary no application used
// are kept.
const yarnBinaryKeep = 7 * 24 * time.Hour

// localBinary is what is known of a local binary's content: its hash and
// HDFS checksums by block size, kept for the process (keyed by path, size
// and modification time: a rebuilt binary is hashed again).
type localBinary struct {
	hash string
	size int64
	mu   sync.Mutex
	sums map[int64][]byte
}

var localBinaries sync.Map // "path\x00size\x00mtime" -> *localBinary

func binaryInfo(file string) (*localBinary, error) {
	st, err := os.Stat(file)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprintf("%s\x00%d\x00%d", file, st.Size(), st.ModTime().UnixNano())
	if b, ok := localBinaries.Load(key); ok {
		return b.(*localBinary), nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return nil, err
	}
	b := &localBinary{hash: hex.EncodeToString(h.Sum(nil)), size: n, sums: map[int64][]byte{}}
	v, _ := localBinaries.LoadOrStore(key, b)
	return v.(*localBinary), nil
}

// checksum is HDFS's checksum of the local file, written with blockSize.
func (b *localBinary) checksum(file string, blockSize int64) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s, ok := b.sums[blockSize]; ok {
		return s, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := fsys.LocalChecksum(f, blockSize)
	if err != nil {
		return nil, err
	}
	b.sums[blockSize] = s
	return s, nil
}

// stageBinary puts the binary at dst (relative to the staging dir) for
// application appID: a cached copy if there is a good one, else a fresh
// upload. giveBack moves it into the cache, once no container of the
// application needs it any more (every worker container is past its
// localization, or every unit has a result), and reports whether the cache
// has it; later calls report the first one's result.
func (e *yarnExecutor) stageBinary(fs fsys.FS, staging, dst, appID string) (reused bool, giveBack func() bool, err error) {
	file := e.binary()
	info, err := binaryInfo(file)
	if err != nil {
		return false, nil, fmt.Errorf("yarn: the tributary binary: %w", err)
	}
	me, err := fsys.User(fs)
	if err != nil {
		return false, nil, fmt.Errorf("yarn: the staging dir's user: %w", err)
	}
	dir := path.Join("bin", info.hash)
	e.pruneBinaries(fs, info.hash)
	cache := e.binDir(fs, staging, me, dir)
	// The application's own directory is the user's alone too: the copy is
	// checked there, after the rename, and nobody else can swap it later.
	appDir := path.Dir(dst)
	if err := fsys.MkdirAll(fs, appDir, 0o700); err != nil {
		return false, nil, fmt.Errorf("yarn: %s/%s: %w", staging, appDir, err)
	}
	if err := fsys.Chmod(fs, appDir, 0o700); err != nil {
		return false, nil, fmt.Errorf("yarn: %s/%s: %w", staging, appDir, err)
	}
	var once sync.Once
	kept := false
	giveBack = func() bool {
		once.Do(func() {
			if !cache {
				fs.RemoveAll(dst)
				return
			}
			err := fs.RenameNoReplace(dst, path.Join(dir, appID))
			switch {
			case fsys.IsNotExist(err):
				// The AM ended first and deleted it: the next application
				// uploads 100 MB again, worth saying.
				e.log.Info("the tributary binary was deleted with the application's directory before it was given back; the next application uploads it", "dir", staging+"/"+dir)
			case err != nil:
				e.log.Warn("keeping the tributary binary for the next application", "dir", staging+"/"+dir, "err", err)
			default:
				kept = true
			}
		})
		return kept
	}
	var ents []iofs.FileInfo
	if cache {
		ents, _ = fs.ReadDir(dir)
	}
	for _, ent := range ents {
		name := path.Join(dir, ent.Name())
		if ent.IsDir() || strings.Contains(ent.Name(), ".tmp-") {
			continue
		}
		// Another application may take the same copy at once: one rename
		// wins, the other finds it gone and tries the next. The copy is
		// checked where it now is: what was at name before the rename does
		// not matter.
		if err := fs.RenameNoReplace(name, dst); err != nil {
			continue
		}
		if err := e.checkCopy(fs, dst, me, info, file); err != nil {
			e.log.Warn("removing a bad copy of the tributary binary", "file", staging+"/"+name, "err", err)
			fs.RemoveAll(dst)
			continue
		}
		return true, giveBack, nil
	}
	if _, err := e.upload(fs, staging, dst, func() (io.ReadCloser, error) { return os.Open(file) }); err != nil {
		return false, nil, fmt.Errorf("yarn: uploading the tributary binary: %w", err)
	}
	if err := fsys.Chmod(fs, dst, yarnBinaryPerm); err != nil {
		return false, nil, fmt.Errorf("yarn: %s/%s: %w", staging, dst, err)
	}
	// A copy torn or changed on the way fails here, not in a container.
	if err := e.checkCopy(fs, dst, me, info, file); err != nil {
		return false, nil, fmt.Errorf("yarn: the uploaded tributary binary %s/%s: %w", staging, dst, err)
	}
	return false, giveBack, nil
}

// yarnBinaryPerm is a copy's mode: read-only, the user's alone. HDFS
// cannot change a file's bytes in place, only append to it, which needs
// write permission; so a copy with this mode and owner, in directories
// only the user can write, holds what the user uploaded.
const yarnBinaryPerm = 0o500

// binDir makes bin/ and dir the user's alone (0700), and reports whether
// the copies in dir can be used and given back to. A directory others
// could write is made 0700 (dir's copies are removed first: they could
// have been put there by anyone); one the user does not own is not used.
func (e *yarnExecutor) binDir(fs fsys.FS, staging, me, dir string) bool {
	for _, d := range []string{"bin", dir} {
		owner, perm, err := fsys.Owner(fs, d)
		if fsys.IsNotExist(err) {
			if err = fsys.MkdirAll(fs, d, 0o700); err == nil {
				owner, perm, err = fsys.Owner(fs, d)
			}
		}
		if err == nil && d == dir && (owner != me || perm != 0o700) {
			e.log.Warn("removing a tributary binary cache dir others could write", "dir", staging+"/"+d, "owner", owner, "perm", perm)
			if err = fs.RemoveAll(d); err == nil {
				if err = fsys.MkdirAll(fs, d, 0o700); err == nil {
					owner, perm, err = fsys.Owner(fs, d)
				}
			}
		}
		if err == nil && owner != me {
			err = fmt.Errorf("owned by %s, not %s", owner, me)
		}
		if err == nil && perm != 0o700 {
			err = fsys.Chmod(fs, d, 0o700)
		}
		if err != nil {
			e.log.Warn("not using the tributary binary cache: uploading for this application only", "dir", staging+"/"+d, "err", err)
			return false
		}
	}
	return true
}

// checkCopy checks a copy on HDFS against the local binary: the user owns
// it with yarnBinaryPerm, then its size, then HDFS's checksum against the
// one computed from the local bytes. The checksum (CRC32C underneath) finds
// a torn or corrupted copy, not a forged one: the owner and mode, with the
// 0700 directories, are what keep others' bytes out.
func (e *yarnExecutor) checkCopy(fs fsys.FS, name, me string, info *localBinary, file string) error {
	owner, perm, err := fsys.Owner(fs, name)
	if err != nil {
		return err
	}
	if owner != me || perm != yarnBinaryPerm {
		return fmt.Errorf("owner %s, mode %v: want %s, %v", owner, perm, me, iofs.FileMode(yarnBinaryPerm))
	}
	st, err := fs.Stat(name)
	if err != nil {
		return err
	}
	if st.Size() != info.size {
		return fmt.Errorf("%d bytes, the binary has %d", st.Size(), info.size)
	}
	sum, blockSize, err := fsys.Checksum(fs, name)
	if errors.Is(err, fsys.ErrNoChecksum) {
		return nil
	}
	if err != nil {
		return err
	}
	want, err := info.checksum(file, blockSize)
	if err != nil {
		return err
	}
	if !bytes.Equal(sum, want) {
		return fmt.Errorf("HDFS checksum %x, the binary's is %x", sum, want)
	}
	return nil
}

// pruneBinaries removes the copies of other binaries that no application
// took or gave back for yarnBinaryKeep (a rename into a directory updates
// its modification time).
func (e *yarnExecutor) pruneBinaries(fs fsys.FS, keep string) {
	ents, err := fs.ReadDir("bin")
	if err != nil {
		return
	}
	for _, ent := range ents {
		if ent.IsDir() && ent.Name() != keep && time.Since(ent.ModTime()) > yarnBinaryKeep {
			if err := fs.RemoveAll(path.Join("bin", ent.Name())); err == nil {
				e.log.Info("removed an old tributary binary from the YARN staging dir", "hash", ent.Name())
			}
		}
	}
}

// doneUnits watches a plan's unit results while its application runs.
type doneUnits struct {
	l      *loader.Loader
	p      *loader.Plan
	done   []bool
	left   int
	last   time.Time
	closer func()
}

// unitsDone opens the target to watch the plan's results; if it cannot,
// all never says yes (the binary is then not given back early).
func (e *yarnExecutor) unitsDone(p *loader.Plan) *doneUnits {
	u := &doneUnits{p: p, done: make([]bool, len(p.Units)), left: len(p.Units), closer: func() {}}
	fs, err := fsys.Open(e.target, e.opts)
	if err != nil {
		e.log.Warn("watching the units' results", "target", e.target, "err", err)
		u.left = -1
		return u
	}
	u.l, u.closer = &loader.Loader{FS: fs}, func() { fs.Close() }
	return u
}

// all reports whether every unit has a result, asking the target at most
// once a second and only about the units still open.
func (u *doneUnits) all() bool {
	if u.left == 0 || u.left < 0 {
		return u.left == 0
	}
	if time.Since(u.last) < time.Second {
		return false
	}
	u.last = time.Now()
	for i := range u.p.Units {
		if !u.done[i] {
			if _, ok := u.l.UnitDone(u.p, i); !ok {
				return false
			}
			u.done[i] = true
			u.left--
		}
	}
	return u.left == 0
}

func (u *doneUnits) close() { u.closer() }
