package jobs

import (
	"fmt"
	iofs "io/fs"

	"github.com/tributary-io/tributary/internal/fsys"
)

// checkStagingRoot makes sure only the submitting user (and the HDFS
// superuser) can change what the containers run. Everything the executor
// writes under the staging dir is the user's and 0700 (yarn_binary.go),
// but YARN checks a resource only by its size and modification time, so
// whoever can rename an entry on the path to it can swap the binary, the
// AM's jar or (Kerberized) reach the keytab's directory:
//
//   - the root must be the user's own and not group- or other-writable
//     (its owner can chmod it at will, after any check);
//   - every directory above it must belong to the user or to the owner of
//     / (the superuser), and be not group- or other-writable, or sticky
//     (HDFS's /tmp is 1777: others cannot rename what they do not own);
//   - lib/ (the AM's jar) and tributary/ (the applications' dirs), when
//     they exist, must be the user's and not group- or other-writable:
//     they may have been planted while the root was open.
//
// A missing root was created 0755 by fsys.Open and passes. Nothing is
// fixed silently: a shared dir may be shared on purpose (a lake's root),
// and the fix is a fresh staging dir of the user's own.
func checkStagingRoot(fs fsys.FS, staging string) error {
	me, err := fsys.User(fs)
	if err != nil {
		return fmt.Errorf("yarn: the staging dir %s: the user: %w", staging, err)
	}
	fresh := "give a fresh staging dir only the submitting user can write (yarn.staging, --yarn-staging)"
	owner, perm, err := fsys.Owner(fs, ".")
	if err != nil {
		return fmt.Errorf("yarn: the staging dir %s: %w", staging, err)
	}
	if owner != me {
		return fmt.Errorf("yarn: the staging dir %s is owned by %s, not by the submitting user %s: its owner could replace the binary (or the keytab) the containers use; %s",
			staging, owner, me, fresh)
	}
	if perm&0o022 != 0 {
		return fmt.Errorf("yarn: the staging dir %s has mode %v (%#o): it is group- or other-writable, so others could replace the binary (or the keytab) the containers use; %s",
			staging, iofs.ModeDir|perm, perm, fresh)
	}
	up, err := fsys.Ancestors(fs)
	if err != nil {
		return fmt.Errorf("yarn: the staging dir %s's parents: %w", staging, err)
	}
	super := ""
	if len(up) > 0 {
		super = up[len(up)-1].Owner
	}
	for _, d := range up {
		if d.Owner != me && d.Owner != super {
			return fmt.Errorf("yarn: the staging dir %s is under %s, owned by %s: its owner could rename the staging dir away and put another in its place; %s",
				staging, d.Path, d.Owner, fresh)
		}
		if d.Perm&0o022 != 0 && !d.Sticky {
			return fmt.Errorf("yarn: the staging dir %s is under %s, mode %v (%#o): group- or other-writable and not sticky, so others could rename the staging dir away and put another in its place; %s",
				staging, d.Path, iofs.ModeDir|d.Perm, d.Perm, fresh)
		}
	}
	for _, sub := range []string{"lib", yarnAppName} {
		owner, perm, err := fsys.Owner(fs, sub)
		if fsys.IsNotExist(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("yarn: the staging dir %s: %s: %w", staging, sub, err)
		}
		if owner != me || perm&0o022 != 0 {
			return fmt.Errorf("yarn: %s/%s is owned by %s with mode %v (%#o): only the submitting user %s may write what the containers run; %s",
				staging, sub, owner, iofs.ModeDir|perm, perm, me, fresh)
		}
	}
	return nil
}
