//go:build !unix

package spool

import "os"

// lockDir does nothing where flock does not exist.
func lockDir(dir string) (*os.File, error) { return nil, nil }
