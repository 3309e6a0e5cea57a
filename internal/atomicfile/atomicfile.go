// Package atomicfile replaces small files (checkpoints, positions,
// snapshots) so that a crash leaves the old content or the new one, never a
// torn file: the bytes go to <path>.tmp, are fsynced, the file is renamed
// over <path>, and the directory is fsynced so the rename itself survives.
// One writer per path at a time: the temporary name is fixed, so a stale one
// left by a crash is simply overwritten by the next write.
package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// WriteFile replaces path with data durably.
func WriteFile(path string, data []byte) error { return write(path, data, true) }

// WriteFileNoSync replaces path with data atomically but without fsync: a
// crash may lose the new content (the old one stays), never tear it.
func WriteFileNoSync(path string, data []byte) error { return write(path, data, false) }

func write(path string, data []byte, sync bool) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err = f.Write(data); err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if sync {
		return SyncDir(filepath.Dir(path))
	}
	return nil
}

// SyncDir makes the creations, renames and removals in dir durable. A file
// system that cannot fsync a directory (EINVAL) orders them itself.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, fs.ErrInvalid) {
		return nil
	}
	return err
}
