//go:build unix

package fsys

import (
	"io/fs"
	"os/user"
	"strconv"
	"syscall"
)

// localOwner is a local file's owner's name (its uid if it has none).
func localOwner(st fs.FileInfo) (string, bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	uid := strconv.FormatUint(uint64(s.Uid), 10)
	if u, err := user.LookupId(uid); err == nil {
		uid = u.Username
	}
	return uid, true
}
