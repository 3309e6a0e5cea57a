//go:build !unix

package fsys

import "io/fs"

// localOwner: no owner to compare where files have no uid.
func localOwner(fs.FileInfo) (string, bool) { return "", false }
