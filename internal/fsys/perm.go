package fsys

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"

	"github.com/colinmarc/hdfs/v2"
)

// Owner is who owns a file or directory and its permission bits. A cache
// that later runs what it holds (the yarn executor's binary) trusts an
// entry only if nobody but its user could have put it there.
func Owner(f FS, name string) (owner string, perm fs.FileMode, err error) {
	st, err := f.Stat(name)
	if err != nil {
		return "", 0, err
	}
	switch s := st.Sys().(type) {
	case *hdfs.FileStatus:
		return s.GetOwner(), st.Mode().Perm(), nil
	}
	if owner, ok := localOwner(st); ok {
		return owner, st.Mode().Perm(), nil
	}
	return "", 0, fmt.Errorf("%s: no owner in its status", name)
}

// User is the user the file system acts as: the owner of what it creates.
func User(f FS) (string, error) {
	if h, ok := f.(*hdfsFS); ok {
		return h.c.User(), nil
	}
	u, err := user.Current()
	if err != nil {
		return "", err
	}
	return u.Username, nil
}

// Chmod sets a file's or directory's permission bits.
func Chmod(f FS, name string, perm fs.FileMode) error {
	switch t := f.(type) {
	case *hdfsFS:
		p, err := t.path(name)
		if err != nil {
			return err
		}
		return t.c.Chmod(p, perm)
	case *local:
		p, err := t.path(name)
		if err != nil {
			return err
		}
		return os.Chmod(p, perm)
	}
	return fmt.Errorf("chmod %s: not supported by %s", name, f)
}

// MkdirAll creates a directory and its parents; those it creates get perm
// (less HDFS's umask), existing ones are left as they are.
func MkdirAll(f FS, name string, perm fs.FileMode) error {
	switch t := f.(type) {
	case *hdfsFS:
		p, err := t.path(name)
		if err != nil {
			return err
		}
		return t.c.MkdirAll(p, perm)
	case *local:
		p, err := t.path(name)
		if err != nil {
			return err
		}
		return os.MkdirAll(p, perm)
	}
	return fmt.Errorf("mkdir %s: not supported by %s", name, f)
}

// CreateMode creates a new file with perm from the start (Create's files
// are 0644 until chmodded): for a secret such as a keytab.
func CreateMode(f FS, name string, perm fs.FileMode) (io.WriteCloser, error) {
	switch t := f.(type) {
	case *hdfsFS:
		return t.createMode(name, perm)
	case *local:
		p, err := t.path(name)
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		w, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err != nil {
			return nil, err
		}
		return syncedFile{w}, nil
	}
	return nil, fmt.Errorf("create %s: not supported by %s", name, f)
}
