//go:build !unix

package tail

import "os"

// inode is 0 where there are no inodes: the fingerprint alone identifies a
// file there.
func inode(os.FileInfo) uint64 { return 0 }

// lockFile only creates the lock file: without flock, keeping two tailers
// apart is the operator's job.
func lockFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
}
