//go:build unix

package tail

import (
	"fmt"
	"os"
	"syscall"
)

// inode is the file's inode number, half of its identity.
func inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

// lockFile takes an exclusive flock on path, so that two tailers never
// share a positions file. The kernel drops it when the process dies, kill
// -9 included.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s is held by another tailer (%v)", ErrLocked, path, err)
	}
	return f, nil
}
