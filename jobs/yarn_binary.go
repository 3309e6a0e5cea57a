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
// checks) and renames it back when the application has ended. Two
// applications at once find one copy: the second uploads another, which
// it then gives back too, so the cache holds as many copies as
// applications ever ran at once with that binary, and never more. A copy is
// used only if its size and its HDFS checksum (computed by the DataNodes)
// match the local binary's; one that does not is removed. Directories of
// other binaries unused for yarnBinaryKeep are removed.
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
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
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
// upload. giveBack moves it into the cache; call it once the application
// has ended (its containers localize the file until then).
func (e *yarnExecutor) stageBinary(fs fsys.FS, staging, dst, appID string) (reused bool, giveBack func(), err error) {
	file := e.binary()
	info, err := binaryInfo(file)
	if err != nil {
		return false, nil, fmt.Errorf("yarn: the tributary binary: %w", err)
	}
	dir := path.Join("bin", info.hash)
	e.pruneBinaries(fs, info.hash)
	giveBack = func() {
		if err := fs.RenameNoReplace(dst, path.Join(dir, appID)); err != nil {
			e.log.Warn("keeping the tributary binary for the next application", "dir", staging+"/"+dir, "err", err)
		}
	}
	ents, _ := fs.ReadDir(dir)
	for _, ent := range ents {
		name := path.Join(dir, ent.Name())
		if ent.IsDir() || strings.Contains(ent.Name(), ".tmp-") {
			continue
		}
		if err := e.checkCopy(fs, name, ent.Size(), info, file); err != nil {
			e.log.Warn("removing a bad copy of the tributary binary", "file", staging+"/"+name, "err", err)
			fs.RemoveAll(name)
			continue
		}
		// Another application may take the same copy at once: one rename
		// wins, the other finds it gone and tries the next.
		if err := fs.RenameNoReplace(name, dst); err == nil {
			return true, giveBack, nil
		}
	}
	if _, err := e.upload(fs, staging, dst, func() (io.ReadCloser, error) { return os.Open(file) }); err != nil {
		return false, nil, fmt.Errorf("yarn: uploading the tributary binary: %w", err)
	}
	// A copy torn or changed on the way fails here, not in a container.
	if st, err := fs.Stat(dst); err == nil {
		if err := e.checkCopy(fs, dst, st.Size(), info, file); err != nil {
			return false, nil, fmt.Errorf("yarn: the uploaded tributary binary %s/%s: %w", staging, dst, err)
		}
	}
	return false, giveBack, nil
}

// checkCopy compares a copy on HDFS with the local binary: size, then
// HDFS's checksum against the one computed from the local bytes.
func (e *yarnExecutor) checkCopy(fs fsys.FS, name string, size int64, info *localBinary, file string) error {
	if size != info.size {
		return fmt.Errorf("%d bytes, the binary has %d", size, info.size)
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
