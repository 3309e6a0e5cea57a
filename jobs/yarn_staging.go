package jobs

import (
	"fmt"
	iofs "io/fs"

	"github.com/tributary-io/tributary/internal/fsys"
)

// checkStagingRoot makes sure only the submitting user (and the HDFS
// superuser) can change what the containers run: everything under the
// staging dir is the user's and 0700 (yarn_binary.go), but a staging
// root that the group or others can write lets them rename its
// tributary/ or bin/ away while an application runs and put their own in
// its place (YARN checks only a resource's size and modification time),
// and, on a Kerberized cluster, reach the keytab's directory the same way.
// A missing root was created 0755 by fsys.Open; one that is group- or
// other-writable is refused, never silently fixed: it may be shared on
// purpose (a lake's root), and the fix is a staging dir of the user's own.
func checkStagingRoot(fs fsys.FS, staging string) error {
	_, perm, err := fsys.Owner(fs, ".")
	if err != nil {
		return fmt.Errorf("yarn: the staging dir %s: %w", staging, err)
	}
	if perm&0o022 != 0 {
		return fmt.Errorf("yarn: the staging dir %s has mode %v (%#o): it is group- or other-writable, so others could replace the binary (or the keytab) the containers use; "+
			"run `hdfs dfs -chmod go-w %s` or give a staging dir only the submitting user can write (yarn.staging, --yarn-staging)",
			staging, iofs.ModeDir|perm, perm, staging)
	}
	return nil
}
