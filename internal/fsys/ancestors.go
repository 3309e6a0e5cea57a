package fsys

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"github.com/colinmarc/hdfs/v2"
)

// DirStatus is a directory's owner and mode, sticky bit included.
type DirStatus struct {
	Path   string
	Owner  string
	Perm   fs.FileMode
	Sticky bool
}

// Ancestors are the directories above f's root, its parent first, the
// file system's / last: whoever can write one of them (and it is not
// sticky) can rename the root away and put another in its place.
func Ancestors(f FS) ([]DirStatus, error) {
	var dirs []string
	var stat func(string) (DirStatus, error)
	switch t := f.(type) {
	case *hdfsFS:
		for p := t.root; p != "/"; {
			p = path.Dir(p)
			dirs = append(dirs, p)
		}
		stat = func(p string) (DirStatus, error) {
			st, err := t.c.Stat(p)
			if err != nil {
				return DirStatus{}, err
			}
			s, ok := st.Sys().(*hdfs.FileStatus)
			if !ok {
				return DirStatus{}, fmt.Errorf("%s: no owner in its status", p)
			}
			// The raw bits: FileInfo.Mode().Perm() drops the sticky bit.
			raw := s.GetPermission().GetPerm()
			return DirStatus{Path: p, Owner: s.GetOwner(), Perm: fs.FileMode(raw) & fs.ModePerm, Sticky: raw&0o1000 != 0}, nil
		}
	case *local:
		for p := t.root; filepath.Dir(p) != p; {
			p = filepath.Dir(p)
			dirs = append(dirs, p)
		}
		stat = func(p string) (DirStatus, error) {
			st, err := os.Stat(p)
			if err != nil {
				return DirStatus{}, err
			}
			owner, ok := localOwner(st)
			if !ok {
				return DirStatus{}, fmt.Errorf("%s: no owner in its status", p)
			}
			return DirStatus{Path: p, Owner: owner, Perm: st.Mode().Perm(), Sticky: st.Mode()&os.ModeSticky != 0}, nil
		}
	default:
		return nil, fmt.Errorf("ancestors of %s: not supported", f)
	}
	out := make([]DirStatus, 0, len(dirs))
	for _, d := range dirs {
		s, err := stat(d)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
