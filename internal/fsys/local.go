package fsys

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/tributary-io/tributary/internal/atomicfile"
)

// local is a target directory on this machine.
type local struct{ root string }

func openLocal(dir string) (FS, error) {
	if dir == "" {
		return nil, fmt.Errorf("target: empty path")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("target %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("target %s is not writable: %w", abs, err)
	}
	// Writable now, not at the first file, so a bad target is reported
	// before anything is planned.
	probe, err := os.CreateTemp(abs, ".tributary-probe-*")
	if err != nil {
		return nil, fmt.Errorf("target %s is not writable: %w", abs, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	return &local{root: abs}, nil
}

func (l *local) String() string { return "file://" + l.root }
func (l *local) Close() error   { return nil }

func (l *local) path(name string) (string, error) {
	c, err := clean(name)
	if err != nil {
		return "", err
	}
	return filepath.Join(l.root, filepath.FromSlash(c)), nil
}

// syncedFile fsyncs on Close: a file the loader commits must survive a
// power loss as well as a crash.
type syncedFile struct{ *os.File }

func (f syncedFile) Close() error {
	if err := f.File.Sync(); err != nil {
		f.File.Close()
		return err
	}
	return f.File.Close()
}

func (l *local) Create(name string) (io.WriteCloser, error) {
	p, err := l.path(name)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	return syncedFile{f}, nil
}

func (l *local) Open(name string) (io.ReadCloser, error) {
	p, err := l.path(name)
	if err != nil {
		return nil, err
	}
	return os.Open(p)
}

func (l *local) ReadFile(name string) ([]byte, error) {
	p, err := l.path(name)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(p)
}

func (l *local) WriteFileAtomic(name string, data []byte) error {
	p, err := l.path(name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := (syncedFile{tmp}).Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(p))
}

// renamePaths resolves both names of a rename and makes the new one's
// directory.
func (l *local) renamePaths(oldname, newname string) (string, string, error) {
	o, err := l.path(oldname)
	if err != nil {
		return "", "", err
	}
	n, err := l.path(newname)
	if err != nil {
		return "", "", err
	}
	return o, n, os.MkdirAll(filepath.Dir(n), 0o755)
}

func (l *local) Rename(oldname, newname string) error {
	o, n, err := l.renamePaths(oldname, newname)
	if err != nil {
		return err
	}
	if err := os.Rename(o, n); err != nil {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(n))
}

func (l *local) RemoveAll(name string) error {
	p, err := l.path(name)
	if err != nil {
		return err
	}
	return os.RemoveAll(p)
}

func (l *local) ReadDir(name string) ([]fs.FileInfo, error) {
	p, err := l.path(name)
	if err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return nil, err
	}
	out := make([]fs.FileInfo, 0, len(ents))
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			continue // removed since the listing
		}
		out = append(out, fi)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

func (l *local) Stat(name string) (fs.FileInfo, error) {
	p, err := l.path(name)
	if err != nil {
		return nil, err
	}
	return os.Stat(p)
}

// RenameNoReplace links newname to the file and removes the old name:
// link(2) fails with EEXIST when newname exists, atomically, where
// rename(2) would replace it (renameat2's RENAME_NOREPLACE is Linux-only
// and not supported by every file system).
func (l *local) RenameNoReplace(oldname, newname string) error {
	o, n, err := l.renamePaths(oldname, newname)
	if err != nil {
		return err
	}
	if err := os.Link(o, n); err != nil {
		return err
	}
	if err := os.Remove(o); err != nil {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(n))
}
