package console

import (
	"errors"
	"io"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"syscall"
)

// A lake is often writable by many (loader principals, a shared NFS or
// HDFS tree), so a name that passes the _errors/<topic>/<file> check may
// still be a symlink to the console's own client properties, or a FIFO
// whose open never returns. The console opens only regular files, and on
// a file:// lake through an os.Root, so nothing outside the lake is
// reached (review 3).

var errNotRegular = errors.New("not a regular file: the console opens only the loader's own files")

// openRoot is the os.Root of a file:// lake, nil for other schemes.
func openRoot(uri string) (*os.Root, error) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return nil, nil
	}
	return os.OpenRoot(u.Path)
}

// openRegular opens a lake file for reading when it is a regular file.
func (l *lake) openRegular(name string) (io.ReadCloser, fs.FileInfo, error) {
	if l.root == nil {
		st, err := l.fs.Stat(name)
		if err != nil {
			return nil, nil, err
		}
		if !st.Mode().IsRegular() {
			return nil, nil, errNotRegular
		}
		f, err := l.fs.Open(name)
		return f, st, err
	}
	name = strings.TrimPrefix(name, "/")
	if st, err := l.root.Lstat(name); err != nil {
		return nil, nil, err
	} else if !st.Mode().IsRegular() {
		return nil, nil, errNotRegular
	}
	// O_NONBLOCK: a FIFO swapped in after the Lstat must not hang the
	// open; the Stat of what was opened decides.
	f, err := l.root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = errNotRegular
		}
		return nil, nil, err
	}
	return f, st, nil
}
